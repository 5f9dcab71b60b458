package v1alpha1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func boundedCluster(pools ...PoolRef) *WorkloadCluster {
	return &WorkloadCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cluster-a", Name: "a"},
		Spec:       WorkloadClusterSpec{PodCIDRs: []string{"10.244.0.0/16", "fd00:10::/64"}, NodeCIDRs: []string{"10.0.1.0/24"}, Pools: pools},
	}
}

func TestBoundsAdmit(t *testing.T) {
	b, err := boundedCluster().Bounds()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		spec RemotePodSpec
		want string // part of the error; "" for admitted
	}{
		"nothing known yet":    {spec: RemotePodSpec{}},
		"inside":               {spec: RemotePodSpec{PodIP: "10.244.3.4", PodIPs: []string{"10.244.3.4", "fd00:10::4"}, Node: &RemoteNode{Name: "n", InternalIP: "10.0.1.9", InstanceID: "ins-ab12cd34"}}},
		"podIP outside":        {spec: RemotePodSpec{PodIP: "10.0.5.5"}, want: "spec.podIP 10.0.5.5 is outside the podCIDRs of WorkloadCluster a (10.244.0.0/16, fd00:10::/64)"},
		"second podIP outside": {spec: RemotePodSpec{PodIP: "10.244.0.1", PodIPs: []string{"10.244.0.1", "fd00:11::1"}}, want: "spec.podIPs[1] fd00:11::1 is outside"},
		"podIP not an IP":      {spec: RemotePodSpec{PodIP: "db.internal"}, want: `spec.podIP "db.internal" is not an IP address`},
		"node outside":         {spec: RemotePodSpec{PodIP: "10.244.0.1", Node: &RemoteNode{Name: "n", InternalIP: "10.0.2.1"}}, want: "spec.node.internalIP 10.0.2.1 is outside the nodeCIDRs of WorkloadCluster a (10.0.1.0/24)"},
		"node IP is a pod IP":  {spec: RemotePodSpec{Node: &RemoteNode{Name: "n", InternalIP: "10.244.0.1"}}, want: "spec.node.internalIP 10.244.0.1 is outside"},
		"instance not CVM":     {spec: RemotePodSpec{Node: &RemoteNode{Name: "n", InstanceID: "lb-12345678"}}, want: `spec.node.instanceId "lb-12345678" is not a CVM instance id`},
		"instance too long":    {spec: RemotePodSpec{Node: &RemoteNode{Name: "n", InstanceID: "ins-123456789"}}, want: "not a CVM instance id"},
		"instance upper case":  {spec: RemotePodSpec{Node: &RemoteNode{Name: "n", InstanceID: "ins-ABCDEFGH"}}, want: "not a CVM instance id"},
		"v4-mapped v6 inside":  {spec: RemotePodSpec{PodIP: "::ffff:10.244.0.9"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := b.Admit(&c.spec)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

func TestBoundsNeedCIDRs(t *testing.T) {
	wc := boundedCluster()
	wc.Spec.NodeCIDRs = nil
	if _, err := wc.Bounds(); err == nil || !strings.Contains(err.Error(), "spec.nodeCIDRs is empty") {
		t.Fatalf("no nodeCIDRs: %v", err)
	}
	wc = boundedCluster()
	wc.Spec.PodCIDRs = []string{"10.244.0.0"}
	if _, err := wc.Bounds(); err == nil || !strings.Contains(err.Error(), `spec.podCIDRs: "10.244.0.0" is not a CIDR`) {
		t.Fatalf("bad podCIDR: %v", err)
	}
}

func TestBoundsPools(t *testing.T) {
	b, _ := boundedCluster().Bounds()
	if !b.AllowsPool("other/pool") {
		t.Fatal("no spec.pools must leave every pool to the pools' own consent")
	}
	b, _ = boundedCluster(PoolRef{Name: "rooms"}, PoolRef{Namespace: "shared", Name: "edge"}).Bounds()
	for key, want := range map[string]bool{"cluster-a/rooms": true, "shared/edge": true, "shared/rooms": false, "cluster-a/edge": false} {
		if got := b.AllowsPool(key); got != want {
			t.Errorf("AllowsPool(%s) = %v, want %v", key, got, want)
		}
	}
	if m := b.PoolsMessage("shared/rooms"); m != "PortPool shared/rooms is not in spec.pools of WorkloadCluster a (cluster-a/rooms, shared/edge)" {
		t.Errorf("message: %s", m)
	}
}

func TestTokenLifetime(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: time.Hour, time.Minute: MinAgentTokenLifetime, 2 * time.Hour: 2 * time.Hour, 48 * time.Hour: MaxAgentTokenLifetime} {
		s := WorkloadClusterSpec{}
		if in != 0 {
			s.AgentTokenLifetime = &metav1.Duration{Duration: in}
		}
		if got := s.TokenLifetime(); got != want {
			t.Errorf("TokenLifetime(%s) = %s, want %s", in, got, want)
		}
	}
}
