package v1alpha1

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPoolKey(t *testing.T) {
	nn, ok := ParsePoolKey(PoolKey("games", "pool-a"))
	if !ok || nn.Namespace != "games" || nn.Name != "pool-a" {
		t.Fatalf("ParsePoolKey round trip: %v %v", nn, ok)
	}
	for _, bad := range []string{"", "x", "/x", "x/"} {
		if _, ok := ParsePoolKey(bad); ok {
			t.Errorf("ParsePoolKey(%q) accepted", bad)
		}
	}
	if k := (PoolRef{Name: "p"}).Key("ns"); k != "ns/p" {
		t.Errorf("Key in own namespace = %q", k)
	}
	if k := (PoolRef{Name: "p", Namespace: "other"}).Key("ns"); k != "other/p" {
		t.Errorf("Key across namespaces = %q", k)
	}
}

func TestPoolsOfSpecAndStatus(t *testing.T) {
	pa := &PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	pa.Spec.Ports = []PortRequest{{Pools: []PoolRef{{Name: "a"}, {Name: "b", Namespace: "o"}}}}
	pa.Status.Bindings = []PortBinding{{Pool: "ns/a"}, {Pool: "ns/old"}}
	got := PoolsOf(pa)
	want := []string{"ns/a", "o/b", "ns/old"}
	if !slices.Equal(got, want) {
		t.Errorf("PoolsOf = %v, want %v", got, want)
	}
}

func TestClaimKey(t *testing.T) {
	nn, ok := ParseClaimKey(ClaimKey("games", "claim-a"))
	if !ok || nn.Namespace != "games" || nn.Name != "claim-a" {
		t.Fatalf("ParseClaimKey round trip: %v %v", nn, ok)
	}
	for _, bad := range []string{"", "x", "/x", "x/", "a/b/c"} {
		if _, ok := ParseClaimKey(bad); ok {
			t.Errorf("ParseClaimKey(%q) accepted", bad)
		}
	}
}

func TestListenerProtocols(t *testing.T) {
	for in, want := range map[string][]string{
		ProtocolTCPUDP: {ProtocolTCP, ProtocolUDP},
		ProtocolTCP:    {ProtocolTCP},
		ProtocolUDP:    {ProtocolUDP},
		ProtocolTCPSSL: {ProtocolTCPSSL},
		ProtocolQUIC:   {ProtocolQUIC},
	} {
		if got := ListenerProtocols(in); !slices.Equal(got, want) {
			t.Errorf("ListenerProtocols(%q) = %v, want %v", in, got, want)
		}
	}
}
