package emulator_test

import (
	"strings"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func TestFaultRulesByActionAndCode(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "faulty")
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{
		{Action: "CreateListener", Code: "InternalError", Message: "boom", Count: 2},
		{Action: "DescribeQuota", Code: "ResourceUnavailable", Rate: 1},
	}}))
	for range 2 {
		_, err := c.CreateListener(newCreateListener(lb, "TCP", 80))
		if msg := wantCode(t, err, clb.INTERNALERROR); msg != "boom" {
			t.Fatalf("message %q", msg)
		}
	}
	createListeners(t, c, lb, "TCP", 80) // Count exhausted
	wantCode(t, describeQuota(c), clb.RESOURCEUNAVAILABLE)
	_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
	must(t, err) // other actions untouched

	if got := e.Calls()["CreateListener"]; got["InternalError"] != 2 || got["OK"] != 1 {
		t.Fatalf("CreateListener counters %v", got)
	}
	must(t, e.SetFaults(emulator.Faults{}))
	must(t, describeQuota(c))
	if err := e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Rate: 2}}}); err == nil {
		t.Fatalf("a rate of 2 was accepted")
	}
}

func TestFaultErrorRate(t *testing.T) {
	e, _, c := env(t, instant())
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "*", Code: "InternalError", Rate: 0.5}}}))
	failed := 0
	for range 200 {
		if describeQuota(c) != nil {
			failed++
		}
	}
	if failed < 60 || failed > 140 {
		t.Fatalf("%d of 200 calls failed at rate 0.5", failed)
	}
}

func TestBusyStorm(t *testing.T) {
	e, _, c := env(t, instant())
	a, b := createLB(t, c, "a"), createLB(t, c, "b")
	must(t, e.SetFaults(emulator.Faults{BusyStorm: &emulator.BusyStorm{LoadBalancerIds: []string{a}, Seconds: 0.3}}))
	_, err := c.CreateListener(newCreateListener(a, "TCP", 80))
	if msg := wantCode(t, err, clb.FAILEDOPERATION_RESOURCEINOPERATING); !strings.Contains(msg, a) {
		t.Fatalf("busy message %q does not name %s", msg, a)
	}
	createListeners(t, c, b, "TCP", 80) // not in the storm
	time.Sleep(350 * time.Millisecond)
	createListeners(t, c, a, "TCP", 80) // the storm is over
}

func TestDroppedConnection(t *testing.T) {
	e, _, c := env(t, instant())
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "DescribeQuota", Drop: true, Count: 1}}}))
	err := describeQuota(c)
	if got := code(err); got != "ClientError.NetworkError" {
		t.Fatalf("dropped connection surfaced as %q (%v)", got, err)
	}
	must(t, describeQuota(c))
	if e.Calls()["DescribeQuota"]["ConnectionDropped"] != 1 {
		t.Fatalf("counters %v", e.Calls()["DescribeQuota"])
	}
}

func TestPanicBecomesInternalError(t *testing.T) {
	e, _, c := env(t, instant())
	must(t, e.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "DescribeQuota", Panic: true, Count: 1}}}))
	wantCode(t, describeQuota(c), clb.INTERNALERROR)
	must(t, describeQuota(c)) // the server survived
	if e.PanicCount() != 1 {
		t.Fatalf("PanicCount = %d", e.PanicCount())
	}
}

func TestLatency(t *testing.T) {
	e, _, c := env(t, instant())
	// The per-action latency is far above the base one, so that telling
	// them apart needs no tight bound on a busy machine.
	e.SetLatency(30*time.Millisecond, map[string]time.Duration{"DescribeQuota": time.Second})
	start := time.Now()
	must(t, describeQuota(c))
	if d := time.Since(start); d < 1030*time.Millisecond {
		t.Fatalf("DescribeQuota took %v, want at least 1.03s (base + its own latency)", d)
	}
	start = time.Now()
	_, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest())
	must(t, err)
	if d := time.Since(start); d < 30*time.Millisecond || d >= time.Second {
		t.Fatalf("DescribeLoadBalancers took %v, want the base 30ms (and not DescribeQuota's second)", d)
	}
}

// TestFaultDelays: a delay rule holds its action's calls for a time within
// its range, leaves other actions alone, and every injected fault is
// counted by kind.
func TestFaultDelays(t *testing.T) {
	e, _, c := env(t, instant())
	must(t, e.SetFaults(emulator.Faults{
		Delays: []emulator.FaultDelay{{Action: "DescribeQuota", MinSeconds: 0.2, MaxSeconds: 0.3}},
		Rules:  []emulator.FaultRule{{Action: "DescribeLoadBalancers", Drop: true, Count: 1}},
	}))
	start := time.Now()
	must(t, describeQuota(c))
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("DescribeQuota took %v, want at least the rule's 200ms", d)
	}
	if _, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest()); code(err) != "ClientError.NetworkError" {
		t.Fatalf("DescribeLoadBalancers: %v, want a dropped connection", err)
	}
	if got := e.FaultsInjected(); got["Delay"] != 1 || got["ConnectionDropped"] != 1 || len(got) != 2 {
		t.Fatalf("FaultsInjected = %v, want one Delay and one ConnectionDropped", got)
	}
	e.ResetCounters()
	if got := e.FaultsInjected(); len(got) != 0 {
		t.Fatalf("FaultsInjected after ResetCounters = %v", got)
	}
	if err := e.SetFaults(emulator.Faults{Delays: []emulator.FaultDelay{{MinSeconds: 2, MaxSeconds: 1}}}); err == nil {
		t.Fatal("a delay range of 2 to 1 s was accepted")
	}
}
