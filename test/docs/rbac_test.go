package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestInstallRBACIsWhatShips: the section "The permissions the provider
// gets" of docs/install.md has, for each feature, a heading linking its
// file examples/provider/rbac/<feature>.yaml and a table whose rows are
// that file's ClusterRole's rules, in order, with the same API groups,
// resources and verbs; and no table for anything else.
func TestInstallRBACIsWhatShips(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := sectionOf(t, string(b), "### The permissions the provider gets")
	tables := featureTables(section)
	for _, f := range testenv.Features() {
		rows, ok := tables[string(f)]
		if !ok {
			t.Errorf("docs/install.md has no table for rbac/%s.yaml", f)
			continue
		}
		delete(tables, string(f))
		shipped := shippedRules(t, f)
		if !slices.Equal(rows, shipped) {
			t.Errorf("docs/install.md's rules of rbac/%s.yaml:\n  %s\nthe file's:\n  %s", f,
				strings.Join(rows, "\n  "), strings.Join(shipped, "\n  "))
		}
	}
	for name := range tables {
		t.Errorf("docs/install.md has a table for rbac/%s.yaml, which is not a feature's file", name)
	}
	files, err := filepath.Glob(filepath.Join(root, "examples", "provider", "rbac", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".yaml"); !slices.Contains(testenv.Features(), testenv.Feature(name)) {
			t.Errorf("examples/provider/rbac holds %s, which is no feature's file (testenv.Features)", filepath.Base(f))
		}
	}
}

// sectionOf is the text from heading to the next heading of its level.
func sectionOf(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/install.md has no %q", heading)
	}
	rest := doc[i+len(heading)+2:]
	level := heading[:strings.Index(heading, " ")+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

var (
	featureHeading = regexp.MustCompile(`^#### .*\(\.\./examples/provider/rbac/([a-z-]+)\.yaml\)`)
	ruleRow        = regexp.MustCompile(`^\| *([^|]+?) *\| *([^|]+?) *\| *([^|]+?) *\|`)
)

// featureTables maps each feature heading's file name to the rules of the
// first table under it, one "groups | resources | verbs" string a row.
func featureTables(section string) map[string][]string {
	out := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(section, "\n") {
		if m := featureHeading.FindStringSubmatch(line); m != nil {
			cur = m[1]
			out[cur] = nil
			continue
		}
		if strings.HasPrefix(line, "#") {
			cur = ""
		}
		m := ruleRow.FindStringSubmatch(line)
		if cur == "" || m == nil || m[1] == "API group" || strings.HasPrefix(m[1], "-") {
			continue
		}
		out[cur] = append(out[cur], rule(words(m[1]), words(m[2]), words(m[3])))
	}
	return out
}

// words splits a cell such as "`pods`, `nodes`" or "get, list"; the core
// API group is written `""`.
func words(cell string) []string {
	var out []string
	for _, w := range strings.Split(cell, ",") {
		w = strings.Trim(strings.TrimSpace(w), "`")
		if w == `""` {
			w = ""
		}
		out = append(out, w)
	}
	return out
}

func rule(groups, resources, verbs []string) string {
	q := func(s []string) string {
		out := make([]string, len(s))
		for i, w := range s {
			out[i] = `"` + w + `"`
		}
		return strings.Join(out, ",")
	}
	return q(groups) + " | " + q(resources) + " | " + q(verbs)
}

// shippedRules are the rules of the one ClusterRole of f's file.
func shippedRules(t *testing.T, f testenv.Feature) []string {
	t.Helper()
	objs, err := testenv.ReadYAML(testenv.RBACFile(f))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	roles := 0
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		roles++
		cr := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cr); err != nil {
			t.Fatal(err)
		}
		for _, r := range cr.Rules {
			if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
				t.Errorf("rbac/%s.yaml: rule %v has resourceNames or nonResourceURLs, which the docs' table cannot say", f, r)
			}
			out = append(out, rule(r.APIGroups, r.Resources, r.Verbs))
		}
	}
	if roles != 1 {
		t.Errorf("rbac/%s.yaml has %d ClusterRoles, want 1", f, roles)
	}
	return out
}
