package v1alpha1

import (
	"strings"
	"testing"
)

// FuzzParsePoolKey: a key parses exactly when it is PoolKey of a non-empty
// namespace and a non-empty name, neither holding "/", and then prints
// back to itself.
func FuzzParsePoolKey(f *testing.F) {
	for _, s := range []string{"default/pool", "a/b/c", "/pool", "default/", "pool", "", "/"} {
		f.Add(s, "default", "pool")
	}
	f.Fuzz(func(t *testing.T, s, ns, name string) {
		nn, ok := ParsePoolKey(s)
		if ok {
			if nn.Namespace == "" || nn.Name == "" || strings.Contains(nn.Namespace+nn.Name, "/") || PoolKey(nn.Namespace, nn.Name) != s {
				t.Fatalf("ParsePoolKey(%q) = %v: want a namespace without / and a name that spell the key", s, nn)
			}
		} else if strings.Count(s, "/") == 1 && !strings.HasPrefix(s, "/") && !strings.HasSuffix(s, "/") {
			t.Fatalf("ParsePoolKey(%q) failed, but it has a namespace and a name", s)
		}
		got, ok := ParsePoolKey(PoolKey(ns, name))
		valid := ns != "" && name != "" && !strings.Contains(ns+name, "/")
		if ok != valid || (ok && (got.Namespace != ns || got.Name != name)) {
			t.Fatalf("ParsePoolKey(PoolKey(%q, %q)) = %v, %v; want valid=%v", ns, name, got, ok, valid)
		}
		if r := (PoolRef{Name: name}); valid && r.Key(ns) != PoolKey(ns, name) {
			t.Fatalf("PoolRef{%q}.Key(%q) = %q", name, ns, r.Key(ns))
		}
	})
}

// FuzzParsePolicySource: a source names a policy exactly when it is the
// PolicySource of a non-empty name, and then that name.
func FuzzParsePolicySource(f *testing.F) {
	for _, s := range []string{"policy/web", "policy/", "policy", "", "annotation"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := ParsePolicySource(s)
		if ok != (p != "" && PolicySource(p) == s) {
			t.Fatalf("ParsePolicySource(%q) = %q, %v", s, p, ok)
		}
		if got, ok := ParsePolicySource(PolicySource(s)); ok != (s != "") || (ok && got != s) {
			t.Fatalf("ParsePolicySource(PolicySource(%q)) = %q, %v", s, got, ok)
		}
	})
}
