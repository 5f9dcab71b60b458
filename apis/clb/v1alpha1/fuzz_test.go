package v1alpha1

import (
	"strings"
	"testing"
)

// FuzzParseListenerKey: a key that parses names a real port and prints back
// to a string that parses to the same key; any protocol without "/" and any
// port 1-65535 round-trip.
func FuzzParseListenerKey(f *testing.F) {
	for _, s := range []string{"TCP/30000", "UDP/1", "TCP_SSL/65535", "QUIC/0", "TCP/65536", "/80", "TCP", "TCP/", "TCP/-1", "TCP/+80", "TCP/080", "TCP/8/0", "a/b/c", ""} {
		f.Add(s, "TCP", int32(80))
	}
	f.Fuzz(func(t *testing.T, s, proto string, port int32) {
		k, ok := ParseListenerKey(s)
		if ok {
			if k.Protocol == "" || strings.Contains(k.Protocol, "/") || k.Port < 1 || k.Port > 65535 {
				t.Fatalf("ParseListenerKey(%q) = %+v: want a protocol without / and a port 1-65535", s, k)
			}
			if k2, ok2 := ParseListenerKey(k.String()); !ok2 || k2 != k {
				t.Fatalf("ParseListenerKey(%q) = %+v, whose String %q parses to %+v, %v", s, k, k.String(), k2, ok2)
			}
		} else if k != (ListenerKey{}) {
			t.Fatalf("ParseListenerKey(%q) failed but returned %+v", s, k)
		}
		want := ListenerKey{Protocol: proto, Port: port}
		got, ok := ParseListenerKey(want.String())
		valid := proto != "" && !strings.Contains(proto, "/") && port >= 1 && port <= 65535
		if ok != valid || (ok && got != want) {
			t.Fatalf("ParseListenerKey(%q) = %+v, %v; want %+v, %v", want.String(), got, ok, want, valid)
		}
	})
}

// FuzzParseLoadBalancerRef: the id never holds ":", and region and id put
// back together are the input.
func FuzzParseLoadBalancerRef(f *testing.F) {
	for _, s := range []string{"lb-abc", "ap-shanghai:lb-abc", ":lb-abc", "ap-shanghai:", "a:b:lb-1", "", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := ParseLoadBalancerRef(s)
		if strings.Contains(r.ID, ":") {
			t.Fatalf("ParseLoadBalancerRef(%q) = %+v: the id holds ':'", s, r)
		}
		back := r.ID
		if strings.Contains(s, ":") {
			back = r.Region + ":" + r.ID
		}
		if back != s {
			t.Fatalf("ParseLoadBalancerRef(%q) = %+v, which spells %q", s, r, back)
		}
		if ids := LoadBalancerIDsOf([]string{s}); len(ids) != 1 || ids[0] != r.ID {
			t.Fatalf("LoadBalancerIDsOf([%q]) = %q, want [%q]", s, ids, r.ID)
		}
	})
}
