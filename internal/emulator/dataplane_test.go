package emulator_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// fakePlane records what the emulator applies.
type fakePlane struct {
	mu      sync.Mutex
	applied [][]emulator.Route
}

func (p *fakePlane) Apply(routes []emulator.Route) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applied = append(p.applied, routes)
	return nil
}

func (p *fakePlane) last() []emulator.Route {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.applied) == 0 {
		return nil
	}
	return p.applied[len(p.applied)-1]
}

func (p *fakePlane) applies() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.applied)
}

// describe renders routes compactly: "VIP TCP 80[-90] -> ip:port/w,...".
func describe(routes []emulator.Route) []string {
	var out []string
	for _, r := range routes {
		s := fmt.Sprintf("%s %s %d", r.VIP, r.Protocol, r.Port)
		if r.EndPort != 0 {
			s += fmt.Sprintf("-%d", r.EndPort)
		}
		s += " ->"
		for _, t := range r.Targets {
			s += fmt.Sprintf(" %s:%d/%d", t.IP, t.Port, t.Weight)
		}
		out = append(out, s)
	}
	return out
}

func TestDataPlaneFollowsCompletedTasks(t *testing.T) {
	plane := &fakePlane{}
	cfg := instant()
	cfg.DataPlane = plane
	cfg.TaskDuration = 150 * time.Millisecond
	e, _, c := env(t, cfg)

	lb := createLB(t, c, "traffic")
	vip := e.Inventory().LoadBalancers[0].VIP
	lresp, err := c.CreateListener(newCreateListener(lb, "TCP", 80))
	must(t, err)
	if got := describe(plane.last()); len(got) != 0 {
		t.Fatalf("routes %v before the listener task completed", got)
	}
	waitTask(t, c, *lresp.Response.RequestId)
	// Status 0 means the data plane already serves the change.
	if got, want := fmt.Sprint(describe(plane.last())), fmt.Sprintf("[%s TCP 80 ->]", vip); got != want {
		t.Fatalf("routes %s, want %s", got, want)
	}
	l := *lresp.Response.ListenerIds[0]

	// Batch registration is synchronous: routes change before it answers.
	bt := clb.NewBatchRegisterTargetsRequest()
	bt.LoadBalancerId = &lb
	bt.Targets = []*clb.BatchTarget{{ListenerId: &l, EniIp: common.StringPtr("127.0.0.1"), Port: common.Int64Ptr(9000), Weight: common.Int64Ptr(5)}}
	_, err = c.BatchRegisterTargets(bt)
	must(t, err)
	if got, want := fmt.Sprint(describe(plane.last())), fmt.Sprintf("[%s TCP 80 -> 127.0.0.1:9000/5]", vip); got != want {
		t.Fatalf("routes %s, want %s", got, want)
	}

	// Protocol families and L7 listeners.
	n := plane.applies()
	for _, p := range []struct {
		proto string
		port  int64
	}{{"UDP", 53}, {"QUIC", 443}, {"HTTP", 8080}} {
		createListeners(t, c, lb, p.proto, p.port)
	}
	if plane.applies() <= n {
		t.Fatalf("no Apply after new listeners")
	}
	want := []string{
		fmt.Sprintf("%s TCP 80 -> 127.0.0.1:9000/5", vip),
		fmt.Sprintf("%s TCP 8080 ->", vip),
		fmt.Sprintf("%s UDP 53 ->", vip),
		fmt.Sprintf("%s UDP 443 ->", vip),
	}
	if got := describe(plane.last()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("routes %v, want %v", got, want)
	}

	// A name change does not disturb the data plane.
	n = plane.applies()
	m := clb.NewModifyListenerRequest()
	m.LoadBalancerId, m.ListenerId, m.ListenerName = &lb, &l, common.StringPtr("renamed")
	mresp, err := c.ModifyListener(m)
	must(t, err)
	waitTask(t, c, *mresp.Response.RequestId)
	if plane.applies() != n {
		t.Fatalf("an unchanged route set was applied again")
	}

	del := clb.NewDeleteLoadBalancerRequest()
	del.LoadBalancerIds = common.StringPtrs([]string{lb})
	dresp, err := c.DeleteLoadBalancer(del)
	must(t, err)
	if len(plane.last()) == 0 {
		t.Fatalf("routes were removed before the delete task completed")
	}
	waitTask(t, c, *dresp.Response.RequestId)
	if got := plane.last(); len(got) != 0 {
		t.Fatalf("routes after delete: %v", describe(got))
	}
}

func TestDataPlaneRestoredOnStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cloud.json")
	cfg := instant()
	cfg.StateFile = file
	e, _, c := env(t, cfg)
	lb := createLB(t, c, "restored")
	createListeners(t, c, lb, "UDP", 7777)
	must(t, e.Save())

	plane := &fakePlane{}
	e2, err := emulator.New(emulator.Config{StateFile: file, DataPlane: plane})
	must(t, err)
	defer func() { _ = e2.Close() }()
	if got := describe(plane.last()); len(got) != 1 {
		t.Fatalf("routes on start: %v", got)
	}
}

// A data plane attached to a running emulator gets its routes at once and
// every change after; detached, it gets nothing more.
func TestSetDataPlane(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "later")
	createListeners(t, c, lb, "UDP", 7777)
	vip := e.Inventory().LoadBalancers[0].VIP

	plane := &fakePlane{}
	e.SetDataPlane(plane)
	if got, want := fmt.Sprint(describe(plane.last())), fmt.Sprintf("[%s UDP 7777 ->]", vip); got != want {
		t.Fatalf("routes on attach %s, want %s", got, want)
	}
	createListeners(t, c, lb, "TCP", 80)
	if got := describe(plane.last()); len(got) != 2 {
		t.Fatalf("routes after a new listener: %v", got)
	}
	e.SetDataPlane(nil)
	n := plane.applies()
	createListeners(t, c, lb, "TCP", 81)
	if plane.applies() != n {
		t.Fatalf("a detached data plane was applied to")
	}
}
