package clb

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

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
	if Classify(err) != Throttled {
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
