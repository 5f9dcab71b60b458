package argocd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestServeRepo clones the served repository with the git CLI, as the
// repo-server does, after each of two commits: the second commit's tree
// replaces the first's.
func TestServeRepo(t *testing.T) {
	ctx := context.Background()
	r, err := ServeRepo(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, files := range []map[string][]byte{
		{"gitops/a.yaml": []byte("a: 1\n"), "gitops/b.yaml": []byte("b: 1\n")},
		{"gitops/a.yaml": []byte("a: 2\n")},
	} {
		rev, err := r.Commit(ctx, "change", files)
		if err != nil {
			t.Fatal(err)
		}
		clone := filepath.Join(t.TempDir(), "clone")
		if out, err := exec.Command("git", "clone", "--quiet", r.URL, clone).CombinedOutput(); err != nil {
			t.Fatalf("clone %s: %v\n%s", r.URL, err, out)
		}
		head, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
		if err != nil || strings.TrimSpace(string(head)) != rev {
			t.Errorf("commit %d: clone at %q (%v), want %s", i, head, err, rev)
		}
		got, _ := filepath.Glob(filepath.Join(clone, "gitops", "*"))
		if len(got) != len(files) {
			t.Errorf("commit %d: clone holds %v, want %d files", i, got, len(files))
		}
		for p, want := range files {
			if b, err := os.ReadFile(filepath.Join(clone, p)); err != nil || string(b) != string(want) {
				t.Errorf("commit %d: %s is %q (%v), want %q", i, p, b, err, want)
			}
		}
	}
}

// TestCRDFiles reads Argo CD's CRDs from the module: the Application and
// the AppProject.
func TestCRDFiles(t *testing.T) {
	files, err := CRDFiles(context.Background())
	if err != nil {
		t.Skipf("argo-cd module not available: %v", err)
	}
	var kinds []string
	for _, f := range files {
		objs, err := testenv.ReadYAML(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			k, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			kinds = append(kinds, o.GetKind()+"/"+k)
		}
	}
	if strings.Join(kinds, ",") != "CustomResourceDefinition/Application,CustomResourceDefinition/AppProject" {
		t.Errorf("CRDs %v", kinds)
	}
}

// TestTree prints the Application first, then a line per resource, a
// resource Argo CD has no health for as "-".
func TestTree(t *testing.T) {
	s := AppStatus{Sync: "Synced", Revision: "0123456789abcdef", Health: "Degraded", Operation: "Succeeded", Resources: []ResourceStatus{
		{Kind: "PortPool", Namespace: "games", Name: "broken", Sync: "Synced", Health: "Degraded", HealthMessage: "no load balancer"},
		{Kind: "Namespace", Name: "games", Sync: "Synced"},
	}}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s.Tree()), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"KIND NAME SYNC HEALTH MESSAGE",
		"Application argocd/platform Synced (01234567) Degraded operation Succeeded",
		"PortPool games/broken Synced Degraded no load balancer",
		"Namespace games Synced -",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
