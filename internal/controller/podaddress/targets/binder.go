// Package targets registers and deregisters the targets of PodAddresses
// on their load balancers' listeners. A Binder runs each PodAddress's
// operations in the background, one set at a time, and wakes its reconcile
// with the answer; concurrent registrations coalesce into batches in the
// cloud client. It also says which targets a binding stands for, so that
// the audit and the reconcile compare the same things.
package targets

import (
	"context"
	"sync"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// bindTimeout bounds one background registration; a stuck call must not
// keep a binding from being retried.
const bindTimeout = 2 * time.Minute

// An Op is a registration or deregistration of one PodAddress's targets on
// one load balancer of one pool. Load balancers of a pool may be in other
// regions than its provider config's, so each op carries the client of its
// pool's config and its load balancer's region.
type Op struct {
	register bool
	pool     string
	region   string
	lb       string
	targets  []clb.Target

	// c is resolved from pool and region when the op is sent; it is not
	// part of the op's identity.
	c API
}

// API is what an op calls on a load balancer's cloud client: *clb.Client
// serves it, and so does the fake region of the unit tests.
type API interface {
	RegisterTargets(ctx context.Context, lbID string, ts []clb.Target) (string, error)
	DeregisterTargets(ctx context.Context, lbID string, ts []clb.Target) (string, error)
	DescribeTargets(ctx context.Context, lbID, listenerID string) (*clbsdk.ListenerBackend, error)
	TaskStatus(ctx context.Context, taskID string) (clb.TaskState, string, error)
}

// Clients hands out the API of a pool's load balancers in a region. A
// func rather than *clb.Pool, whose Client returns the concrete type, so
// that tests hand out a fake region.
type Clients func(ctx context.Context, pool, region string) (API, error)

// naive reports whether c sends as clb.CallsNaive says; only a *clb.Client
// can (a fake never is).
func naive(c API) bool {
	n, ok := c.(interface{ Naive() bool })
	return ok && n.Naive()
}

// An Answer is what Send says of the operations of one PodAddress.
type Answer struct {
	State State
	// Err is why the operations Failed.
	Err error
}

// State is where a PodAddress's operations stand.
type State int

const (
	// Running: sent, or waiting for an earlier set of the same PodAddress
	// to end. Their end wakes the PodAddress's reconcile.
	Running State = iota
	// Done: the cloud is as the operations ask. The answer stands for the
	// same operations until a reconcile that read it ends well (Settle), so
	// a reconcile that fails to record it reads it again instead of sending
	// the operations again.
	Done
	// Failed: Err says why. The answer is given once; the next Send of the
	// operations sends them again.
	Failed
)

// A result is what the cloud answered to the operations of one PodAddress.
type result struct {
	// ops is the request answered, so that the answer to an older request
	// is not taken for a newer one.
	ops []Op
	err error
	// read: a reconcile was given the answer; Settle drops it once that
	// reconcile ends well.
	read bool
}

// A Binder runs target registrations in the background, so that no
// reconcile waits on the cloud. Concurrent registrations coalesce in the
// cloud client into BatchRegisterTargets calls of up to 500 targets per load
// balancer; the binder only tracks which PodAddress is waiting on what and
// wakes it when its answer arrives.
//
// At most one operation set runs per PodAddress: a new one (the
// deregistration of a Pod deleted while it was being registered) starts
// only once the running one has ended, so it can never be overtaken by it.
//
// The binder is a manager Runnable: its operations run under the
// manager's context, so a shutdown ends them, and the manager waits for
// them, so it leaves nothing running. Operations asked for before the
// manager starts it wait for Start.
type Binder struct {
	kube  client.Reader
	pool  *clb.Pool
	cloud Clients // ClientFor's, but for tests

	ops sync.WaitGroup

	mu      sync.Mutex
	ctx     context.Context // the manager's, once started
	queued  []func()        // operations asked for before Start
	stopped bool
	running map[types.NamespacedName][]Op // PodAddress → the ops running
	results map[types.NamespacedName]result
	wake    chan event.TypedGenericEvent[*v1alpha1.PodAddress]
}

// NewBinder returns a Binder that sends through the clients of clients,
// resolved from each pool's provider config in kube.
func NewBinder(kube client.Reader, clients *clb.Pool) *Binder {
	b := NewBinderWith(kube, nil)
	b.pool = clients
	b.cloud = b.api
	return b
}

// NewBinderWith returns a Binder that sends through the clients cloud
// hands out: the unit tests' fake regions. Its ClientFor, which returns
// the concrete client, has no pool to build one from.
func NewBinderWith(kube client.Reader, cloud Clients) *Binder {
	return &Binder{
		kube:    kube,
		cloud:   cloud,
		running: map[types.NamespacedName][]Op{},
		results: map[types.NamespacedName]result{},
		// Buffered: a burst of answers must not block the cloud calls'
		// goroutines while the controller catches up.
		wake: make(chan event.TypedGenericEvent[*v1alpha1.PodAddress], 4096),
	}
}

// Start waits for the manager to stop, then ends the running operations
// and waits for them. A registration cut short either was not sent (the
// cloud client sends only callers still waiting) or is recorded in the
// PodAddress status, which the next provider deregisters or confirms.
func (b *Binder) Start(ctx context.Context) error {
	b.mu.Lock()
	b.ctx = ctx
	for _, run := range b.queued {
		go run()
	}
	b.queued = nil
	b.mu.Unlock()
	<-ctx.Done()
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.ops.Wait()
	return nil
}

// NeedLeaderElection: only the leader binds.
func (b *Binder) NeedLeaderElection() bool { return true }

// start sends ops for pa unless they are already answered, or an
// operation for pa is running (the same, or an older one that must end
// first; its end wakes pa).
func (b *Binder) start(pa types.NamespacedName, ops []Op) Answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.results[pa]; ok && same(r.ops, ops) {
		if r.err != nil {
			// Report a failure once; the next call tries again. The
			// reconcile returns the error, so the controller's per-item
			// backoff spaces the tries, but failed tries alone do not grow
			// it past its first step (1 s): the reconcile that starts the
			// next try succeeds, which resets it. Failures that waiting fixes (busy, server
			// error, dropped connection) were already retried for the
			// whole batch in the cloud client (registrations only); the rest
			// come here, and the Pods of one batch retry together again.
			delete(b.results, pa)
			return Answer{State: Failed, Err: r.err}
		}
		r.read = true
		b.results[pa] = r
		return Answer{State: Done}
	}
	if _, ok := b.running[pa]; ok || b.stopped {
		return Answer{State: Running}
	}
	delete(b.results, pa) // the answer to an older request
	b.running[pa] = ops
	b.ops.Add(1)
	run := func() { b.run(pa, ops) }
	if b.ctx == nil {
		b.queued = append(b.queued, run)
		return Answer{State: Running}
	}
	go run()
	return Answer{State: Running}
}

// Idle reports whether no operation for pa is running.
func (b *Binder) Idle(pa types.NamespacedName) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.running[pa]
	return !ok
}

// Settle drops the answer for pa that a reconcile read, once that
// reconcile ended well: what it did with the answer is recorded, and the
// same operations asked for again (a target the audit found missing) are
// sent again. An answer not yet read stays for the reconcile it wakes.
func (b *Binder) Settle(pa types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.results[pa]; ok && r.read {
		delete(b.results, pa)
	}
}

func (b *Binder) run(pa types.NamespacedName, ops []Op) {
	defer b.ops.Done()
	b.mu.Lock()
	base := b.ctx
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(base, bindTimeout)
	defer cancel()
	var err error
	for _, o := range ops {
		if _, err = o.send(ctx); err != nil {
			break
		}
	}
	b.mu.Lock()
	delete(b.running, pa)
	b.results[pa] = result{ops: ops, err: err}
	b.mu.Unlock()
	Notify(base, b.wake, pa)
}

// send sends o and returns its task id; a refusal the cloud's state
// already answers (see confirm) is success.
func (o Op) send(ctx context.Context) (string, error) {
	call := o.c.DeregisterTargets
	if o.register {
		call = o.c.RegisterTargets
	}
	task, err := call(ctx, o.lb, o.targets)
	if err != nil {
		return "", confirm(ctx, o, o.register, err)
	}
	return task, nil
}

// taskPoll is how often runInline asks whether a task has ended.
const taskPoll = 100 * time.Millisecond

// runInline is the naive mode (clb.CallsNaive): the reconcile sends its
// ops itself, one call each, and waits for each task to end, as a
// straightforward per-Pod controller does. It exists to measure what
// the binder and the batches save, not for production.
func runInline(ctx context.Context, ops []Op) error {
	ctx, cancel := context.WithTimeout(ctx, bindTimeout)
	defer cancel()
	for _, o := range ops {
		task, err := o.send(ctx)
		if err != nil {
			return err
		}
		if task == "" {
			continue // confirmed from the cloud's state: nothing to wait for
		}
		tick := time.NewTicker(taskPoll)
		for {
			st, msg, err := o.c.TaskStatus(ctx, task)
			if err != nil && !clb.IsNotFound(err) {
				tick.Stop()
				return err
			}
			if st == clb.TaskFailed {
				tick.Stop()
				return errors.Errorf("task %s on load balancer %s failed: %s", task, o.lb, msg)
			}
			if err != nil || st == clb.TaskSucceeded {
				break
			}
			select {
			case <-ctx.Done():
				tick.Stop()
				return ctx.Err()
			case <-tick.C:
			}
		}
		tick.Stop()
	}
	return nil
}

// confirm turns a refused (de)registration into success when the cloud
// already is as wanted: a target registered before a restart, or one that
// is already gone. The API refuses a whole listener's group in both cases.
func confirm(ctx context.Context, o Op, wantBound bool, orig error) error {
	if !clb.IsInvalid(orig) && !clb.IsNotFound(orig) {
		return orig
	}
	for _, t := range o.targets {
		backend, err := o.c.DescribeTargets(ctx, o.lb, t.ListenerID)
		if clb.IsNotFound(err) && !wantBound {
			continue // the listener is gone, and its targets with it
		}
		if err != nil {
			return orig
		}
		if bound := FindBackend(backend.Targets, t) != nil; bound != wantBound {
			return orig
		}
	}
	return nil
}

// Wake carries the PodAddresses whose operations were answered.
func (b *Binder) Wake() <-chan event.TypedGenericEvent[*v1alpha1.PodAddress] { return b.wake }

// Targets are the targets of o.
func (o Op) Targets() []clb.Target { return o.targets }

// Notify queues the reconcile of the PodAddress of key on ch, unless ctx
// ends first (nobody reads ch any more).
func Notify(ctx context.Context, ch chan<- event.TypedGenericEvent[*v1alpha1.PodAddress], key types.NamespacedName) {
	obj := &v1alpha1.PodAddress{}
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	select {
	case ch <- event.TypedGenericEvent[*v1alpha1.PodAddress]{Object: obj}:
	case <-ctx.Done():
	}
}
