package tcapi

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// Coalescer gathers the requests that arrive for the same key (a load
// balancer id, or "" for requests that span them) and hands them to flush
// together. At most one flush per key runs at a time: requests that arrive
// meanwhile wait in the next group, which is sent as soon as the running
// flush ends. So when calls are slow or the action's rate limit makes them
// wait, batches grow instead of calls multiplying, and the calls per key
// never exceed one per flush. It starts no long-lived goroutine: a timer
// per open window does the work, so a coalescer needs no Close.
type Coalescer[T, R any] struct {
	b     Batching
	units func(T) []string
	flush func(ctx context.Context, key string, reqs []*Pending[T, R])

	mu     sync.Mutex
	groups map[string]*batchGroup[T, R]
	// busy marks the keys whose flush is running.
	busy map[string]bool
	// flushed is when each key's last flush started: one entry per key
	// (load balancer) in use, dropped when it has aged past MaxWait as
	// the key's next group opens.
	flushed map[string]time.Time
}

// Batching is how a Coalescer gathers requests.
type Batching struct {
	// Window is how long a group gathers after its first request, and,
	// up to MaxWait, after its latest one: a burst keeps its group open.
	// A group that opens within MaxWait of its key's last flush is part
	// of the same burst and gathers for MaxWait, so a burst costs about
	// one call per MaxWait per key, and a lone request waits Window.
	Window time.Duration
	// MaxWait bounds how long a burst keeps a group open; below Window it
	// is Window (a fixed window).
	MaxWait time.Duration
	// Full flushes a group early once its requests name this many
	// distinct units (ids to describe, targets to change).
	Full int
	// Timeout bounds a flush, which serves several callers and so cannot
	// use any one caller's context.
	Timeout time.Duration
	// Limits and Action, when set, keep a closed group open until the
	// action's rate limiter gives the flush its token: while the limit
	// binds, the requests that arrive meanwhile ride in the same call
	// instead of the next one. The flush's context carries the token,
	// which the flush's first call of Action spends (see Limiters.Wait).
	Limits *Limiters
	Action string
}

type batchGroup[T, R any] struct {
	// life is the context of the group's flush: it ends once every caller
	// in the group has given up (so a stopping manager, whose callers'
	// contexts end, cuts its flushes short).
	life  *lifeline
	reqs  []*Pending[T, R]
	units map[string]struct{}
	// opened and last are when the first and the latest request came.
	opened, last time.Time
	// burst: the group opened soon after its key's last flush, so it
	// gathers for MaxWait whatever the gaps between its requests.
	burst bool
	// closing is set once the group is handed to run: it still takes
	// requests while run waits for a token, but no new timer or flush.
	closing bool
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

func NewCoalescer[T, R any](b Batching, units func(T) []string,
	flush func(context.Context, string, []*Pending[T, R])) *Coalescer[T, R] {
	b.MaxWait = max(b.MaxWait, b.Window)
	return &Coalescer[T, R]{b: b, units: units, flush: flush, groups: map[string]*batchGroup[T, R]{},
		busy: map[string]bool{}, flushed: map[string]time.Time{}}
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
	now := time.Now()
	co.mu.Lock()
	g := co.groups[key]
	if g == nil || g.closing && len(g.units) >= co.b.Full || g.life.ctx.Err() != nil {
		// A full group waiting for its token takes no more, nor one whose
		// callers all left: the next group starts, to be sent once that
		// flush ends.
		g = &batchGroup[T, R]{life: newLifeline(), units: map[string]struct{}{}, opened: now}
		if last, ok := co.flushed[key]; ok {
			if now.Sub(last) < co.b.MaxWait {
				g.burst = true
			} else {
				delete(co.flushed, key)
			}
		}
		co.groups[key] = g
		time.AfterFunc(co.b.Window, func() { co.fire(key, g) })
	}
	g.reqs = append(g.reqs, p)
	g.life.hold(ctx)
	g.last = now
	for _, u := range co.units(in) {
		g.units[u] = struct{}{}
	}
	start := false
	if len(g.units) >= co.b.Full && !g.closing {
		if co.busy[key] {
			g.due = true
		} else {
			g.closing, co.busy[key] = true, true
			start = true
		}
	}
	co.mu.Unlock()
	if start {
		go co.run(key, g)
	}

	select {
	case o := <-p.done:
		return o.val, o.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// fire ends g's window, unless a burst keeps it open a little longer.
func (co *Coalescer[T, R]) fire(key string, g *batchGroup[T, R]) {
	co.mu.Lock()
	if co.groups[key] != g || g.closing {
		co.mu.Unlock()
		return
	}
	now := time.Now()
	if quiet := g.last.Add(co.b.Window).Sub(now); quiet > 0 || g.burst {
		if limit := g.opened.Add(co.b.MaxWait).Sub(now); limit > 0 {
			if g.burst {
				quiet = limit
			}
			time.AfterFunc(min(quiet, limit), func() { co.fire(key, g) })
			co.mu.Unlock()
			return
		}
	}
	if co.busy[key] {
		g.due = true
		co.mu.Unlock()
		return
	}
	g.closing, co.busy[key] = true, true
	co.mu.Unlock()
	co.run(key, g)
}

// run flushes g, then the next group of key if it is due. Each group
// takes requests until its flush has its token.
func (co *Coalescer[T, R]) run(key string, g *batchGroup[T, R]) {
	for g != nil {
		ctx, cancel := context.WithTimeout(g.life.ctx, co.b.Timeout)
		if co.b.Limits != nil {
			if err := co.b.Limits.Wait(ctx, co.b.Action); err == nil {
				ctx = WithToken(ctx, co.b.Action)
			}
		}
		co.mu.Lock()
		if co.groups[key] == g {
			delete(co.groups, key)
		}
		co.flushed[key] = time.Now()
		reqs := g.reqs
		co.mu.Unlock()
		co.flush(ctx, key, reqs)
		cancel()
		g.life.end()
		co.mu.Lock()
		g = nil
		if next := co.groups[key]; next != nil && next.due {
			next.closing = true
			g = next
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

// Direct sends in on its own through flush, as a coalescer would with a
// group of one, and waits for its outcome: one call per caller.
func Direct[T, R any](ctx context.Context, key string, in T, flush func(context.Context, string, []*Pending[T, R])) (R, error) {
	p := &Pending[T, R]{ctx: ctx, In: in, done: make(chan outcome[R], 1)}
	flush(ctx, key, []*Pending[T, R]{p})
	select {
	case o := <-p.done:
		return o.val, o.err
	default:
		var zero R
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		return zero, errors.New("no answer") // flush answers every live request
	}
}

// A lifeline is a context that lives while one of the callers it holds
// waits: a flush serves several callers, so no one caller's context can
// bound it, and none of its own may outlive them all.
type lifeline struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	held  int
	stops []func() bool
}

func newLifeline() *lifeline {
	ctx, cancel := context.WithCancel(context.Background())
	return &lifeline{ctx: ctx, cancel: cancel}
}

// hold keeps l alive until ctx ends.
func (l *lifeline) hold(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held++
	l.stops = append(l.stops, context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.held--; l.held == 0 {
			l.cancel()
		}
	}))
}

// end ends l once its flush is done, and lets go of its callers.
func (l *lifeline) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, stop := range l.stops {
		stop()
	}
	l.stops = nil
	l.cancel()
}
