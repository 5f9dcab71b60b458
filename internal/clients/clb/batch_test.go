package clb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestRegisterTargetsCoalesce: 200 callers, each binding one target on
// listeners of two load balancers within one window, make a handful of
// BatchRegisterTargets calls; every target is bound; the one caller naming
// an unknown listener is the only one to fail.
func TestRegisterTargetsCoalesce(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, c := start(t, emulator.DefaultConfig(), Options{BatchWindow: 50 * time.Millisecond, Registerer: reg})
	ctx := testCtx(t)
	lbs := []string{createLB(t, c, "batch-a"), createLB(t, c, "batch-b")}
	listeners := map[string][]string{}
	for _, lb := range lbs {
		listeners[lb] = createListeners(t, c, lb, "TCP", 80, 81)
	}
	e.ResetCounters()

	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	tasks := make([]string, n+1)
	for i := range n {
		lb := lbs[i%2]
		target := Target{ListenerID: listeners[lb][(i/2)%2], EniIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Port: 8080}
		wg.Go(func() { tasks[i], errs[i] = c.RegisterTargets(ctx, lb, []Target{target}) })
	}
	wg.Go(func() {
		tasks[n], errs[n] = c.RegisterTargets(ctx, lbs[0], []Target{{ListenerID: "lbl-unknown0", EniIP: "10.9.9.9", Port: 80}})
	})
	wg.Wait()

	for i := range n {
		if errs[i] != nil || tasks[i] == "" {
			t.Fatalf("caller %d: task %q, err %v", i, tasks[i], errs[i])
		}
	}
	if errs[n] == nil || !IsInvalid(errs[n]) {
		t.Fatalf("the caller with an unknown listener: %v", errs[n])
	}
	if calls := e.CallCount("BatchRegisterTargets"); calls > 4 {
		t.Fatalf("%d BatchRegisterTargets calls for 2 load balancers", calls)
	}
	if e.CallCount("RegisterTargets") != 0 {
		t.Fatal("single-listener RegisterTargets was used")
	}
	bound := 0
	for _, lb := range e.Inventory().LoadBalancers {
		for _, l := range lb.Listeners {
			bound += len(l.Targets)
		}
	}
	if bound != n {
		t.Fatalf("%d targets bound, want %d", bound, n)
	}
	locksReleased(t, c)
	if got := histogramCount(t, reg, "tencentcloud_api_batch_size", map[string]string{"action": "BatchRegisterTargets"}); got == 0 || got > 4 {
		t.Fatalf("batch size observations = %d", got)
	}

	// Deregistering coalesces the same way.
	e.ResetCounters()
	for i := range n {
		lb := lbs[i%2]
		target := Target{ListenerID: listeners[lb][(i/2)%2], EniIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Port: 8080}
		wg.Go(func() { _, errs[i] = c.DeregisterTargets(ctx, lb, []Target{target}) })
	}
	wg.Wait()
	for i := range n {
		must(t, errs[i])
	}
	if calls := e.CallCount("BatchDeregisterTargets"); calls > 4 {
		t.Fatalf("%d BatchDeregisterTargets calls", calls)
	}
	if left := e.Inventory().Listeners(); left != 4 {
		t.Fatalf("%d listeners, want 4", left)
	}
	for _, lb := range e.Inventory().LoadBalancers {
		for _, l := range lb.Listeners {
			if len(l.Targets) != 0 {
				t.Fatalf("listener %s keeps %d targets", l.ID, len(l.Targets))
			}
		}
	}
}

// TestBatchIsolatesABadCaller: 16 callers share a listener; one asks for a
// target that is already bound, which makes the API refuse the whole
// listener. The others must still succeed, for a few more calls.
func TestBatchIsolatesABadCaller(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{BatchWindow: 50 * time.Millisecond})
	ctx := testCtx(t)
	lb := createLB(t, c, "isolate")
	l := createListeners(t, c, lb, "TCP", 80)[0]
	taken := Target{ListenerID: l, EniIP: "10.0.0.1", Port: 80}
	_, err := c.RegisterTargets(ctx, lb, []Target{taken})
	must(t, err)
	e.ResetCounters()

	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		target := Target{ListenerID: l, EniIP: fmt.Sprintf("10.0.1.%d", i+1), Port: 80}
		if i == 5 {
			target = taken
		}
		wg.Go(func() { _, errs[i] = c.RegisterTargets(ctx, lb, []Target{target}) })
	}
	wg.Wait()
	for i, err := range errs {
		if i == 5 {
			if !IsInvalid(err) {
				t.Errorf("the bad caller: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("good caller %d failed: %v", i, err)
		}
	}
	inv, _ := e.Inventory().LoadBalancer(lb)
	if got := len(inv.Listeners[0].Targets); got != n {
		t.Fatalf("%d targets bound, want %d", got, n)
	}
	// One batch, then halves down to the bad caller: 1 + 2·log2(16).
	if calls := e.CallCount("BatchRegisterTargets"); calls > 9 {
		t.Fatalf("%d calls to isolate one bad caller among %d", calls, n)
	}

	// A malformed target refused by the whole call fails only its caller.
	var bad, good error
	wg.Go(func() {
		_, bad = c.RegisterTargets(ctx, lb, []Target{{ListenerID: l, InstanceID: "not-an-instance", Port: 80}})
	})
	wg.Go(func() { _, good = c.RegisterTargets(ctx, lb, []Target{{ListenerID: l, EniIP: "10.0.0.3", Port: 80}}) })
	wg.Wait()
	if good != nil || !IsInvalid(bad) {
		t.Fatalf("good: %v; bad: %v", good, bad)
	}
}

// TestRegisterTargetsBusy: while our own task runs on the load balancer,
// a batch of registrations is not sent; the flush waits a little and
// tries again, so a short task delays the batch, and one that outlasts the
// retries fails every caller of the batch with Busy.
func TestRegisterTargetsBusy(t *testing.T) {
	for _, tc := range []struct {
		name string
		task time.Duration
		busy bool
	}{
		{name: "ShortTask", task: 300 * time.Millisecond},
		{name: "LongTask", task: time.Minute, busy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, c := start(t, emulator.Config{ActionTaskDuration: map[string]time.Duration{"DeleteListener": tc.task}}, Options{})
			ctx := testCtx(t)
			lb := createLB(t, c, "busy-targets")
			ls := createListeners(t, c, lb, "TCP", 80, 81)
			l := ls[0]
			if _, err := c.DeleteListener(ctx, lb, ls[1]); err != nil {
				t.Fatal(err)
			}
			_, err := c.RegisterTargets(ctx, lb, []Target{{ListenerID: l, EniIP: "10.0.0.1", Port: 80}})
			calls := e.CallCount("BatchRegisterTargets")
			switch {
			case tc.busy && (!IsBusy(err) || calls != 0):
				t.Fatalf("err = %v after %d BatchRegisterTargets, want Busy and none sent", err, calls)
			case !tc.busy && (err != nil || calls != 1):
				t.Fatalf("err = %v after %d BatchRegisterTargets, want one call once the task ended", err, calls)
			}
		})
	}
}

// TestRegisterTargetsRetriesTransientErrors: a batch registration that
// fails for a reason waiting can fix (InternalError, ResourceInOperating, a
// dropped connection) is sent again as a whole, so its callers succeed and
// the retries cost one call each, not one per caller. A permanent error is
// answered at once, and a deregistration is never sent again.
func TestRegisterTargetsRetriesTransientErrors(t *testing.T) {
	const callers = 20
	e, c := start(t, emulator.Config{ListenerQuota: 100}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "retry")
	var ports []int64
	for p := range int64(callers) {
		ports = append(ports, 8000+p)
	}
	ls := createListeners(t, c, lb, "TCP", ports...)
	register := func(ip string) []error {
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				_, errs[i] = c.RegisterTargets(ctx, lb, []Target{{ListenerID: ls[i], EniIP: ip, Port: 80}})
			})
		}
		wg.Wait()
		return errs
	}

	e.ResetCounters()
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{
		{Action: "BatchRegisterTargets", Code: "InternalError", Count: 1},
		{Action: "BatchRegisterTargets", Code: "FailedOperation.ResourceInOperating", Count: 1},
		{Action: "BatchRegisterTargets", Drop: true, Count: 1},
	}}))
	for i, err := range register("10.0.0.1") {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if got := e.Calls()["BatchRegisterTargets"]; got["OK"] != 1 || e.CallCount("BatchRegisterTargets") != 4 {
		t.Fatalf("BatchRegisterTargets calls %v, want three failed sends of the batch, then one that succeeds", got)
	}

	e.ResetCounters()
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{
		{Action: "BatchRegisterTargets", Code: "UnauthorizedOperation", Count: 1},
	}}))
	for i, err := range register("10.0.0.2") {
		if Classify(err) != Auth {
			t.Errorf("caller %d: %v, want the permanent Auth error", i, err)
		}
	}
	if n := e.CallCount("BatchRegisterTargets"); n != 1 {
		t.Fatalf("%d BatchRegisterTargets calls, want 1: a permanent error is not retried", n)
	}

	// A deregistration is sent once: its caller decides whether it is
	// still wanted.
	e.ResetCounters()
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{
		{Action: "BatchDeregisterTargets", Code: "InternalError", Count: 1},
	}}))
	if _, err := c.DeregisterTargets(ctx, lb, []Target{{ListenerID: ls[0], EniIP: "10.0.0.1", Port: 80}}); Classify(err) != Transient {
		t.Fatalf("deregistration: %v, want the InternalError", err)
	}
	if n := e.CallCount("BatchDeregisterTargets"); n != 1 {
		t.Fatalf("%d BatchDeregisterTargets calls, want 1", n)
	}
}

func TestRegisterTargetsSplitsAt500(t *testing.T) {
	e, c := start(t, emulator.Config{TargetQuota: 1000}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "split")
	ls := createListeners(t, c, lb, "TCP", 80, 81)
	var targets []Target
	for i := range 700 {
		targets = append(targets, Target{ListenerID: ls[i%2], EniIP: fmt.Sprintf("10.1.%d.%d", i/200, i%200+1), Port: 80})
	}
	_, err := c.RegisterTargets(ctx, lb, targets)
	must(t, err)
	if n := e.CallCount("BatchRegisterTargets"); n != 2 {
		t.Fatalf("%d calls for 700 targets, want 2", n)
	}
	inv, _ := e.Inventory().LoadBalancer(lb)
	if got := len(inv.Listeners[0].Targets) + len(inv.Listeners[1].Targets); got != 700 {
		t.Fatalf("%d targets bound", got)
	}
}

// TestDescribesCoalesce: 100 concurrent describes of load balancers,
// listeners and targets make a few calls each, and each caller gets its
// own object or NotFound.
func TestDescribesCoalesce(t *testing.T) {
	e, c := start(t, emulator.DefaultConfig(), Options{BatchWindow: 50 * time.Millisecond})
	ctx := testCtx(t)
	lbs := []string{createLB(t, c, "d-a"), createLB(t, c, "d-b")}
	ls := createListeners(t, c, lbs[0], "TCP", 80, 81, 82)
	_, err := c.RegisterTargets(ctx, lbs[0], []Target{{ListenerID: ls[1], EniIP: "10.0.0.7", Port: 80}})
	must(t, err)
	e.ResetCounters()

	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := lbs[i%2]
			if i%10 == 9 {
				id = "lb-missing" + fmt.Sprint(i)
			}
			lb, err := c.DescribeLoadBalancer(ctx, id)
			switch {
			case i%10 == 9:
				if !IsNotFound(err) {
					t.Errorf("%s: %v", id, err)
				}
			case err != nil || Deref(lb.LoadBalancerId) != id:
				t.Errorf("%s: got %v, %v", id, lb, err)
			}
		})
		wg.Go(func() {
			id := ls[i%3]
			l, err := c.DescribeListener(ctx, lbs[0], id)
			if err != nil || Deref(l.ListenerId) != id {
				t.Errorf("listener %s: %v", id, err)
			}
		})
		wg.Go(func() {
			id := ls[i%3]
			b, err := c.DescribeTargets(ctx, lbs[0], id)
			if err != nil || Deref(b.ListenerId) != id {
				t.Errorf("targets of %s: %v", id, err)
				return
			}
			if want := map[bool]int{true: 1, false: 0}[id == ls[1]]; len(b.Targets) != want {
				t.Errorf("targets of %s: %d, want %d", id, len(b.Targets), want)
			}
		})
	}
	wg.Wait()
	// 2 real + 10 missing ids = 12 distinct: one call, maybe two if the
	// window closed early.
	if got := e.CallCount("DescribeLoadBalancers"); got < 1 || got > 3 {
		t.Fatalf("%d DescribeLoadBalancers calls for %d callers", got, n)
	}
	if got := e.CallCount("DescribeListeners"); got < 1 || got > 3 {
		t.Fatalf("%d DescribeListeners calls for %d callers", got, n)
	}
	if got := e.CallCount("DescribeTargets"); got < 1 || got > 3 {
		t.Fatalf("%d DescribeTargets calls for %d callers", got, n)
	}
}

// TestDescribeLoadBalancerOver20IDs: more than 20 distinct ids in a window
// are split into calls of at most 20, as the API requires (the emulator
// refuses more, so every call answering OK shows the split). On a busy
// machine the 45 callers may straddle two windows: a call more is fine.
func TestDescribeLoadBalancerOver20IDs(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{BatchWindow: 200 * time.Millisecond})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for i := range 45 {
		wg.Go(func() {
			if _, err := c.DescribeLoadBalancer(ctx, fmt.Sprintf("lb-none%04d", i)); !IsNotFound(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
	wg.Wait()
	calls := e.Calls()["DescribeLoadBalancers"]
	if calls["OK"] < 3 || calls["OK"] > 5 || len(calls) != 1 {
		t.Fatalf("calls = %v, want 3 to 5, all OK (45 ids by at most 20)", calls)
	}
}

// TestDescribeIsolatesAnInvalidCall: when the API refuses a coalesced
// describe as Invalid (as it would for one malformed id), the ids are asked
// again in halves so the callers with good ids still get their answer.
func TestDescribeIsolatesAnInvalidCall(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{BatchWindow: 50 * time.Millisecond})
	ctx := testCtx(t)
	lbs := []string{createLB(t, c, "iso-a"), createLB(t, c, "iso-b")}
	e.ResetCounters()
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{
		{Action: "DescribeLoadBalancers", Code: "InvalidParameter.FormatError", Count: 1},
	}}))
	var wg sync.WaitGroup
	for _, id := range append(lbs, "lb-missing0") {
		wg.Go(func() {
			lb, err := c.DescribeLoadBalancer(ctx, id)
			switch {
			case id == "lb-missing0":
				if !IsNotFound(err) {
					t.Errorf("%s: %v", id, err)
				}
			case err != nil || Deref(lb.LoadBalancerId) != id:
				t.Errorf("%s: %v", id, err)
			}
		})
	}
	wg.Wait()
	if got := e.Calls()["DescribeLoadBalancers"]; got["InvalidParameter.FormatError"] != 1 || got["OK"] != 2 {
		t.Fatalf("calls = %v, want one refused batch then its two halves", got)
	}
}

func TestTargetValidation(t *testing.T) {
	for _, bad := range []Target{
		{EniIP: "10.0.0.1", Port: 80},
		{ListenerID: "lbl-1", Port: 80},
		{ListenerID: "lbl-1", EniIP: "10.0.0.1", InstanceID: "ins-1", Port: 80},
		{ListenerID: "lbl-1", EniIP: "10.0.0.1", Port: 0},
		{ListenerID: "lbl-1", EniIP: "10.0.0.1", Port: 65536},
		{ListenerID: "lbl-1", EniIP: "10.0.0.1", Port: 80, Weight: Ptr(int64(101))},
	} {
		if bad.problem() == "" {
			t.Errorf("%+v passed validation", bad)
		}
	}
	if p := (Target{ListenerID: "lbl-1", EniIP: "10.0.0.1", Port: 80, Weight: Ptr(int64(0))}).problem(); p != "" {
		t.Errorf("weight 0 is valid: %s", p)
	}
	c := &Client{}
	if _, err := c.RegisterTargets(testCtx(t), "lb-1", []Target{{ListenerID: "lbl-1", Port: 80}}); !IsInvalid(err) {
		t.Errorf("an invalid target must be refused before batching: %v", err)
	}
	if task, err := c.RegisterTargets(testCtx(t), "lb-1", nil); err != nil || task != "" {
		t.Errorf("no targets is a no-op, got %q, %v", task, err)
	}
}

func TestCoalescedCallHonoursContext(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{BatchWindow: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := c.DescribeLoadBalancer(ctx, "lb-whatever")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "cannot describe load balancer: ") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(began) > 500*time.Millisecond {
		t.Fatal("the caller waited for the window despite its context")
	}
	time.Sleep(1200 * time.Millisecond) // the window closes with nobody waiting
	if n := e.CallCount("DescribeLoadBalancers"); n != 0 {
		t.Fatalf("%d calls made for a caller who left", n)
	}
}

// TestDeregisterNotStalledBySharedRefusal: callers whose registrations
// share a refused target (one already bound) once kept the load balancer's
// lock for the whole flush timeout, retrying halves that never shrank, and
// a deregistration on that load balancer waited as long and then failed
// with "context deadline exceeded". Now the registration flush isolates
// the refused target in a few calls and the deregistration goes through
// at once.
func TestDeregisterNotStalledBySharedRefusal(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{TargetBatchWindow: 50 * time.Millisecond, RequestTimeout: 5 * time.Second})
	ctx := testCtx(t)
	lb := createLB(t, c, "stall")
	ls := createListeners(t, c, lb, "TCP", 80, 81)
	taken := Target{ListenerID: ls[0], EniIP: "10.0.0.1", Port: 80}
	leaving := Target{ListenerID: ls[1], EniIP: "10.0.0.2", Port: 80}
	_, err := c.RegisterTargets(ctx, lb, []Target{taken, leaving})
	must(t, err)
	e.ResetCounters()

	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		// Each caller asks for the already bound target and one of its own.
		own := Target{ListenerID: ls[0], EniIP: fmt.Sprintf("10.0.1.%d", i+1), Port: 80}
		wg.Go(func() { _, errs[i] = c.RegisterTargets(ctx, lb, []Target{taken, own}) })
	}
	time.Sleep(10 * time.Millisecond) // the registrations' window opens first
	var deregErr error
	var deregTook time.Duration
	wg.Go(func() {
		s := time.Now()
		_, deregErr = c.DeregisterTargets(ctx, lb, []Target{leaving})
		deregTook = time.Since(s)
	})
	wg.Wait()
	took := time.Since(began)
	t.Logf("registrations and the deregistration done in %s (deregistration %s); calls %v", took, deregTook, e.Calls())
	must(t, deregErr)
	if deregTook > 3*time.Second {
		t.Errorf("the deregistration took %s", deregTook)
	}
	for i, err := range errs {
		if !IsInvalid(err) {
			t.Errorf("caller %d asked for a bound target: got %v, want Invalid", i, err)
		}
	}
	// 9 targets on one listener: 1 + 2·ceil(log2 9) calls at most.
	if calls := e.CallCount("BatchRegisterTargets"); calls > 9 {
		t.Errorf("%d BatchRegisterTargets calls", calls)
	}
}

// TestDescribeListenersTargets: the targets of 45 listeners of one load
// balancer come in ceil(45/20) = 3 DescribeTargets calls, each listener
// with its own targets, and a listener that does not exist is absent.
func TestDescribeListenersTargets(t *testing.T) {
	e, c := start(t, emulator.DefaultConfig(), Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "audit")
	var ls []string
	for first := int64(1000); first < 1045; first += 15 {
		var ports []int64
		for p := first; p < first+15; p++ {
			ports = append(ports, p)
		}
		ls = append(ls, createListeners(t, c, lb, "TCP", ports...)...)
	}
	var ts []Target
	for i, l := range ls {
		ts = append(ts, Target{ListenerID: l, EniIP: fmt.Sprintf("10.1.0.%d", i+1), Port: 80})
	}
	_, err := c.RegisterTargets(ctx, lb, ts)
	must(t, err)
	e.ResetCounters()

	got, err := c.DescribeListenersTargets(ctx, lb, append(slices.Clone(ls), "lbl-missing"))
	must(t, err)
	if n := e.CallCount("DescribeTargets"); n != 3 {
		t.Errorf("%d DescribeTargets calls for %d listeners, want 3", n, len(ls)+1)
	}
	if len(got) != len(ls) {
		t.Fatalf("%d listeners answered, want %d", len(got), len(ls))
	}
	for i, l := range ls {
		b := got[l]
		if b == nil || len(b.Targets) != 1 || len(b.Targets[0].PrivateIpAddresses) != 1 ||
			*b.Targets[0].PrivateIpAddresses[0] != fmt.Sprintf("10.1.0.%d", i+1) {
			t.Errorf("listener %s: %+v", l, b)
		}
	}
	if _, err := c.DescribeListenersTargets(ctx, "lb-missing", ls[:1]); !IsNotFound(err) {
		t.Errorf("a missing load balancer: %v, want NotFound", err)
	}
}

// TestDescribeRetriesTransientErrors: a read that fails for a reason
// waiting can fix is sent again, so one dropped connection or
// InternalError does not fail a reconcile that reads many things.
func TestDescribeRetriesTransientErrors(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "read-retry")
	e.ResetCounters()
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{
		{Action: "DescribeLoadBalancers", Code: "InternalError", Count: 1},
		{Action: "DescribeLoadBalancers", Drop: true, Count: 1},
	}}))
	got, err := c.DescribeLoadBalancer(ctx, lb)
	if err != nil || Deref(got.LoadBalancerId) != lb {
		t.Fatalf("DescribeLoadBalancer: %v", err)
	}
	if calls := e.Calls()["DescribeLoadBalancers"]; calls["OK"] != 1 || e.CallCount("DescribeLoadBalancers") != 3 {
		t.Fatalf("DescribeLoadBalancers calls %v, want two failures, then the answer", calls)
	}
}

// locksReleased waits, within a bound, until no load balancer lock is held
// or waited for: a batch's callers get their answers before its flush
// releases the lock, so right after they return it may still be held.
func locksReleased(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n := c.s.locks.size(); n != 0; n = c.s.locks.size() {
		if time.Now().After(deadline) {
			t.Fatalf("%d load balancer locks still held 10 s after the batches", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
