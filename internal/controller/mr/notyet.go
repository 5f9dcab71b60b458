package mr

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// A cloud answer that means "not yet" (a load balancer busy with a task,
// the rate limit held after the client's retries; see clb.NotYet) is not a
// failure of a managed resource: it clears up by itself within seconds.
// The managed reconciler of crossplane-runtime records a Warning event and
// a ReconcileError condition for every error of Create, Update or Delete
// and backs off, and has no "come back after" for errors. So the external
// client answers "not yet" as success, the reconcile's result is turned
// into a requeue after the wait clb.NotYet suggests, and the events the
// reconciler records for that pretended success are dropped.

// notYet remembers the resources whose current reconcile met "not yet",
// and for how long they should wait. An entry lives for one reconcile.
type notYet struct {
	mu sync.Mutex
	m  map[types.NamespacedName]time.Duration
}

func newNotYet() *notYet { return &notYet{m: map[types.NamespacedName]time.Duration{}} }

// check records err for mg if it means "not yet", and says so.
func (n *notYet) check(mg client.Object, err error) bool {
	after, ok := clb.NotYet(err)
	if !ok {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.m[client.ObjectKeyFromObject(mg)] = after
	return true
}

func (n *notYet) has(nn types.NamespacedName) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.m[nn]
	return ok
}

// take returns and forgets the wait recorded for nn.
func (n *notYet) take(nn types.NamespacedName) (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	after, ok := n.m[nn]
	delete(n.m, nn)
	return after, ok
}

// reconciler turns the result of a reconcile that met "not yet" into a
// requeue after its wait.
func (n *notYet) reconciler(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		n.take(req.NamespacedName) // nothing from an earlier reconcile counts
		res, err := r.Reconcile(ctx, req)
		if after, ok := n.take(req.NamespacedName); ok && err == nil {
			return reconcile.Result{RequeueAfter: after}, nil
		}
		return res, err
	})
}

// notYetClient answers "not yet" from Create, Update and Delete as
// success, recorded in n.
type notYetClient[T resource.Managed] struct {
	managed.TypedExternalClient[T]
	n *notYet
}

func (c notYetClient[T]) Create(ctx context.Context, mg T) (managed.ExternalCreation, error) {
	out, err := c.TypedExternalClient.Create(ctx, mg)
	if c.n.check(mg, err) {
		return managed.ExternalCreation{}, nil
	}
	return out, err
}

func (c notYetClient[T]) Update(ctx context.Context, mg T) (managed.ExternalUpdate, error) {
	out, err := c.TypedExternalClient.Update(ctx, mg)
	if c.n.check(mg, err) {
		return managed.ExternalUpdate{}, nil
	}
	return out, err
}

func (c notYetClient[T]) Delete(ctx context.Context, mg T) (managed.ExternalDelete, error) {
	out, err := c.TypedExternalClient.Delete(ctx, mg)
	if c.n.check(mg, err) {
		return managed.ExternalDelete{}, nil
	}
	return out, err
}

// notYetRecorder drops the events of a reconcile that met "not yet": they
// would report a creation or deletion that did not happen.
type notYetRecorder struct {
	event.Recorder
	n *notYet
}

func (r notYetRecorder) Event(obj runtime.Object, e event.Event) {
	if o, ok := obj.(client.Object); ok && r.n.has(client.ObjectKeyFromObject(o)) {
		return
	}
	r.Recorder.Event(obj, e)
}

func (r notYetRecorder) WithAnnotations(keysAndValues ...string) event.Recorder {
	return notYetRecorder{Recorder: r.Recorder.WithAnnotations(keysAndValues...), n: r.n}
}
