package clb

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Adaptive rate limiting: a RequestLimitExceeded answer halves the action's
// rate, which holds for throttleHold and then climbs back by
// recoveryPerSecond of the configured rate each second. Halvings closer
// together than throttleHold count once, because one burst of callers
// usually meets the limit together.
const (
	throttleHold      = time.Second
	recoveryPerSecond = 0.10
	minRateFraction   = 1.0 / 16
)

// limiters holds one adaptive token bucket per API action. Actions are a
// small fixed set, so the map never grows beyond it.
type limiters struct {
	clock     func() time.Time
	rate      float64
	overrides map[string]float64

	mu sync.Mutex
	m  map[string]*actionLimiter
}

func newLimiters(clock func() time.Time, perSecond float64, overrides map[string]float64) *limiters {
	o := make(map[string]float64, len(overrides))
	for k, v := range overrides {
		o[k] = v
	}
	return &limiters{clock: clock, rate: perSecond, overrides: o, m: map[string]*actionLimiter{}}
}

func (l *limiters) get(action string) *actionLimiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.m[action]
	if a == nil {
		r := l.rate
		if o, ok := l.overrides[action]; ok && o > 0 {
			r = o
		}
		a = &actionLimiter{configured: r, lim: rate.NewLimiter(rate.Limit(r), burst(r))}
		l.m[action] = a
	}
	return a
}

// wait blocks until action may send one request, or ctx ends.
func (l *limiters) wait(ctx context.Context, action string) error {
	return l.get(action).wait(ctx, l.clock)
}

// throttled tells the limiter of action that the API refused a call.
func (l *limiters) throttled(action string) { l.get(action).throttled(l.clock()) }

// current returns the rate action is held to now.
func (l *limiters) current(action string) float64 { return l.get(action).current(l.clock()) }

// actionLimiter is a token bucket whose rate drops on throttling and
// recovers over time.
type actionLimiter struct {
	configured float64
	lim        *rate.Limiter // safe for concurrent use on its own

	mu          sync.Mutex
	floor       float64   // the rate set by the last halving
	throttledAt time.Time // zero when running at the configured rate
}

func burst(r float64) int { return max(1, int(math.Ceil(r))) }

// rateAt is the adaptive rate at now. Called with a.mu held.
func (a *actionLimiter) rateAt(now time.Time) float64 {
	if a.throttledAt.IsZero() {
		return a.configured
	}
	since := now.Sub(a.throttledAt) - throttleHold
	if since <= 0 {
		return a.floor
	}
	r := a.floor + a.configured*recoveryPerSecond*since.Seconds()
	if r >= a.configured {
		a.throttledAt = time.Time{}
		return a.configured
	}
	return r
}

func (a *actionLimiter) current(now time.Time) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rateAt(now)
}

func (a *actionLimiter) throttled(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.throttledAt.IsZero() && now.Sub(a.throttledAt) < throttleHold {
		return
	}
	a.floor = max(a.rateAt(now)/2, a.configured*minRateFraction)
	a.throttledAt = now
}

func (a *actionLimiter) wait(ctx context.Context, clock func() time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	now := clock()
	if r := rate.Limit(a.rateAt(now)); r != a.lim.Limit() {
		a.lim.SetLimitAt(now, r)
		a.lim.SetBurstAt(now, burst(float64(r)))
	}
	res := a.lim.ReserveN(now, 1)
	a.mu.Unlock()
	delay := res.DelayFrom(now)
	if delay <= 0 {
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		res.CancelAt(clock()) // give the token back to the callers still waiting
		return ctx.Err()
	}
}
