package clb

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// fakeClock is a settable clock for the limiter's arithmetic.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Add(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func TestAdaptiveRate(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	l := newLimiters(clk.Now, 20, map[string]float64{"DescribeTaskStatus": 50})
	if got := l.current("CreateListener"); got != 20 {
		t.Fatalf("default rate = %v", got)
	}
	if got := l.current("DescribeTaskStatus"); got != 50 {
		t.Fatalf("override rate = %v", got)
	}

	l.throttled("CreateListener")
	if got := l.current("CreateListener"); got != 10 {
		t.Fatalf("after throttling = %v, want 10", got)
	}
	// A burst of refusals within the hold counts once.
	l.throttled("CreateListener")
	l.throttled("CreateListener")
	if got := l.current("CreateListener"); got != 10 {
		t.Fatalf("after a burst of refusals = %v, want 10", got)
	}
	if got := l.current("DescribeTaskStatus"); got != 50 {
		t.Fatalf("other actions must not slow down, got %v", got)
	}

	// Still refused after the hold: halve again.
	clk.Add(throttleHold)
	l.throttled("CreateListener")
	if got := l.current("CreateListener"); got != 5 {
		t.Fatalf("second halving = %v, want 5", got)
	}
	// Held, then +10 % of 20 (2/s) per second back up to 20.
	clk.Add(throttleHold)
	if got := l.current("CreateListener"); got != 5 {
		t.Fatalf("during hold = %v, want 5", got)
	}
	clk.Add(2 * time.Second)
	if got := l.current("CreateListener"); got < 8.99 || got > 9.01 {
		t.Fatalf("recovering = %v, want 9", got)
	}
	clk.Add(time.Minute)
	if got := l.current("CreateListener"); got != 20 {
		t.Fatalf("recovered = %v, want 20", got)
	}

	// Never below 1/16 of the configured rate.
	for range 10 {
		clk.Add(throttleHold)
		l.throttled("CreateListener")
	}
	if got := l.current("CreateListener"); got != 20.0/16 {
		t.Fatalf("floor = %v, want %v", got, 20.0/16)
	}
}

func TestRateLimitWaitHonoursContext(t *testing.T) {
	l := newLimiters(time.Now, 1, nil)
	must(t, l.wait(context.Background(), "A")) // the one token of the burst
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := l.wait(ctx, "A"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait = %v, want deadline exceeded", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("wait ignored the context for %v", took)
	}
}

// TestThrottledCallsSucceed lets a client that believes in 20 req/s meet a
// cloud that allows 5: every call must still succeed, the cloud must have
// refused some, and the client must have slowed down.
func TestThrottledCallsSucceed(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := emulator.Config{ActionRateLimit: map[string]float64{"DescribeQuota": 5}}
	e, c := start(t, cfg, Options{Rate: 20, Registerer: reg})
	ctx := testCtx(t)

	const n = 25
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range n {
		wg.Go(func() {
			if _, err := c.DescribeQuota(ctx); err != nil {
				failed.Add(1)
				t.Errorf("DescribeQuota: %v", err)
			}
		})
	}
	wg.Wait()
	calls := e.Calls()["DescribeQuota"]
	if calls["OK"] != n || failed.Load() != 0 {
		t.Fatalf("OK answers = %d, failures = %d, want %d and 0", calls["OK"], failed.Load(), n)
	}
	if calls["RequestLimitExceeded"] == 0 {
		t.Fatal("the emulator never throttled; the test proves nothing")
	}
	if got := c.CurrentRate("DescribeQuota"); got >= 20 {
		t.Fatalf("client rate = %v, want lowered below 20", got)
	}
	if got := c.CurrentRate("DescribeLoadBalancers"); got != 20 {
		t.Fatalf("an unthrottled action slowed down too: %v", got)
	}
	if v := counterValue(t, reg, "tencentcloud_api_throttled_total", map[string]string{"action": "DescribeQuota"}); int(v) != calls["RequestLimitExceeded"] {
		t.Fatalf("throttled_total = %v, emulator refused %d", v, calls["RequestLimitExceeded"])
	}
}

func TestThrottlingGivesUpAfterMaxTries(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{MaxTries: 3})
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "DescribeQuota", Code: "RequestLimitExceeded"}}}))
	_, err := c.DescribeQuota(testCtx(t))
	if !IsThrottled(err) {
		t.Fatalf("err = %v, want Throttled", err)
	}
	if got := e.CallCount("DescribeQuota"); got != 3 {
		t.Fatalf("sent %d times, want 3", got)
	}
	// A sub-code is throttling too (the SDK's own retry ignores it).
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "DescribeQuota", Code: "RequestLimitExceeded.UinLimitExceeded", Count: 1}}}))
	if _, err := c.DescribeQuota(testCtx(t)); err != nil {
		t.Fatalf("one refusal with a sub-code must be retried: %v", err)
	}
}
