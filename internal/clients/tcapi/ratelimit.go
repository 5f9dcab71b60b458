package tcapi

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Adaptive rate limiting: a RequestLimitExceeded answer halves the action's
// rate, which holds for ThrottleHold and then climbs back by
// recoveryPerSecond of the configured rate each second. Halvings closer
// together than ThrottleHold count once, because one burst of callers
// usually meets the limit together.
const (
	ThrottleHold      = time.Second
	recoveryPerSecond = 0.10
	minRateFraction   = 1.0 / 16
)

// Limiters holds one adaptive token bucket per API action. Actions are a
// small fixed set, so the map never grows beyond it.
type Limiters struct {
	clock     func() time.Time
	rate      float64
	overrides map[string]float64

	mu sync.Mutex
	m  map[string]*actionLimiter
}

func NewLimiters(clock func() time.Time, perSecond float64, overrides map[string]float64) *Limiters {
	o := make(map[string]float64, len(overrides))
	for k, v := range overrides {
		o[k] = v
	}
	return &Limiters{clock: clock, rate: perSecond, overrides: o, m: map[string]*actionLimiter{}}
}

func (l *Limiters) get(action string) *actionLimiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.m[action]
	if a == nil {
		r := l.rate
		if o, ok := l.overrides[action]; ok && o > 0 {
			r = o
		}
		a = newActionLimiter(l.clock, r)
		l.m[action] = a
	}
	return a
}

// Wait blocks until action may send one request, or ctx ends. A token of
// action that ctx carries (see WithToken) is spent first, without waiting.
func (l *Limiters) Wait(ctx context.Context, action string) error {
	if t, ok := ctx.Value(tokenKey{}).(*token); ok && t.action == action && t.unspent.CompareAndSwap(true, false) {
		return nil
	}
	return l.get(action).wait(ctx)
}

type tokenKey struct{}

// token is one request of action already taken from its limiter.
type token struct {
	action  string
	unspent atomic.Bool
}

// WithToken returns ctx carrying one token of action, taken from its
// limiter by the caller: the next Wait for action under ctx spends it.
func WithToken(ctx context.Context, action string) context.Context {
	t := &token{action: action}
	t.unspent.Store(true)
	return context.WithValue(ctx, tokenKey{}, t)
}

// Throttled tells the limiter of action that the API refused a call.
func (l *Limiters) Throttled(action string) { l.get(action).throttled(l.clock()) }

// Current returns the rate action is held to now.
func (l *Limiters) Current(action string) float64 { return l.get(action).current(l.clock()) }

// actionLimiter is a token bucket whose rate drops on throttling and
// recovers over time. Waiters queue in arrival order and a timer hands out
// tokens as they accrue, at the rate of that moment: a reservation made
// while the rate was low does not keep a caller waiting once it is back up.
type actionLimiter struct {
	clock      func() time.Time
	configured float64

	mu          sync.Mutex
	floor       float64   // the rate set by the last halving
	throttledAt time.Time // zero when running at the configured rate
	tokens      float64
	last        time.Time // when tokens was last brought up to date
	queue       []*waiter
	timer       *time.Timer // armed while queue is not empty
}

type waiter struct {
	ready   chan struct{}
	granted bool // guarded by actionLimiter.mu
}

func newActionLimiter(clock func() time.Time, r float64) *actionLimiter {
	return &actionLimiter{clock: clock, configured: r, tokens: burst(r), last: clock()}
}

// burst is how many requests may go at once: a second's worth.
func burst(r float64) float64 { return max(1, math.Ceil(r)) }

// rateAt is the adaptive rate at now. Called with a.mu held.
func (a *actionLimiter) rateAt(now time.Time) float64 {
	if a.throttledAt.IsZero() {
		return a.configured
	}
	since := now.Sub(a.throttledAt) - ThrottleHold
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

// refill adds the tokens accrued since the last update. While recovering from throttling the bucket holds a single
// token, so requests are paced evenly: a burst is what tripped the cloud's
// limit. Called with a.mu held.
func (a *actionLimiter) refill(now time.Time) {
	r := a.rateAt(now)
	b := burst(r)
	if !a.throttledAt.IsZero() {
		b = 1
	}
	if el := now.Sub(a.last); el > 0 {
		a.tokens += el.Seconds() * r
		a.last = now
	}
	a.tokens = min(a.tokens, b)
}

func (a *actionLimiter) current(now time.Time) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rateAt(now)
}

func (a *actionLimiter) throttled(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.throttledAt.IsZero() && now.Sub(a.throttledAt) < ThrottleHold {
		return
	}
	a.refill(now)
	a.floor = max(a.rateAt(now)/2, a.configured*minRateFraction)
	a.throttledAt = now
}

// wait takes a token, queueing behind earlier callers, or returns when ctx
// ends.
func (a *actionLimiter) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	now := a.clock()
	a.refill(now)
	if len(a.queue) == 0 && a.tokens >= 1 {
		a.tokens--
		a.mu.Unlock()
		return nil
	}
	w := &waiter{ready: make(chan struct{})}
	a.queue = append(a.queue, w)
	a.arm(now)
	a.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		a.mu.Lock()
		if w.granted {
			a.tokens++ // handed out just now: give it back
		} else {
			a.queue = slices.DeleteFunc(a.queue, func(x *waiter) bool { return x == w })
		}
		a.mu.Unlock()
		return ctx.Err()
	}
}

// arm schedules a dispatch for when the next token is due. Called with
// a.mu held.
func (a *actionLimiter) arm(now time.Time) {
	if a.timer != nil || len(a.queue) == 0 {
		return
	}
	d := time.Duration((1 - a.tokens) / a.rateAt(now) * float64(time.Second))
	a.timer = time.AfterFunc(max(d, 0), a.dispatch)
}

// dispatch hands the accrued tokens to the oldest waiters.
func (a *actionLimiter) dispatch() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.timer = nil
	now := a.clock()
	a.refill(now)
	for len(a.queue) > 0 && a.tokens >= 1 {
		w := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		a.tokens--
		w.granted = true
		close(w.ready)
	}
	a.arm(now)
}
