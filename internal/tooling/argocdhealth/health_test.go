package argocdhealth

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the argocd-cm snippet in docs/argocd.md and docs/argocd/argocd-cm.yaml")

// root is the repository root: go test runs in the package's folder.
func root(t *testing.T) string {
	t.Helper()
	return filepath.Join("..", "..", "..")
}

func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	// Decoded as Argo CD's cluster cache decodes objects: integers int64,
	// other numbers float64.
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return u
}

// TestScriptsOnRecordedObjects assesses every object under testdata with
// its kind's script. testdata/<group>_<Kind>/<Status>-<moment>.yaml holds
// the object and, first in its name, the status Argo CD must show. The
// provider's kinds were captured from live objects by
// test/argocdhealth (see testdata/README.md); the composites are built
// from the conditions Crossplane core sets.
func TestScriptsOnRecordedObjects(t *testing.T) {
	dir := filepath.Join(root(t), "internal", "tooling", "argocdhealth", "testdata")
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{} // kind key → statuses with a case
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		want, _, ok := strings.Cut(name, "-")
		if !ok || !slices.Contains(validStatuses(), want) {
			t.Errorf("%s: the name must start with the expected status and a dash", f)
			continue
		}
		u := readObject(t, f)
		gvk := u.GroupVersionKind()
		k, ok := Lookup(gvk.Group, gvk.Kind)
		if !ok {
			t.Errorf("%s: no script for %s", f, gvk)
			continue
		}
		if got := filepath.Base(filepath.Dir(f)); got != k.Group+"_"+k.Kind {
			t.Errorf("%s: a %s in folder %s", f, k.Key(), got)
		}
		script, err := os.ReadFile(filepath.Join(root(t), ScriptDir, k.Script))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Assess(string(script), u.Object)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if got.Status != want {
			t.Errorf("%s: %s (%q), want %s", f, got.Status, got.Message, want)
		}
		if got.Message == "" {
			t.Errorf("%s: %s with no message", f, got.Status)
		}
		seen[k.Key()] = append(seen[k.Key()], want)
	}
	for _, k := range Kinds() {
		if !slices.Contains(seen[k.Key()], Healthy) {
			t.Errorf("%s has no Healthy case under testdata", k.Key())
		}
	}
	// Each failure a user meets has a case: kinds that reach the cloud or
	// bind Pods can be Degraded and Progressing.
	for _, key := range []string{
		"tencentcloud.m.crossplane.io/ProviderConfig", "tencentcloud.crossplane.io/ClusterProviderConfig",
		"clb.tencentcloud.m.crossplane.io/LoadBalancer", "clb.tencentcloud.m.crossplane.io/Listener",
		"clb.tencentcloud.m.crossplane.io/PortPool", "network.tencentcloud.m.crossplane.io/PodAddress",
		"network.tencentcloud.m.crossplane.io/PodAddressPolicy", GroupComposite + "/PodPublicAddress",
		"network.tencentcloud.m.crossplane.io/NetPool", "network.tencentcloud.m.crossplane.io/WorkloadCluster",
	} {
		if !slices.Contains(seen[key], Degraded) {
			t.Errorf("%s has no Degraded case under testdata", key)
		}
	}
	for _, key := range []string{
		"clb.tencentcloud.m.crossplane.io/LoadBalancer", "clb.tencentcloud.m.crossplane.io/PortPool",
		"network.tencentcloud.m.crossplane.io/PodAddress", "network.tencentcloud.m.crossplane.io/PodAddressPolicy",
		GroupComposite + "/PodPublicAddress", "network.tencentcloud.m.crossplane.io/NetPool",
		"network.tencentcloud.m.crossplane.io/NetIPClaim", "network.tencentcloud.m.crossplane.io/WorkloadCluster",
	} {
		if !slices.Contains(seen[key], Progressing) {
			t.Errorf("%s has no Progressing case under testdata", key)
		}
	}
}

// TestAssessLikeArgoCD checks the evaluator against what Argo CD does with
// scripts: a status it does not know is refused, a script must return a
// table, the string library is not there, and a script that never ends is
// stopped.
func TestAssessLikeArgoCD(t *testing.T) {
	obj := map[string]any{"status": map[string]any{"n": int64(3), "ok": true}}
	for name, tc := range map[string]struct {
		script  string
		want    Status
		wantErr string
	}{
		"reads obj":            {script: `return {status = "Healthy", message = "n=" .. obj.status.n}`, want: Status{Healthy, "n=3"}},
		"unknown status":       {script: `return {status = "Fine"}`, wantErr: "not one of"},
		"no table":             {script: `return "Healthy"`, wantErr: "not a table"},
		"no string library":    {script: `return {status = string.upper("healthy")}`, wantErr: "string"},
		"a loop is stopped":    {script: `while true do end`, wantErr: "context deadline exceeded"},
		"message not a string": {script: `return {status = "Healthy", message = 3}`, wantErr: "not a string"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Assess(tc.script, obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestEveryKindHasAScript reads the CRDs of package/crds and the XRDs of
// package/configuration: each kind (and claim kind) has a script or is
// listed in WithoutHealth with the reason.
func TestEveryKindHasAScript(t *testing.T) {
	var kinds []string
	crds, _ := filepath.Glob(filepath.Join(root(t), "package", "crds", "*.yaml"))
	if len(crds) == 0 {
		t.Fatal("no CRDs in package/crds")
	}
	for _, f := range crds {
		u := readObject(t, f)
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		kinds = append(kinds, group+"/"+kind)
	}
	xrds, _ := filepath.Glob(filepath.Join(root(t), "package", "configuration", "*.yaml"))
	for _, f := range xrds {
		u := readObject(t, f)
		if u.GetKind() != "CompositeResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		for _, path := range [][]string{{"spec", "names", "kind"}, {"spec", "claimNames", "kind"}} {
			if kind, ok, _ := unstructured.NestedString(u.Object, path...); ok {
				kinds = append(kinds, group+"/"+kind)
			}
		}
	}
	for _, key := range kinds {
		group, kind, _ := strings.Cut(key, "/")
		if _, ok := Lookup(group, kind); !ok && WithoutHealth()[key] == "" {
			t.Errorf("%s has no health script", key)
		}
	}
}

const (
	beginSnippet = "<!-- argocd-cm: generated from docs/argocd/health by internal/tooling/argocdhealth; go test ./internal/tooling/argocdhealth -run TestSnippet -update -->\n```yaml\n"
	endSnippet   = "```\n<!-- argocd-cm end -->"
)

// TestSnippet checks that the argocd-cm snippet in docs/argocd.md and
// docs/argocd/argocd-cm.yaml is made of the scripts as they are.
func TestSnippet(t *testing.T) {
	want, err := Snippet(root(t))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root(t), "docs", "argocd", "argocd-cm.yaml")
	doc := filepath.Join(root(t), "docs", "argocd.md")
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok1 := strings.Cut(string(md), beginSnippet)
	inDoc, tail, ok2 := strings.Cut(rest, endSnippet)
	if !ok1 || !ok2 {
		t.Fatalf("docs/argocd.md has no snippet between %q and %q", beginSnippet, endSnippet)
	}
	if *update {
		if err := os.WriteFile(doc, []byte(head+beginSnippet+want+endSnippet+tail), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(want), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	if inDoc != want {
		t.Error("the snippet in docs/argocd.md is not made of the scripts as they are; run go test ./internal/tooling/argocdhealth -run TestSnippet -update")
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != want {
		t.Errorf("docs/argocd/argocd-cm.yaml is not made of the scripts as they are (%v); run go test ./internal/tooling/argocdhealth -run TestSnippet -update", err)
	}
	// And Argo CD reads it: a ConfigMap whose every key is a script.
	cm := map[string]any{}
	if err := yaml.Unmarshal([]byte(want), &cm); err != nil {
		t.Fatal(err)
	}
	data, _ := cm["data"].(map[string]any)
	if len(data) != len(Kinds()) {
		t.Errorf("%d keys in data, want one per kind (%d)", len(data), len(Kinds()))
	}
	for _, k := range Kinds() {
		script, _ := data["resource.customizations.health."+k.Group+"_"+k.Kind].(string)
		b, _ := os.ReadFile(filepath.Join(root(t), ScriptDir, k.Script))
		if script != string(b) {
			t.Errorf("the script of %s in the snippet differs from %s", k.Key(), k.Script)
		}
	}
}
