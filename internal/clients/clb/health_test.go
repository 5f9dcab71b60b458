package clb

import (
	"sync"
	"testing"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestDescribeListenerHealthCoalesces: many callers asking for the health
// of listeners of one load balancer share one DescribeTargetHealth, each
// gets its own listener, and an unknown listener is NotFound.
func TestDescribeListenerHealthCoalesces(t *testing.T) {
	e, c := start(t, emulator.DefaultConfig(), Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "health")
	ls := createListeners(t, c, lb, "TCP", 81, 82, 83)
	_, err := c.RegisterTargets(ctx, lb, []Target{{ListenerID: ls[1], EniIP: "10.0.0.5", Port: 80, Weight: Ptr(int64(10))}})
	must(t, err)
	e.SetTargetHealth("10.0.0.5", 80, false)
	before := e.CallCount("DescribeTargetHealth")

	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			id := ls[i%3]
			h, err := c.DescribeListenerHealth(ctx, lb, id)
			if err != nil || Deref(h.ListenerId) != id {
				t.Errorf("health of %s: %v", id, err)
				return
			}
			if id != ls[1] {
				return
			}
			if len(h.Rules) != 1 || len(h.Rules[0].Targets) != 1 || *h.Rules[0].Targets[0].HealthStatus {
				t.Errorf("health of %s: %+v, want one Dead target", id, h.Rules)
			}
		})
	}
	wg.Go(func() {
		if _, err := c.DescribeListenerHealth(ctx, lb, "lbl-nothere0"); !IsNotFound(err) {
			t.Errorf("an unknown listener: %v, want NotFound", err)
		}
	})
	wg.Wait()
	if got := e.CallCount("DescribeTargetHealth") - before; got < 1 || got > 3 {
		t.Fatalf("%d DescribeTargetHealth calls for 31 callers", got)
	}
}
