package targets

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

func TestOpsGroupRegisteredTargetsByLoadBalancer(t *testing.T) {
	bs := []v1alpha1.PortBinding{
		{LoadBalancerID: "lb-a", ListenerIDs: map[string]string{"TCP": "lbl-1"}, TargetIP: "10.0.0.1", TargetPort: 80},
		{LoadBalancerID: "lb-b", ListenerIDs: map[string]string{"UDP": "lbl-2"}, TargetIP: "10.0.0.1", TargetPort: 81},
		{LoadBalancerID: "lb-a", ListenerIDs: map[string]string{"TCP": "lbl-3"}, TargetIP: "10.0.0.1", TargetPort: 82},
		{LoadBalancerID: "lb-c", ListenerIDs: map[string]string{"TCP": "lbl-4"}}, // never registered
	}
	ops := Deregister(bs)
	if len(ops) != 2 || ops[0].lb != "lb-a" || len(ops[0].targets) != 2 || ops[1].lb != "lb-b" {
		t.Errorf("deregisterOps: got %+v, want lb-a (2 targets) then lb-b, and nothing for the unregistered binding", ops)
	}
	if same(ops, Register(bs)) {
		t.Error("a registration and a deregistration of the same targets compare the same")
	}
}

func TestBinderRetriesAfterAFailure(t *testing.T) {
	b := NewBinder(nil, nil)
	key := types.NamespacedName{Namespace: "ns", Name: "pa"}
	g1, g2 := opsOn("lb-1"), opsOn("lb-2")
	b.results[key] = result{ops: g1, err: errors.New("refused")}
	if a := b.start(key, g1); a.State != Failed || a.Err == nil {
		t.Fatalf("start: got %+v; want the recorded failure", a)
	}
	b.mu.Lock()
	_, kept := b.results[key]
	b.mu.Unlock()
	if kept {
		t.Error("a failure was kept: the binding would never be retried")
	}
	b.results[key] = result{ops: opsOn("lb-old"), err: nil}
	b.running[key] = g2 // pretend g2 is running, so start does not launch
	if a := b.start(key, g2); a.State != Running {
		t.Errorf("start = %+v: the answer to an older request was taken for the current one", a)
	}
}

// TestBinderRunsOneOperationAtATime: a deregistration asked for while a
// registration of the same PodAddress runs waits for it to end, so the
// registration cannot land after the deregistration.
func TestBinderRunsOneOperationAtATime(t *testing.T) {
	b := NewBinder(nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- b.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Error(err)
		}
	}()
	key := types.NamespacedName{Namespace: "ns", Name: "pa"}
	register, deregister := opsOn("lb-1"), opsOn("lb-1")
	deregister[0].register, deregister[0].c = false, region()
	b.running[key] = register // a registration in flight
	if a := b.start(key, deregister); a.State != Running {
		t.Fatalf("start while another operation runs: %+v; want to wait", a)
	}
	if b.Idle(key) || !same(b.running[key], register) {
		t.Fatalf("running = %+v; the deregistration started beside the registration", b.running[key])
	}
	// The registration ends (as run ends it): the deregistration starts,
	// and its end wakes the PodAddress.
	b.mu.Lock()
	delete(b.running, key)
	b.results[key] = result{ops: register}
	b.mu.Unlock()
	if a := b.start(key, deregister); a.State != Running {
		t.Fatalf("start = %+v: the registration's answer was taken for the deregistration", a)
	}
	select {
	case ev := <-b.wake:
		if ev.Object.GetName() != "pa" {
			t.Fatalf("woke %s", ev.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the deregistration never ended")
	}
	if a := b.start(key, deregister); a.State != Done {
		t.Fatalf("after it ended: %+v; want done", a)
	}
	if !b.Idle(key) {
		t.Error("not idle after the operation ended")
	}
}

// TestOpsAreDeterministic: the same bindings give the same operations
// however the listener map iterates and in whatever order the bindings
// come (TCP_UDP bindings have two listeners, whose map order used to make
// an unchanged request look new on every reconcile).
func TestOpsAreDeterministic(t *testing.T) {
	bs := []v1alpha1.PortBinding{
		{LoadBalancerID: "lb-b", ListenerIDs: map[string]string{"TCP": "lbl-1", "UDP": "lbl-2"}, TargetIP: "10.0.0.1", TargetPort: 7000},
		{LoadBalancerID: "lb-a", ListenerIDs: map[string]string{"TCP": "lbl-3", "UDP": "lbl-4"}, TargetIP: "10.0.0.1", TargetPort: 7001},
		{LoadBalancerID: "lb-a", ListenerIDs: map[string]string{"TCP": "lbl-5"}, TargetIP: "10.0.0.1", TargetPort: 7002},
	}
	want := Register(bs)
	reversed := slices.Clone(bs)
	slices.Reverse(reversed)
	for i := range 200 {
		in := bs
		if i%2 == 1 {
			in = reversed
		}
		if got := Register(in); !same(got, want) {
			t.Fatalf("try %d: ops %+v, want %+v", i, got, want)
		}
	}
	ops := Register(bs)
	if len(ops) != 2 || ops[0].lb != "lb-a" || len(ops[0].targets) != 3 || ops[1].lb != "lb-b" || len(ops[1].targets) != 2 {
		t.Fatalf("ops = %+v; want lb-a with 3 targets, then lb-b with 2", ops)
	}
	if !slices.IsSortedFunc(ops[0].targets, Compare) {
		t.Errorf("targets not sorted: %+v", ops[0].targets)
	}
	if same(Deregister(bs), want) {
		t.Error("a registration and a deregistration of the same targets compare the same")
	}
}

// TestOpsPerRegion: bindings on load balancers of two regions give one op
// per region, each naming its region and pool, and the region is part of
// an op's identity (the same targets in another region are another op).
func TestOpsPerRegion(t *testing.T) {
	bs := []v1alpha1.PortBinding{
		{Pool: "ns/p", Region: "ap-chengdu", LoadBalancerID: "lb-far", ListenerIDs: map[string]string{"TCP": "lbl-1"}, TargetIP: "10.0.0.1", TargetPort: 7000},
		{Pool: "ns/p", Region: "ap-guangzhou", LoadBalancerID: "lb-home", ListenerIDs: map[string]string{"TCP": "lbl-2"}, TargetIP: "10.0.0.1", TargetPort: 7001},
	}
	ops := Register(bs)
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
	if same(Register(moved), ops) {
		t.Error("the same targets in another region compare the same")
	}
}

// TestMissingOps: a repair registers only the flagged targets the
// bindings still record; a target recorded no more (the Pod moved) is
// not the binding's any more and is never registered.
func TestMissingOps(t *testing.T) {
	bs := []v1alpha1.PortBinding{
		{Pool: "ns/p", LoadBalancerID: "lb-1", Protocol: "TCP_UDP", ListenerIDs: map[string]string{"TCP": "lbl-t", "UDP": "lbl-u"}, TargetIP: "10.0.0.1", TargetPort: 7777},
		{Pool: "ns/p", LoadBalancerID: "lb-2", Protocol: "TCP", ListenerIDs: map[string]string{"TCP": "lbl-2"}, TargetIP: "10.0.0.1", TargetPort: 8888},
		{Pool: "ns/p", LoadBalancerID: "lb-3", Protocol: "TCP", ListenerIDs: map[string]string{"TCP": "lbl-3"}}, // nothing recorded
	}
	want := []clb.Target{
		{ListenerID: "lbl-u", EniIP: "10.0.0.1", Port: 7777},
		{ListenerID: "lbl-2", EniIP: "10.0.0.9", Port: 8888}, // an old IP
		{ListenerID: "lbl-3", EniIP: "10.0.0.1", Port: 9999},
	}
	ops := Missing(bs, want)
	if len(ops) != 1 || ops[0].lb != "lb-1" || !ops[0].register || len(ops[0].targets) != 1 || ops[0].targets[0] != want[0] {
		t.Errorf("Missing = %+v; want one registration of %+v on lb-1", ops, want[0])
	}
}

// opsOn is a registration of one target on lb.
func opsOn(lb string) []Op {
	return Register([]v1alpha1.PortBinding{{Pool: "ns/p", LoadBalancerID: lb, ListenerIDs: map[string]string{"TCP": "lbl-1"}, TargetIP: "10.0.0.1", TargetPort: 80}})
}
