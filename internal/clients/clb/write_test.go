package clb

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestOneWriterPerLoadBalancer sends two writes to one load balancer at
// once while CLB tasks take 300 ms: one is sent, the other is refused
// locally as Busy, and the cloud never has to answer ResourceInOperating.
func TestOneWriterPerLoadBalancer(t *testing.T) {
	e, c := start(t, emulator.Config{TaskDuration: 300 * time.Millisecond}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "writer")
	e.ResetCounters()

	var wg sync.WaitGroup
	errs := make([]error, 2)
	tasks := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			_, tasks[i], errs[i] = c.CreateListener(ctx, listenerRequest(lb, "TCP", int64(8000+i)))
		})
	}
	wg.Wait()

	var ok, busy int
	var task string
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
			task = tasks[i]
		case IsBusy(err) && Code(err) == "":
			busy++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 1 || busy != 1 {
		t.Fatalf("ok = %d, busy = %d; want one of each", ok, busy)
	}
	calls := e.Calls()
	if n := calls["CreateListener"][codeResourceInOperating]; n != 0 {
		t.Fatalf("the emulator answered ResourceInOperating %d times", n)
	}
	if n := e.CallCount("CreateListener"); n != 1 {
		t.Fatalf("CreateListener sent %d times, want 1", n)
	}

	// Busy again until the task ends, without sending the write.
	if _, _, err := c.CreateListener(ctx, listenerRequest(lb, "TCP", 8002)); !IsBusy(err) {
		t.Fatalf("write during the task: %v", err)
	}
	if st := waitTask(t, c, task); st != TaskSucceeded {
		t.Fatalf("task %s", st)
	}
	if c.s.tasks.size() != 0 {
		t.Fatal("a finished task is still remembered")
	}
	if _, _, err := c.CreateListener(ctx, listenerRequest(lb, "TCP", 8002)); err != nil {
		t.Fatalf("write after the task: %v", err)
	}
	if n := e.CallCount("CreateListener"); n != 2 {
		t.Fatalf("CreateListener sent %d times, want 2", n)
	}
	if n := c.s.locks.size(); n != 0 {
		t.Fatalf("%d locks left after use", n)
	}
}

// TestBusyFromTheCloud: a task started by another process (another pool)
// makes the cloud answer ResourceInOperating, which is Busy as well.
func TestBusyFromTheCloud(t *testing.T) {
	e, c := start(t, emulator.Config{TaskDuration: 300 * time.Millisecond}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "foreign")
	other, err := newTestPool(t, Options{}).Client(testConfig(e.Endpoint()))
	must(t, err)
	if _, _, err := other.CreateListener(ctx, listenerRequest(lb, "TCP", 9000)); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.CreateListener(ctx, listenerRequest(lb, "TCP", 9001))
	if !IsBusy(err) || Code(err) != codeResourceInOperating {
		t.Fatalf("err = %v, want the cloud's ResourceInOperating as Busy", err)
	}
	if after, ok := NotYet(err); !ok || after <= 0 {
		t.Fatal("Busy is not yet, with a retry hint")
	}
}

// TestTaskFlow: a write returns its task, which is Running, then Succeeded;
// a failed task reports Failed and the cloud's message.
func TestTaskFlow(t *testing.T) {
	e, c := start(t, emulator.Config{TaskDuration: 200 * time.Millisecond}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "tasks")

	ids, task, err := c.CreateListener(ctx, listenerRequest(lb, "UDP", 7000, 7001))
	must(t, err)
	if len(ids) != 2 || task == "" {
		t.Fatalf("ids %v task %q", ids, task)
	}
	st, _, err := c.TaskStatus(ctx, task)
	must(t, err)
	if st != TaskRunning {
		t.Fatalf("right after the write the task is %s", st)
	}
	if st := waitTask(t, c, task); st != TaskSucceeded {
		t.Fatalf("task ended %s", st)
	}

	must(t, e.SetFaults(emulator.Faults{TaskFailureRate: 1, TaskFailureActions: []string{"DeleteListener"}, TaskFailureMessage: "backend refused"}))
	task, err = c.DeleteListener(ctx, lb, ids[0])
	must(t, err)
	if st := waitTask(t, c, task); st != TaskFailed {
		t.Fatalf("injected failure ended %s", st)
	}
	_, msg, err := c.TaskStatus(ctx, task)
	if err != nil || msg != "backend refused" {
		t.Fatalf("message %q, err %v", msg, err)
	}

	if _, _, err := c.TaskStatus(ctx, "00000000-0000-0000-0000-000000000000"); !IsInvalid(err) {
		t.Fatalf("unknown task: %v", err)
	}
}

// TestLockWaitHonoursContext: a writer queued behind another gives up when
// its context ends, and leaves no lock behind.
func TestLockWaitHonoursContext(t *testing.T) {
	l := newLBLocks()
	unlock, err := l.lock(context.Background(), "lb-1")
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := l.lock(ctx, "lb-1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock = %v", err)
	}
	if l.size() != 1 {
		t.Fatalf("size while held = %d", l.size())
	}
	unlock()
	unlock() // idempotent
	if l.size() != 0 {
		t.Fatalf("size after release = %d", l.size())
	}

	// Many writers on many load balancers: serialised per id, map empty after.
	var mu sync.Mutex
	inside := map[string]int{}
	var wg sync.WaitGroup
	for i := range 200 {
		id := []string{"lb-a", "lb-b", "lb-c"}[i%3]
		wg.Go(func() {
			unlock, err := l.lock(context.Background(), id)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside[id]++
			if inside[id] > 1 {
				t.Errorf("two writers inside %s", id)
			}
			mu.Unlock()
			time.Sleep(100 * time.Microsecond)
			mu.Lock()
			inside[id]--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if l.size() != 0 {
		t.Fatalf("%d locks left", l.size())
	}
}

// TestCreateLoadBalancerIdempotent: the same ClientToken twice gives one
// load balancer, which its tag finds.
func TestCreateLoadBalancerIdempotent(t *testing.T) {
	// The create's task lasts long enough for the Busy check below to run
	// inside it on a loaded machine (50 ms did not, at a load of 50).
	cfg := emulator.DefaultConfig()
	cfg.ActionTaskDuration = map[string]time.Duration{"CreateLoadBalancer": 3 * time.Second}
	e, c := start(t, cfg, Options{})
	ctx := testCtx(t)
	newReq := func() *clbsdk.CreateLoadBalancerRequest {
		req := clbsdk.NewCreateLoadBalancerRequest()
		req.LoadBalancerType = Ptr("OPEN")
		req.LoadBalancerName = Ptr("idem")
		req.ClientToken = Ptr("uid-1234")
		req.Tags = []*clbsdk.TagInfo{{TagKey: Ptr("crossplane-uid"), TagValue: Ptr("uid-1234")}}
		return req
	}
	ids1, task1, err := c.CreateLoadBalancer(ctx, newReq())
	must(t, err)
	ids2, _, err := c.CreateLoadBalancer(ctx, newReq())
	must(t, err)
	if len(ids1) != 1 || len(ids2) != 1 || ids1[0] != ids2[0] {
		t.Fatalf("ids %v then %v; want the same single load balancer", ids1, ids2)
	}
	if n := len(e.Inventory().LoadBalancers); n != 1 {
		t.Fatalf("inventory holds %d load balancers", n)
	}
	// The new load balancer refuses writes until created: locally Busy.
	if _, _, err := c.CreateListener(ctx, listenerRequest(ids1[0], "TCP", 80)); !IsBusy(err) {
		t.Fatalf("write to a creating LB: %v", err)
	}
	waitTask(t, c, task1)

	found, err := c.FindLoadBalancersByTag(ctx, "crossplane-uid", "uid-1234")
	must(t, err)
	if len(found) != 1 || Deref(found[0].LoadBalancerId) != ids1[0] {
		t.Fatalf("FindLoadBalancersByTag = %d results", len(found))
	}
	none, err := c.FindLoadBalancersByTag(ctx, "crossplane-uid", "other")
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("found %d load balancers for another uid", len(none))
	}
}
