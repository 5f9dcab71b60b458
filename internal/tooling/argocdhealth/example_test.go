package argocdhealth

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestApplicationExample reads examples/argocd: each file is an Argo CD
// Application (argoproj.io/v1alpha1) with the fields Argo CD requires: a
// project, a source with repoURL, path and revision, and a destination.
// No Argo CD runs here, so the object is checked for its shape only.
func TestApplicationExample(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(root(t), "examples", "argocd", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no examples in examples/argocd")
	}
	for _, f := range files {
		u := readObject(t, f)
		if u.GetAPIVersion() != "argoproj.io/v1alpha1" || u.GetKind() != "Application" {
			t.Errorf("%s: %s %s, want an argoproj.io/v1alpha1 Application", f, u.GetAPIVersion(), u.GetKind())
		}
		if u.GetName() == "" || u.GetNamespace() == "" {
			t.Errorf("%s: needs a name and the namespace Argo CD runs in", f)
		}
		for _, path := range [][]string{
			{"spec", "project"},
			{"spec", "source", "repoURL"},
			{"spec", "source", "path"},
			{"spec", "source", "targetRevision"},
		} {
			if v, _, _ := unstructured.NestedString(u.Object, path...); v == "" {
				t.Errorf("%s: %v is empty", f, path)
			}
		}
		server, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "server")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "name")
		if (server == "") == (name == "") {
			t.Errorf("%s: the destination needs exactly one of server and name", f)
		}
	}
}
