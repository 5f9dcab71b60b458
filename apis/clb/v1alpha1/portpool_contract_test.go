package v1alpha1

import "testing"

func TestListenerKeyRoundTrip(t *testing.T) {
	k := ListenerKey{Protocol: "TCP_UDP", Port: 7000}
	got, ok := ParseListenerKey(k.String())
	if !ok || got != k {
		t.Fatalf("ParseListenerKey(%q) = %v, %v; want %v", k.String(), got, ok, k)
	}
	for _, bad := range []string{"", "TCP", "/80", "TCP/", "TCP/0", "TCP/65536", "TCP/x"} {
		if _, ok := ParseListenerKey(bad); ok {
			t.Errorf("ParseListenerKey(%q) accepted", bad)
		}
	}
}

func TestParseLoadBalancerRef(t *testing.T) {
	if r := ParseLoadBalancerRef("ap-shanghai:lb-1"); r != (LoadBalancerRef{Region: "ap-shanghai", ID: "lb-1"}) {
		t.Errorf("region ref parsed as %+v", r)
	}
	if r := ParseLoadBalancerRef("lb-2"); r != (LoadBalancerRef{ID: "lb-2"}) {
		t.Errorf("plain ref parsed as %+v", r)
	}
	ids := LoadBalancerIDsOf([]string{"lb-1", "ap-guangzhou:lb-3"})
	if len(ids) != 2 || ids[0] != "lb-1" || ids[1] != "lb-3" {
		t.Errorf("LoadBalancerIDsOf = %v", ids)
	}
}

func TestTakesBindings(t *testing.T) {
	for s, want := range map[string]bool{
		PoolLBReady: true, PoolLBCreating: true, PoolLBBlacklisted: true,
		PoolLBNotFound: false, PoolLBDraining: false, PoolLBRemoved: false, PoolLBNotOwned: false,
	} {
		if TakesBindings(s) != want {
			t.Errorf("TakesBindings(%s) = %v", s, !want)
		}
	}
}
