package vpc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// start serves an emulator with cfg and returns it with a client of a
// fresh pool built with o.
func start(t *testing.T, cfg emulator.Config, o Options) (*emulator.Emulator, *Client) {
	t.Helper()
	e, endpoint := emulatortest.Start(t, cfg)
	if o.Transport == nil {
		tr := tcapi.NewTransport()
		o.Transport = tr
		t.Cleanup(tr.CloseIdleConnections)
	}
	c, err := NewPool(o).Client(clients.Config{
		SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey,
		Region: emulator.DefaultRegion, Endpoint: endpoint, Scheme: "http",
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, c
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitTask polls TaskDone until the task ends; the emulator's tasks take
// tens of milliseconds.
func waitTask(t *testing.T, c *Client, task string) {
	t.Helper()
	ctx := testCtx(t)
	for {
		done, err := c.TaskDone(ctx, task)
		must(t, err)
		if done {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("task %s never ended", task)
		}
	}
}

func allocate(t *testing.T, c *Client, n int64) []string {
	t.Helper()
	ids, task, err := c.Allocate(testCtx(t), AllocateRequest{Count: n, Name: "test", Tags: map[string]string{"team": "games"}})
	must(t, err)
	waitTask(t, c, task)
	return ids
}

// TestLifecycle allocates an EIP, finds it by id and by tag, binds it to
// an ENI's private IP found by that IP, renames, unbinds and releases it.
func TestLifecycle(t *testing.T) {
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	e, c := start(t, cfg, Options{})
	ctx := testCtx(t)

	ids, task, err := c.Allocate(ctx, AllocateRequest{Name: "web", ISP: "BGP", ChargeType: "TRAFFIC_POSTPAID_BY_HOUR", Bandwidth: 10,
		Tags: map[string]string{"owner": "uid-1"}})
	must(t, err)
	if len(ids) != 1 || task == "" {
		t.Fatalf("Allocate = %v, %q", ids, task)
	}
	waitTask(t, c, task)
	got, err := c.Describe(ctx, ids)
	must(t, err)
	if len(got) != 1 || got[0].PublicIP == "" || got[0].Status != StatusUnbind || got[0].Bandwidth != 10 || got[0].ISP != "BGP" ||
		got[0].Name != "web" || got[0].Tags["owner"] != "uid-1" {
		t.Fatalf("Describe = %+v", got)
	}
	byTag, err := c.DescribeByTag(ctx, "owner", "uid-1")
	must(t, err)
	if len(byTag) != 1 || byTag[0].ID != ids[0] {
		t.Fatalf("DescribeByTag = %+v", byTag)
	}

	eni := emulatortest.AddENI(t, e, "", "10.0.0.5")
	found, err := c.ENIOf(ctx, "10.0.0.5")
	must(t, err)
	if found != eni {
		t.Fatalf("ENIOf = %q, want %q", found, eni)
	}
	if _, err := c.ENIOf(ctx, "10.9.9.9"); !IsNotFound(err) {
		t.Fatalf("ENIOf of an unknown IP = %v, want NotFound", err)
	}
	task, err = c.Associate(ctx, ids[0], eni, "10.0.0.5")
	must(t, err)
	// A bound address cannot be released: Busy (a state to wait out).
	if _, err := c.Release(ctx, ids); !IsBusy(err) {
		t.Fatalf("Release while binding = %v, want Busy", err)
	}
	waitTask(t, c, task)
	got, err = c.Describe(ctx, ids)
	must(t, err)
	if got[0].ENIID != eni || got[0].PrivateIP != "10.0.0.5" {
		t.Fatalf("after Associate: %+v", got[0])
	}
	must(t, c.Rename(ctx, ids[0], "web-2"))
	task, err = c.Disassociate(ctx, ids[0])
	must(t, err)
	waitTask(t, c, task)
	task, err = c.Release(ctx, ids)
	must(t, err)
	waitTask(t, c, task)
	if got, err := c.Describe(ctx, ids); err != nil || len(got) != 0 {
		t.Fatalf("after Release: %+v, %v", got, err)
	}
	if _, ok := e.Inventory().EIP(ids[0]); ok {
		t.Fatal("the emulator still holds the released address")
	}
	if _, err := c.Disassociate(ctx, ids[0]); !IsNotFound(err) {
		t.Fatalf("Disassociate of a released address = %v, want NotFound", err)
	}
}

// TestDescribeCoalesced: N concurrent single-id Describes become
// ⌈N/100⌉ DescribeAddresses calls, and each caller gets its own address;
// a malformed id fails only its caller.
func TestDescribeCoalesced(t *testing.T) {
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 0
	cfg.EIPQuota = 300
	const n = 250
	// The callers wait at a barrier and are released at once, well within
	// the window. The first 100 are sent as soon as they are in; the next
	// group takes everyone who arrives while that call is out and is sent,
	// in calls of 100, when it returns; on a busy machine some callers
	// arrive only after that and make one group more.
	e, c := start(t, cfg, Options{BatchWindow: 2 * time.Second})
	ids := allocate(t, c, 100)
	ids = append(ids, allocate(t, c, 100)...)
	ids = append(ids, allocate(t, c, n-200)...)
	// Answered calls: the emulator's own rate limit may refuse some,
	// which the client sends again.
	answered := func() int { return e.Calls()["DescribeAddresses"]["OK"] }
	before := answered()

	var wg sync.WaitGroup
	errs := make([]error, n+1)
	release := make(chan struct{})
	for i := range n + 1 {
		wg.Go(func() {
			<-release
			id := "eip-bad"
			if i < n {
				id = ids[i]
			}
			got, err := c.Describe(testCtx(t), []string{id})
			switch {
			case err != nil:
				errs[i] = err
			case len(got) != 1 || got[0].ID != id:
				errs[i] = fmt.Errorf("Describe(%s) = %+v", id, got)
			}
		})
	}
	close(release)
	wg.Wait()
	for i, err := range errs[:n] {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if !IsInvalid(errs[n]) {
		t.Errorf("the caller of a malformed id got %v, want Invalid", errs[n])
	}
	// 251 distinct ids: three chunks of ≤100, the one holding the bad id
	// halved down to it (about 2·log2(51) more calls).
	calls := answered() - before
	if calls < 3 || calls > 3+2*7 {
		t.Errorf("%d DescribeAddresses calls for %d concurrent callers, want 3 plus the isolation of one bad id", calls, n+1)
	}

	// Without the bad id: ⌈N/100⌉ calls, one more for late callers.
	before = answered()
	release = make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-release
			if _, err := c.Describe(testCtx(t), []string{ids[i]}); err != nil {
				t.Error(err)
			}
		})
	}
	close(release)
	wg.Wait()
	calls = answered() - before
	t.Logf("%d concurrent callers: %d DescribeAddresses calls", n, calls)
	if least := (n + 99) / 100; calls < least || calls > least+1 {
		t.Errorf("%d DescribeAddresses calls for %d concurrent callers, want %d (or one more for late callers)", calls, n, least)
	}
}

// TestReleaseCoalesced: concurrent Releases share ReleaseAddresses calls,
// and one address still bound fails only its caller.
func TestReleaseCoalesced(t *testing.T) {
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 0
	cfg.EIPQuota = 100
	e, c := start(t, cfg, Options{BatchWindow: 300 * time.Millisecond})
	ctx := testCtx(t)
	ids := allocate(t, c, 40)
	eni := emulatortest.AddENI(t, e, "", "10.0.0.7")
	task, err := c.Associate(ctx, ids[0], eni, "10.0.0.7")
	must(t, err)
	waitTask(t, c, task)

	before := e.CallCount("ReleaseAddresses")
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() { _, errs[i] = c.Release(ctx, []string{id}) })
	}
	wg.Wait()
	if !IsBusy(errs[0]) {
		t.Errorf("releasing the bound address = %v, want Busy", errs[0])
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Errorf("release %s: %v", ids[i+1], err)
		}
	}
	// One call for 40, then halving around the bound one: ≤ 1 + 2·log2(40).
	if calls := e.CallCount("ReleaseAddresses") - before; calls > 1+2*6 {
		t.Errorf("%d ReleaseAddresses calls for %d concurrent callers", calls, len(ids))
	}
	if inv := e.Inventory(); len(inv.EIPs) != 1 || inv.EIPs[0].ID != ids[0] {
		t.Errorf("left in the cloud: %+v, want only the bound %s", inv.EIPs, ids[0])
	}
	if _, err := c.Release(ctx, ids[1:2]); !IsNotFound(err) {
		t.Errorf("releasing a released address = %v, want NotFound", err)
	}
}

// TestErrorClasses: quota, daily limit, malformed id and throttling as the
// emulator answers them.
func TestErrorClasses(t *testing.T) {
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 0
	cfg.EIPQuota = 2
	cfg.EIPDailyAllocateLimit = 3
	e, c := start(t, cfg, Options{})
	ctx := testCtx(t)

	ids := allocate(t, c, 2)
	_, _, err := c.Allocate(ctx, AllocateRequest{})
	if !IsQuotaExceeded(err) || IsDailyLimit(err) {
		t.Fatalf("Allocate over the quota = %v, want QuotaExceeded", err)
	}
	task, err := c.Release(ctx, ids[:1])
	must(t, err)
	waitTask(t, c, task)
	allocate(t, c, 1) // the third of the day
	task, err = c.Release(ctx, ids[1:])
	must(t, err)
	waitTask(t, c, task)
	_, _, err = c.Allocate(ctx, AllocateRequest{})
	if !IsDailyLimit(err) || IsQuotaExceeded(err) {
		t.Fatalf("Allocate over the daily limit = %v, want DailyLimit", err)
	}
	if _, err := c.Associate(ctx, "eip-nope", "eni-x", "10.0.0.1"); !IsInvalid(err) {
		t.Fatalf("Associate of a malformed id = %v, want Invalid", err)
	}
	if _, err := c.Associate(ctx, "eip-0000aaaa", "eni-x", "10.0.0.1"); !IsNotFound(err) {
		t.Fatalf("Associate of an unknown address = %v, want NotFound", err)
	}
	if _, err := c.TaskDone(ctx, "not-a-number"); !IsInvalid(err) {
		t.Fatalf("TaskDone of a bad id = %v, want Invalid", err)
	}

	// Throttling is retried: a few refusals are absorbed, endless ones
	// come back Throttled.
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "DescribeAddresses", Code: "RequestLimitExceeded", Count: 2}}}))
	before := e.CallCount("DescribeAddresses")
	if _, err := c.DescribeByTag(ctx, "team", "x"); err != nil {
		t.Fatalf("two refusals must be retried: %v", err)
	}
	if got := e.CallCount("DescribeAddresses") - before; got != 3 {
		t.Fatalf("sent %d times, want 3", got)
	}
	if c.CurrentRate("DescribeAddresses") >= tcapi.DefaultRate {
		t.Fatal("a throttled action must slow down")
	}
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "ModifyAddressAttribute", Code: "RequestLimitExceeded"}}}))
	if err := c.Rename(ctx, "eip-0000aaaa", "x"); !IsThrottled(err) {
		t.Fatalf("endless throttling = %v, want Throttled", err)
	}
}
