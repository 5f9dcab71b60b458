package tcapi

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Coalescer gathers the requests that arrive within one window for the
// same key (a load balancer id, or "" for requests that span them) and
// hands them to flush together. At most one flush per key runs at a time:
// requests that arrive meanwhile wait in the next group, which is sent as
// soon as the running flush ends. So when calls are slow or the action's
// rate limit makes them wait, batches grow instead of calls multiplying,
// and the calls per key never exceed one per flush. It starts no
// long-lived goroutine: a timer per open window does the work, so a
// coalescer needs no Close.
type Coalescer[T, R any] struct {
	window time.Duration
	// full flushes a window early once its requests name this many
	// distinct units (ids to describe, targets to change), as units tells.
	full  int
	units func(T) []string
	flush func(key string, reqs []*Pending[T, R])

	mu     sync.Mutex
	groups map[string]*batchGroup[T, R]
	// busy marks the keys whose flush is running.
	busy map[string]bool
}

type batchGroup[T, R any] struct {
	reqs  []*Pending[T, R]
	units map[string]struct{}
	// due is set when the group's window ended (or it filled up) while a
	// flush of its key was running; that flush sends it when it ends.
	due bool
}

// Pending is one caller's request waiting in a window.
type Pending[T, R any] struct {
	ctx  context.Context
	In   T
	done chan outcome[R] // buffered: flush never blocks on a caller who left
}

type outcome[R any] struct {
	val R
	err error
}

func NewCoalescer[T, R any](window time.Duration, full int, units func(T) []string,
	flush func(string, []*Pending[T, R])) *Coalescer[T, R] {
	return &Coalescer[T, R]{window: window, full: full, units: units, flush: flush, groups: map[string]*batchGroup[T, R]{}, busy: map[string]bool{}}
}

// OneUnit is the units function of requests for a single id.
func OneUnit(id string) []string { return []string{id} }

// Do queues in under key and waits for its outcome or for ctx to end.
func (co *Coalescer[T, R]) Do(ctx context.Context, key string, in T) (R, error) {
	if err := ctx.Err(); err != nil {
		var zero R
		return zero, err
	}
	p := &Pending[T, R]{ctx: ctx, In: in, done: make(chan outcome[R], 1)}
	co.mu.Lock()
	g := co.groups[key]
	if g == nil {
		g = &batchGroup[T, R]{units: map[string]struct{}{}}
		co.groups[key] = g
		time.AfterFunc(co.window, func() { co.fire(key, g) })
	}
	g.reqs = append(g.reqs, p)
	for _, u := range co.units(in) {
		g.units[u] = struct{}{}
	}
	var ready []*Pending[T, R]
	if len(g.units) >= co.full {
		if co.busy[key] {
			g.due = true
		} else {
			delete(co.groups, key) // the timer of g will find it gone
			co.busy[key] = true
			ready = g.reqs
		}
	}
	co.mu.Unlock()
	if ready != nil {
		go co.run(key, ready)
	}

	select {
	case o := <-p.done:
		return o.val, o.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

func (co *Coalescer[T, R]) fire(key string, g *batchGroup[T, R]) {
	co.mu.Lock()
	if co.groups[key] != g {
		co.mu.Unlock()
		return
	}
	if co.busy[key] {
		g.due = true
		co.mu.Unlock()
		return
	}
	delete(co.groups, key)
	co.busy[key] = true
	co.mu.Unlock()
	co.run(key, g.reqs)
}

// run flushes reqs, then sends the next group of key if it is due.
func (co *Coalescer[T, R]) run(key string, reqs []*Pending[T, R]) {
	for reqs != nil {
		co.flush(key, reqs)
		reqs = nil
		co.mu.Lock()
		if g := co.groups[key]; g != nil && g.due {
			delete(co.groups, key)
			reqs = g.reqs
		} else {
			delete(co.busy, key)
		}
		co.mu.Unlock()
	}
}

// Live drops the requests whose caller already gave up, so a flush does
// no work nobody waits for.
func Live[T, R any](reqs []*Pending[T, R]) []*Pending[T, R] {
	out := reqs[:0:0]
	for _, p := range reqs {
		if p.ctx.Err() == nil {
			out = append(out, p)
		}
	}
	return out
}

// Reply delivers the outcome; only the first reply of a request counts.
func (p *Pending[T, R]) Reply(v R, err error) {
	select {
	case p.done <- outcome[R]{val: v, err: err}:
	default:
	}
}

// Chunks splits items into slices of at most n.
func Chunks[E any](items []E, n int) [][]E {
	var out [][]E
	for len(items) > n {
		out = append(out, items[:n])
		items = items[n:]
	}
	if len(items) > 0 {
		out = append(out, items)
	}
	return out
}

// GroupByInput groups requests for the same id, keeping the order in which
// ids first arrived, so that each id is asked for once.
func GroupByInput[R any](reqs []*Pending[string, R]) ([]string, map[string][]*Pending[string, R]) {
	var keys []string
	m := map[string][]*Pending[string, R]{}
	for _, p := range reqs {
		if _, seen := m[p.In]; !seen {
			keys = append(keys, p.In)
		}
		m[p.In] = append(m[p.In], p)
	}
	return keys, m
}

// ReplyAll fails every request waiting for one of ids.
func ReplyAll[R any](m map[string][]*Pending[string, R], ids []string, err error) {
	var zero R
	for _, id := range ids {
		for _, p := range m[id] {
			p.Reply(zero, err)
		}
	}
}

// CallIsolating sends items in chunks of size. When the API refuses a
// whole chunk as Invalid, the chunk is sent again in halves, down to single
// items, so that one malformed id fails only the callers who asked for it
// (at the cost of about 2·log2(size) more calls); other errors (busy,
// throttled, network) concern the whole chunk and fail it.
func CallIsolating[E any](items []E, size int, cls CodeClassifier, call func([]E) error, fail func([]E, error)) {
	CallIsolatingIf(items, size, func(err error) bool { return Classify(err, cls) == Invalid }, call, fail)
}

// CallIsolatingIf is CallIsolating that halves a refused chunk whenever
// split says the error may concern only some of its items.
func CallIsolatingIf[E any](items []E, size int, split func(error) bool, call func([]E) error, fail func([]E, error)) {
	for _, chunk := range Chunks(items, size) {
		isolate(chunk, split, call, fail)
	}
}

func isolate[E any](items []E, split func(error) bool, call func([]E) error, fail func([]E, error)) {
	err := call(items)
	switch {
	case err == nil:
	case len(items) == 1 || !split(err):
		fail(items, err)
	default:
		half := len(items) / 2
		isolate(items[:half], split, call, fail)
		isolate(items[half:], split, call, fail)
	}
}

// A coalesced registration serves many callers: 150 Pods' targets may ride
// in one BatchRegisterTargets. Failing them all for one dropped connection,
// one InternalError or one moment of a busy load balancer would send every
// caller back to its controller, to retry after its backoff. So the flush
// itself sends the whole batch again, a few times, after a short jittered
// pause: the callers get one answer, and a retry costs one call, not one
// per caller. (CLB deregistrations are not retried this way; see its
// flushTargets.) Errors that waiting cannot fix
// (Invalid, Auth, Quota, NotFound) are answered at once; RequestLimitExceeded
// is already retried, paced by the rate limiter, in Invoke.
const (
	batchRetries      = 3 // sends after the first
	batchRetryBase    = 250 * time.Millisecond
	batchRetryMaxWait = 2 * time.Second
)

// RetryBatch runs send until it succeeds, fails for good, or has been
// retried batchRetries times; it waits about 250 ms, 500 ms, 1 s (±50 %)
// between sends, at most batchRetryMaxWait, and never past ctx.
func RetryBatch(ctx context.Context, cls CodeClassifier, send func() error) error {
	delay := batchRetryBase
	for try := 0; ; try++ {
		err := send()
		if err == nil || try == batchRetries || ctx.Err() != nil {
			return err
		}
		if c := Classify(err, cls); c != Busy && c != Transient {
			return err
		}
		t := time.NewTimer(min(delay/2+rand.N(delay), batchRetryMaxWait)) //nolint:gosec // jitter, not a secret
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, batchRetryMaxWait)
	}
}
