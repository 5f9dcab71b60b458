package emulator

import (
	"encoding/json"
	"os"
	"testing"
)

// FuzzCAMPolicy parses policy documents and evaluates calls against the
// accepted ones: no panic, and a policy written back out as JSON parses
// again and decides every call the same way.
func FuzzCAMPolicy(f *testing.F) {
	committed, err := os.ReadFile("../../examples/providerconfig/cam-policy.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(committed), "CreateListener", `{"LoadBalancerId":"lb-1"}`)
	f.Add(`{"version":"2.0","statement":[{"effect":"deny","action":"clb:*","resource":"qcs::clb::uin/*:clb/lb-*"},`+
		`{"effect":"allow","action":"*","resource":"*"}]}`, "DeleteLoadBalancer", `{"LoadBalancerIds":["lb-1",null,""]}`)
	f.Add(`{"version":"2.0","statement":{"effect":"allow"}}`, "", `[`)
	f.Add(`{"version":"2.0","statement":[{"effect":"Allow","action":"name/clb:Describe**","resource":["qcs::clb:ap-guangzhou:uin/100000000001:clb/lb-a*b"]}]}`,
		"DescribeListeners", `{"LoadBalancerId":"lb-ab"}`)
	f.Fuzz(func(t *testing.T, doc, action, body string) {
		p, err := ParseCAMPolicy([]byte(doc))
		if err != nil {
			return
		}
		denied := p.deniedResource("ap-guangzhou", "clb", action, []byte(body))
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseCAMPolicy(out)
		if err != nil {
			t.Fatalf("%s parsed, but not as written back: %s: %v", doc, out, err)
		}
		if d := again.deniedResource("ap-guangzhou", "clb", action, []byte(body)); d != denied {
			t.Fatalf("%s decides %s %s as %q, written back as %q", doc, action, body, denied, d)
		}
	})
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"Describe*", "DescribeQuota", true},
		{"Describe*", "Describ", false},
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"lb-a*b", "lb-ab", true},
		{"lb-a*b", "lb-axxb", true},
		{"lb-a*b", "lb-axxbc", false},
		{"uin/*", "uin/100/x", true},
		{"*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"a**b", "ab", true},
	} {
		if got := glob(c.pattern, c.s); got != c.want {
			t.Errorf("glob(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}
