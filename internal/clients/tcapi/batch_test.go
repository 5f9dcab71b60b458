package tcapi

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// recorder is a flush that records the size of every group it gets.
type recorder struct {
	mu     sync.Mutex
	groups []int
}

func (r *recorder) flush(_ context.Context, _ string, reqs []*Pending[string, int]) {
	r.mu.Lock()
	r.groups = append(r.groups, len(reqs))
	r.mu.Unlock()
	for _, p := range reqs {
		p.Reply(len(reqs), nil)
	}
}

func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.groups...)
}

// poll waits, bounded, until cond holds.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCoalescerGathersWhileWaitingForToken: once a group's window has
// closed, requests that arrive while its flush waits for a rate-limit
// token ride in that flush, which then spends the token it waited for.
func TestCoalescerGathersWhileWaitingForToken(t *testing.T) {
	const action = "BatchRegisterTargets"
	lim := NewLimiters(time.Now, 2, nil)
	for range 2 { // spend the burst: the next token is about 0.5 s away
		if err := lim.Wait(context.Background(), action); err != nil {
			t.Fatal(err)
		}
	}
	var spent []bool
	var mu sync.Mutex
	rec := &recorder{}
	co := NewCoalescer(Batching{Window: time.Millisecond, Full: 100, Timeout: 10 * time.Second, Limits: lim, Action: action},
		OneUnit, func(ctx context.Context, key string, reqs []*Pending[string, int]) {
			// The flush's token is in ctx: waiting for it takes no time.
			start := time.Now()
			err := lim.Wait(ctx, action)
			mu.Lock()
			spent = append(spent, err == nil && time.Since(start) < 100*time.Millisecond)
			mu.Unlock()
			rec.flush(ctx, key, reqs)
		})
	closing := func(n int) func() bool {
		return func() bool {
			co.mu.Lock()
			defer co.mu.Unlock()
			g := co.groups["lb"]
			return g != nil && g.closing && len(g.reqs) == n
		}
	}
	var wg sync.WaitGroup
	got := make([]int, 4)
	do := func(i int) {
		wg.Go(func() {
			v, err := co.Do(context.Background(), "lb", strconv.Itoa(i))
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	do(0)
	poll(t, "the first group to wait for its token", closing(1))
	for i := 1; i < 4; i++ {
		do(i)
	}
	poll(t, "the later requests to join the waiting group", closing(4))
	wg.Wait()
	if s := rec.sizes(); len(s) != 1 || s[0] != 4 {
		t.Errorf("flushed groups %v, want one group of 4", s)
	}
	for i, v := range got {
		if v != 4 {
			t.Errorf("request %d was answered by a flush of %d, want 4", i, v)
		}
	}
	if len(spent) != 1 || !spent[0] {
		t.Errorf("the flush did not find its token in its context: %v", spent)
	}
}

// arrivals sends a request to co every 5 ms for d (the arrivals are the
// test's input) and returns how many it sent once all are answered.
func arrivals(t *testing.T, co *Coalescer[string, int], d time.Duration) int {
	t.Helper()
	var wg sync.WaitGroup
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		<-tick.C
		i := n
		n++
		wg.Go(func() {
			if _, err := co.Do(context.Background(), "lb", strconv.Itoa(i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	return n
}

// TestCoalescerBurstKeepsWindowOpen: requests that keep arriving within
// the window of each other keep one group open, up to MaxWait, instead of
// a flush per window.
func TestCoalescerBurstKeepsWindowOpen(t *testing.T) {
	const window, maxWait = 40 * time.Millisecond, 2 * time.Second
	rec := &recorder{}
	co := NewCoalescer(Batching{Window: window, MaxWait: maxWait, Full: 1000, Timeout: 10 * time.Second}, OneUnit, rec.flush)
	n := arrivals(t, co, 10*window) // ten fixed windows' worth
	s := rec.sizes()
	t.Logf("%d requests flushed as %v", n, s)
	// A fixed window would flush about ten times; a slow tick on a busy
	// machine may close the group once or twice early.
	if len(s) > 3 {
		t.Errorf("%d flushes for one burst, want at most 3", len(s))
	}
}

// TestCoalescerMaxWaitEndsBurst: a burst longer than MaxWait is flushed
// about once per MaxWait, so no request waits much longer than that.
func TestCoalescerMaxWaitEndsBurst(t *testing.T) {
	const window, maxWait = 40 * time.Millisecond, 100 * time.Millisecond
	rec := &recorder{}
	co := NewCoalescer(Batching{Window: window, MaxWait: maxWait, Full: 1000, Timeout: 10 * time.Second}, OneUnit, rec.flush)
	arrivals(t, co, 6*maxWait)
	if s := rec.sizes(); len(s) < 3 || len(s) > 8 {
		t.Errorf("a burst of 6 × MaxWait was flushed %d times (%v), want 3 to 8", len(s), s)
	}
}

// TestEnvelope reads the RequestId of SDK-shaped answers and tells a
// missing Response.
func TestEnvelope(t *testing.T) {
	type params struct{ RequestId *string } //nolint:revive // the SDK's spelling
	type answer struct{ Response *params }
	id := "req-1"
	for name, tc := range map[string]struct {
		resp   any
		id     string
		wantOK bool
	}{
		"answer":            {resp: &answer{Response: &params{RequestId: &id}}, id: id, wantOK: true},
		"no request id":     {resp: &answer{Response: &params{}}, wantOK: true},
		"no Response":       {resp: &answer{}},
		"nil answer":        {resp: (*answer)(nil)},
		"not an SDK answer": {resp: 3},
	} {
		got, ok := Envelope(tc.resp)
		if got != tc.id || ok != tc.wantOK {
			t.Errorf("%s: Envelope = %q, %v; want %q, %v", name, got, ok, tc.id, tc.wantOK)
		}
	}
}

// TestCoalescerFlushEndsWithItsCallers: a flush runs under a context that
// lives while one of its callers waits, so a stopping manager (whose
// callers' contexts end) cuts a slow call short; a caller after that gets
// a flush of its own.
func TestCoalescerFlushEndsWithItsCallers(t *testing.T) {
	entered := make(chan struct{}, 2)
	ended := make(chan error, 2)
	co := NewCoalescer(Batching{Window: time.Millisecond, Full: 100, Timeout: time.Minute},
		OneUnit, func(ctx context.Context, _ string, reqs []*Pending[string, int]) {
			entered <- struct{}{}
			select {
			case <-ctx.Done():
				ended <- ctx.Err()
			case <-time.After(10 * time.Millisecond):
				ended <- nil
			}
			for _, p := range reqs {
				p.Reply(len(reqs), nil)
			}
		})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = co.Do(ctx, "lb-1", "a") }()
	<-entered
	cancel()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the flush outlived its only caller")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the flush never ended")
	}
	if n, err := co.Do(context.Background(), "lb-1", "b"); err != nil || n != 1 {
		t.Fatalf("a later caller: %d, %v; want a flush of its own", n, err)
	}
	if err := <-ended; err != nil {
		t.Errorf("the later caller's flush was cut short: %v", err)
	}
}
