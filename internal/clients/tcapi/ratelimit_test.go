package tcapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
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
	l := NewLimiters(clk.Now, 20, map[string]float64{"DescribeTaskStatus": 50})
	if got := l.Current("CreateListener"); got != 20 {
		t.Fatalf("default rate = %v", got)
	}
	if got := l.Current("DescribeTaskStatus"); got != 50 {
		t.Fatalf("override rate = %v", got)
	}

	l.Throttled("CreateListener")
	if got := l.Current("CreateListener"); got != 10 {
		t.Fatalf("after throttling = %v, want 10", got)
	}
	// A burst of refusals within the hold counts once.
	l.Throttled("CreateListener")
	l.Throttled("CreateListener")
	if got := l.Current("CreateListener"); got != 10 {
		t.Fatalf("after a burst of refusals = %v, want 10", got)
	}
	if got := l.Current("DescribeTaskStatus"); got != 50 {
		t.Fatalf("other actions must not slow down, got %v", got)
	}

	// Still refused after the hold: halve again.
	clk.Add(ThrottleHold)
	l.Throttled("CreateListener")
	if got := l.Current("CreateListener"); got != 5 {
		t.Fatalf("second halving = %v, want 5", got)
	}
	// Held, then +10 % of 20 (2/s) per second back up to 20.
	clk.Add(ThrottleHold)
	if got := l.Current("CreateListener"); got != 5 {
		t.Fatalf("during hold = %v, want 5", got)
	}
	clk.Add(2 * time.Second)
	if got := l.Current("CreateListener"); got < 8.99 || got > 9.01 {
		t.Fatalf("recovering = %v, want 9", got)
	}
	clk.Add(time.Minute)
	if got := l.Current("CreateListener"); got != 20 {
		t.Fatalf("recovered = %v, want 20", got)
	}

	// Never below 1/16 of the configured rate.
	for range 10 {
		clk.Add(ThrottleHold)
		l.Throttled("CreateListener")
	}
	if got := l.Current("CreateListener"); got != 20.0/16 {
		t.Fatalf("floor = %v, want %v", got, 20.0/16)
	}
}

func TestRateLimitWaitHonoursContext(t *testing.T) {
	l := NewLimiters(time.Now, 1, nil)
	if err := l.Wait(context.Background(), "A"); err != nil {
		t.Fatal(err)
	} // the one token of the burst
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := l.Wait(ctx, "A"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait = %v, want deadline exceeded", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("wait ignored the context for %v", took)
	}
}
