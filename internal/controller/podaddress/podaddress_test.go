package podaddress

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

func TestInstanceID(t *testing.T) {
	cases := map[string]struct {
		reason     string
		providerID string
		want       string
		err        bool
	}{
		"TKE":        {"TKE nodes name the instance last.", "qcloud:///800002/ins-abcdefgh", "ins-abcdefgh", false},
		"WithZone":   {"A zone in the path is fine.", "tencentcloud:///ap-guangzhou-3/ins-12345678", "ins-12345678", false},
		"NotCVM":     {"Another cloud's node cannot be a CVM target.", "aws:///us-east-1a/i-0abc", "", true},
		"NoProvider": {"A node without a providerID cannot either.", "", "", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := instanceID(tc.providerID)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("%s\ninstanceID(%q) = %q, %v; want %q, error %v", tc.reason, tc.providerID, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestReadyPorts(t *testing.T) {
	lb := clbv1alpha1.PoolLoadBalancerStatus{Listeners: map[string]string{
		"TCP/100": "lbl-1", "UDP/100": "lbl-2", "TCP/101": "lbl-3", "UDP/102": "lbl-4", "bogus": "x",
	}}
	cases := map[string]struct {
		reason    string
		protocols []string
		want      []int32
	}{
		"TCP":    {"Every port with a TCP listener.", []string{"TCP"}, []int32{100, 101}},
		"TCPUDP": {"Only ports with both listeners serve a TCP+UDP pool.", []string{"TCP", "UDP"}, []int32{100}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := readyPorts(lb, tc.protocols)
			sortInt32(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nreadyPorts(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func sortInt32(s []int32) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestOpsGroupRegisteredTargetsByLoadBalancer(t *testing.T) {
	bs := []v1alpha1.PortBinding{
		{LoadBalancerID: "lb-a", ListenerIDs: map[string]string{"TCP": "lbl-1"}, TargetIP: "10.0.0.1", TargetPort: 80},
		{LoadBalancerID: "lb-b", ListenerIDs: map[string]string{"UDP": "lbl-2"}, TargetIP: "10.0.0.1", TargetPort: 81},
		{LoadBalancerID: "lb-a", ListenerIDs: map[string]string{"TCP": "lbl-3"}, TargetIP: "10.0.0.1", TargetPort: 82},
		{LoadBalancerID: "lb-c", ListenerIDs: map[string]string{"TCP": "lbl-4"}}, // never registered
	}
	ops := deregisterOps(bs)
	if len(ops) != 2 || ops[0].lb != "lb-a" || len(ops[0].targets) != 2 || ops[1].lb != "lb-b" {
		t.Errorf("deregisterOps: got %+v, want lb-a (2 targets) then lb-b, and nothing for the unregistered binding", ops)
	}
	if generation(ops) == generation(registerOps(bs)) {
		t.Error("a registration and a deregistration of the same targets share a generation")
	}
}

func TestAddress(t *testing.T) {
	cases := map[string]struct {
		b    v1alpha1.PortBinding
		want string
	}{
		"Port":    {v1alpha1.PortBinding{VIPs: []string{"1.1.1.1"}, Port: 8000}, "1.1.1.1:8000"},
		"Segment": {v1alpha1.PortBinding{VIPs: []string{"1.1.1.1"}, Port: 8000, EndPort: 8009}, "1.1.1.1:8000-8009"},
		"NoVIP":   {v1alpha1.PortBinding{Port: 8000}, ""},
	}
	for name, tc := range cases {
		if got := address(tc.b); got != tc.want {
			t.Errorf("%s: address = %q, want %q", name, got, tc.want)
		}
	}
}

func TestUsageMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := newRecorder(reg)
	p := portalloc.NewPool(portalloc.PolicyInOrder)
	p.SetLB("lb-a", []int32{1, 2, 3})
	if _, err := p.Allocate("o1"); err != nil {
		t.Fatal(err)
	}
	r.usage("ns/pool", p.Stats())
	if got := testutil.ToFloat64(r.slots.WithLabelValues("ns/pool", "lb-a", "allocated")); got != 1 {
		t.Errorf("allocated = %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.slots.WithLabelValues("ns/pool", "lb-a", "free")); got != 2 {
		t.Errorf("free = %v, want 2", got)
	}
}

func TestBinderRetriesAfterAFailure(t *testing.T) {
	b := newBinder()
	key := types.NamespacedName{Namespace: "ns", Name: "pa"}
	b.results[key] = result{gen: "g1", err: errors.New("refused")}
	if done, err := b.start(key, "g1", nil); !done || err == nil {
		t.Fatalf("start: got %v, %v; want the recorded failure", done, err)
	}
	b.mu.Lock()
	_, kept := b.results[key]
	b.mu.Unlock()
	if kept {
		t.Error("a failure was kept: the binding would never be retried")
	}
	b.results[key] = result{gen: "old", err: nil}
	b.running[key] = "g2" // pretend g2 is running, so start does not launch
	if done, _ := b.start(key, "g2", nil); done {
		t.Error("the answer to an older request was taken for the current one")
	}
}

// TestBinderRunsOneOperationAtATime: a deregistration asked for while a
// registration of the same PodAddress runs waits for it to end, so the
// registration cannot land after the deregistration.
func TestBinderRunsOneOperationAtATime(t *testing.T) {
	b := newBinder()
	key := types.NamespacedName{Namespace: "ns", Name: "pa"}
	b.running[key] = "register" // a registration in flight
	if done, err := b.start(key, "deregister", nil); done || err != nil {
		t.Fatalf("start while another operation runs: %v, %v; want to wait", done, err)
	}
	if b.idle(key) || b.running[key] != "register" {
		t.Fatalf("running = %q; the deregistration started beside the registration", b.running[key])
	}
	// The registration ends (as run ends it): the deregistration starts,
	// and its end wakes the PodAddress.
	b.mu.Lock()
	delete(b.running, key)
	b.results[key] = result{gen: "register"}
	b.mu.Unlock()
	if done, _ := b.start(key, "deregister", nil); done {
		t.Fatal("the registration's answer was taken for the deregistration")
	}
	select {
	case ev := <-b.wake:
		if ev.Object.GetName() != "pa" {
			t.Fatalf("woke %s", ev.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the deregistration never ended")
	}
	if done, err := b.start(key, "deregister", nil); !done || err != nil {
		t.Fatalf("after it ended: %v, %v; want done", done, err)
	}
	if !b.idle(key) {
		t.Error("not idle after the operation ended")
	}
}

// TestGenerationIsDeterministic: the same bindings give the same
// operations and generation however the listener map iterates and in
// whatever order the bindings come (TCP_UDP bindings have two listeners,
// whose map order used to change the generation on every reconcile).
func TestGenerationIsDeterministic(t *testing.T) {
	bs := []v1alpha1.PortBinding{
		{LoadBalancerID: "lb-b", ListenerIDs: map[string]string{"TCP": "lbl-1", "UDP": "lbl-2"}, TargetIP: "10.0.0.1", TargetPort: 7000},
		{LoadBalancerID: "lb-a", ListenerIDs: map[string]string{"TCP": "lbl-3", "UDP": "lbl-4"}, TargetIP: "10.0.0.1", TargetPort: 7001},
		{LoadBalancerID: "lb-a", ListenerIDs: map[string]string{"TCP": "lbl-5"}, TargetIP: "10.0.0.1", TargetPort: 7002},
	}
	want := generation(registerOps(bs))
	reversed := slices.Clone(bs)
	slices.Reverse(reversed)
	for i := range 200 {
		in := bs
		if i%2 == 1 {
			in = reversed
		}
		if got := generation(registerOps(in)); got != want {
			t.Fatalf("try %d: generation %s, want %s", i, got, want)
		}
	}
	ops := registerOps(bs)
	if len(ops) != 2 || ops[0].lb != "lb-a" || len(ops[0].targets) != 3 || ops[1].lb != "lb-b" || len(ops[1].targets) != 2 {
		t.Fatalf("ops = %+v; want lb-a with 3 targets, then lb-b with 2", ops)
	}
	if !slices.IsSortedFunc(ops[0].targets, compareTargets) {
		t.Errorf("targets not sorted: %+v", ops[0].targets)
	}
	if generation(deregisterOps(bs)) == want {
		t.Error("a registration and a deregistration of the same targets share a generation")
	}
}

// TestOpsPerRegion: bindings on load balancers of two regions give one op
// per region, each naming its region and pool, and the region is part of
// the generation (the same targets in another region are another op).
func TestOpsPerRegion(t *testing.T) {
	bs := []v1alpha1.PortBinding{
		{Pool: "ns/p", Region: "ap-chengdu", LoadBalancerID: "lb-far", ListenerIDs: map[string]string{"TCP": "lbl-1"}, TargetIP: "10.0.0.1", TargetPort: 7000},
		{Pool: "ns/p", Region: "ap-guangzhou", LoadBalancerID: "lb-home", ListenerIDs: map[string]string{"TCP": "lbl-2"}, TargetIP: "10.0.0.1", TargetPort: 7001},
	}
	ops := registerOps(bs)
	if len(ops) != 2 || ops[0].lb != "lb-far" || ops[0].region != "ap-chengdu" || ops[1].lb != "lb-home" || ops[1].region != "ap-guangzhou" {
		t.Fatalf("ops = %+v; want lb-far in ap-chengdu, then lb-home in ap-guangzhou", ops)
	}
	for _, o := range ops {
		if o.pool != "ns/p" {
			t.Errorf("op on %s names pool %q, want ns/p", o.lb, o.pool)
		}
	}
	moved := slices.Clone(bs)
	moved[0].Region = "ap-shanghai"
	if generation(registerOps(moved)) == generation(ops) {
		t.Error("the same targets in another region share a generation")
	}
}

func TestUnserved(t *testing.T) {
	pp := func(protocols ...string) *clbv1alpha1.PortPool {
		p := &clbv1alpha1.PortPool{}
		p.SetNamespace("ns")
		p.SetName("pool")
		p.Spec.ForProvider.Protocols = protocols
		return p
	}
	cases := map[string]struct {
		pool     *clbv1alpha1.PortPool
		protocol string
		refused  bool
	}{
		"DefaultTCP":     {pp(), "TCP", false},
		"UDPOnDefault":   {pp(), "UDP", true},
		"TCPUDPOnTCP":    {pp("TCP"), v1alpha1.ProtocolTCPUDP, true},
		"TCPUDPOnBoth":   {pp("TCP", "UDP"), v1alpha1.ProtocolTCPUDP, false},
		"UDPOnBoth":      {pp("TCP", "UDP"), "UDP", false},
		"QUICOnUDP":      {pp("UDP"), "QUIC", true},
		"TCPSSLOnTCPSSL": {pp("TCP_SSL"), "TCP_SSL", false},
	}
	for name, tc := range cases {
		if err := unserved(tc.pool, tc.protocol); (err != nil) != tc.refused {
			t.Errorf("%s: unserved = %v, want refused %t", name, err, tc.refused)
		}
	}
}
