package clb

import (
	"fmt"
	"math"
	"testing"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// refusingAPI is a fake Batch*Targets that refuses the listener group of
// every target in refused, as the API does, or, with wholeCall, the whole
// call as Invalid when it holds one of them. It counts the calls.
type refusingAPI struct {
	refused   map[string]bool
	wholeCall bool
	calls     int
	sent      int
}

func (f *refusingAPI) call(entries []*targetEntry) ([]string, string, string, error) {
	f.calls++
	f.sent += len(entries)
	var failed []string
	seen := map[string]bool{}
	for _, e := range entries {
		if !f.refused[e.t.key()] {
			continue
		}
		if f.wholeCall {
			return nil, "", "", localErr("register targets", Invalid, "bad target "+e.t.key())
		}
		if !seen[e.t.ListenerID] {
			seen[e.t.ListenerID] = true
			failed = append(failed, e.t.ListenerID)
		}
	}
	return failed, "refused", fmt.Sprintf("task-%d", f.calls), nil
}

// TestBisectBound: callers that share a refused target (each registers
// the shared target and one of its own, all on one listener) cost O(log n)
// calls, not a storm; exactly the callers that asked for the refused
// target fail. The fake refuses one target, so every retry must shrink.
func TestBisectBound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		callers   int
		listeners int
		wholeCall bool
	}{
		{"one listener, 2 callers", 2, 1, false},
		{"one listener, 64 callers", 64, 1, false},
		{"one listener, 300 callers", 300, 1, false},
		{"20 listeners, 300 callers", 300, 20, false},
		{"whole call refused, 300 callers", 300, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := Target{ListenerID: "lbl-0", EniIP: "10.9.9.9", Port: 80}
			var reqs []*tcapi.Pending[[]Target, string]
			for i := range tc.callers {
				own := Target{ListenerID: fmt.Sprintf("lbl-%d", i%tc.listeners), EniIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Port: 80}
				in := []Target{own}
				// Every other caller also asks for the shared bad target.
				if i%2 == 0 {
					in = append(in, bad)
				}
				reqs = append(reqs, &tcapi.Pending[[]Target, string]{In: in})
			}
			api := &refusingAPI{refused: map[string]bool{bad.key(): true}, wholeCall: tc.wholeCall}
			b := &targetBatch{op: "register targets", results: make([]targetResult, len(reqs)), call: api.call}
			entries := b.entries(reqs)
			b.send(entries)

			// One call, then two per halving of the refused group (the whole
			// call, or the refused listener's targets).
			group := len(entries)
			if !tc.wholeCall {
				group = len(onListener(entries, bad.ListenerID))
			}
			bound := 1 + 2*int(math.Ceil(math.Log2(float64(group))))
			t.Logf("%d callers, %d distinct targets (%d in the refused group): %d calls, %d targets sent; bound %d",
				tc.callers, len(entries), group, api.calls, api.sent, bound)
			if api.calls > bound {
				t.Errorf("%d calls, want at most %d", api.calls, bound)
			}
			for i, r := range b.results {
				asked := i%2 == 0
				if asked && !IsInvalid(r.err) {
					t.Errorf("caller %d asked for the refused target but got %v", i, r.err)
				}
				if !asked && (r.err != nil || r.task == "") {
					t.Errorf("caller %d did not ask for the refused target but got task %q, err %v", i, r.task, r.err)
				}
			}
		})
	}
}

// TestBisectBudget: however many refused targets a flush holds, it spends
// at most maxIsolationCalls calls isolating them, so the load balancer's
// lock is never held for long; the refused targets' callers fail, and as
// many others as the budget allowed to isolate succeed.
func TestBisectBudget(t *testing.T) {
	refused := map[string]bool{}
	var reqs []*tcapi.Pending[[]Target, string]
	for i := range 400 {
		tg := Target{ListenerID: "lbl-0", EniIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Port: 80}
		if i%7 == 0 {
			refused[tg.key()] = true
		}
		reqs = append(reqs, &tcapi.Pending[[]Target, string]{In: []Target{tg}})
	}
	api := &refusingAPI{refused: refused}
	b := &targetBatch{op: "register targets", results: make([]targetResult, len(reqs)), call: api.call}
	b.send(b.entries(reqs))
	failed := 0
	for i, r := range b.results {
		if i%7 == 0 && r.err == nil {
			t.Errorf("caller %d asked for a refused target but succeeded", i)
		}
		if r.err != nil {
			failed++
		}
	}
	t.Logf("%d refused targets among 400: %d calls, %d callers failed", len(refused), api.calls, failed)
	if api.calls > 1+maxIsolationCalls {
		t.Errorf("%d calls, want at most %d", api.calls, 1+maxIsolationCalls)
	}
}
