// Package portpool manages PortPools: the listeners pre-created over a port
// range on a set of load balancers, so that giving a Pod a public address
// is only a target registration. A pool can grow by creating load
// balancers from a template when it runs out of free slots.
//
// The external resource of a PortPool is the set of its listeners (and
// the load balancers it created). One reconcile sends at most one write
// per load balancer — a load balancer takes one task at a time — to every
// load balancer that needs one, and comes back a second later while work
// remains rather than waiting for the tasks.
package portpool

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
)

const (
	// progressPoll is how soon a pool with work left (listeners to create,
	// settings to fix, a load balancer being made) is looked at again: about
	// the time a CLB task takes.
	progressPoll = time.Second
	// notReadyPoll matches the other kinds: a pool that is not Ready yet is
	// looked at every two seconds.
	notReadyPoll = 2 * time.Second
	// parallelLBs bounds the load balancers a reconcile talks to at once.
	parallelLBs = 8
	// maxProblems bounds the problems an error message lists.
	maxProblems = 5
)

// Setup adds the PortPool controller. It counts bindings with
// networkv1alpha1.PoolIndex, which the caller registers; sealer drops the
// records the provider did not write from its uncached reads, as the
// cache does.
func Setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool, sealer *seal.Sealer) error {
	sh := newShared(time.Now)
	live := seal.Reader(mgr.GetAPIReader(), sealer)
	return mr.Setup(mgr, o, pool, mr.Kind[*v1alpha1.PortPool, *clb.Client]{
		GVK:    v1alpha1.PortPoolGroupVersionKind,
		Object: func() *v1alpha1.PortPool { return &v1alpha1.PortPool{} },
		New: func(c *clb.Client, kube client.Client) managed.TypedExternalClient[*v1alpha1.PortPool] {
			return &external{
				home: c, kube: kube, live: live, shared: sh,
				config: func(ctx context.Context, cr *v1alpha1.PortPool) (clients.Config, error) {
					return clients.ResolveManaged(ctx, kube, cr)
				},
				clientOf: func(cfg clients.Config) (api, error) {
					c, err := pool.Client(cfg)
					if err != nil {
						return nil, err
					}
					return c, nil
				},
			}
		},
		Options: []managed.ReconcilerOption{managed.WithPollIntervalHook(sh.pollInterval)},
		// A binding waiting for a port may call for a new load balancer,
		// and a binding that goes may let the pool remove what it held up:
		// look now, not at the poll. Other changes only move the counts,
		// which the poll catches, so a burst of Pods does not re-read the
		// cloud for every binding (see poolsOfBinding).
		Watches: []mr.Watch{{Object: &networkv1alpha1.PodAddress{}, Handler: handler.EnqueueRequestsFromMapFunc(poolsOfBinding(mgr.GetClient()))}},
	})
}

// api is what this controller needs of the cloud client.
type api interface {
	DescribeQuota(ctx context.Context) ([]*clbsdk.Quota, error)
	DescribeLoadBalancer(ctx context.Context, id string) (*clbsdk.LoadBalancer, error)
	FindLoadBalancersByTag(ctx context.Context, key, value string) ([]*clbsdk.LoadBalancer, error)
	CreateLoadBalancer(ctx context.Context, req *clbsdk.CreateLoadBalancerRequest) ([]string, string, error)
	DeleteLoadBalancer(ctx context.Context, id string) (string, error)
	DescribeListeners(ctx context.Context, lbID, protocol string, port int64) ([]*clbsdk.Listener, error)
	CreateListener(ctx context.Context, req *clbsdk.CreateListenerRequest) ([]string, string, error)
	ModifyListener(ctx context.Context, req *clbsdk.ModifyListenerRequest) (string, error)
	DeleteListeners(ctx context.Context, lbID string, listenerIDs []string) (string, error)
	// DescribeListenersTargets reads the targets of tke-extend's
	// listeners on the pool's slots (tkeextend.go).
	DescribeListenersTargets(ctx context.Context, lbID string, listenerIDs []string) (map[string]*clbsdk.ListenerBackend, error)
	// DeregisterTargets removes the targets tke-extend left on listeners
	// the pool took over, once no Pod has their IP (tkeextend.go).
	DeregisterTargets(ctx context.Context, lbID string, targets []clb.Target) (string, error)
	// TagLoadBalancer tags the load balancers tke-extend created for the
	// pool as the pool's own (tkeextend.go).
	TagLoadBalancer(ctx context.Context, id string, tags map[string]string) error
}

// shared is what every reconcile of the controller shares: the quota cache
// and which pools have work left.
type shared struct {
	quotas *quotaCache

	mu      sync.Mutex
	pending map[types.UID]bool
}

func newShared(now func() time.Time) *shared {
	return &shared{quotas: newQuotaCache(now), pending: map[types.UID]bool{}}
}

func (s *shared) setPending(uid types.UID, p bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p {
		s.pending[uid] = true
	} else {
		delete(s.pending, uid)
	}
}

func (s *shared) isPending(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[uid]
}

// pollInterval brings a pool with work left back after about one task's
// time, one that is not Ready after two seconds, and others after the poll
// interval.
func (s *shared) pollInterval(mg resource.Managed, d time.Duration) time.Duration {
	if s.isPending(mg.GetUID()) && d > progressPoll {
		return progressPoll
	}
	if mg.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue && d > notReadyPoll {
		return notReadyPoll
	}
	return d
}

// external serves one reconcile: Observe records what it found for the
// Create, Update or Delete that follows.
type external struct {
	home   api
	kube   client.Reader // the manager's cache, with networkv1alpha1.PoolIndex
	live   client.Reader // the API server, for the check before deleting
	shared *shared
	// config resolves the provider config: the home region's name, and
	// the credentials of clients for load balancers of other regions.
	config   func(ctx context.Context, cr *v1alpha1.PortPool) (clients.Config, error)
	clientOf func(cfg clients.Config) (api, error)

	cfg *clients.Config
	obs *observation
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.PortPool) (managed.ExternalObservation, error) {
	if a := cr.Spec.ForProvider.AutoCreate; a != nil && !meta.WasDeleted(cr) {
		if err := mr.CheckTags("spec.forProvider.autoCreate.template.tags", a.Template.Tags); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	o, err := e.observe(ctx, cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	e.obs = o
	deleting := meta.WasDeleted(cr)
	cr.Status.AtProvider = o.status()

	inCloud := o.inCloud()
	if deleting {
		cr.SetConditions(xpv2.Deleting())
		if !inCloud {
			e.shared.setPending(cr.GetUID(), false)
		}
		return managed.ExternalObservation{ResourceExists: inCloud, ResourceUpToDate: true}, nil
	}
	// The external name is the pool's name; a pool whose listeners or load
	// balancers exist but whose name was never saved takes it back.
	adopted := false
	if meta.GetExternalName(cr) == "" && inCloud {
		meta.SetExternalName(cr, cr.GetName())
		adopted = true
	}
	if o.shapeErr != nil {
		return managed.ExternalObservation{}, o.shapeErr
	}

	upToDate, busy := !o.needLB, o.needLB
	for _, l := range o.lbs {
		if l.removed {
			// Only its listeners go, once its bindings have moved.
			if len(o.removable(l)) > 0 {
				upToDate = false
			}
			continue
		}
		if !l.found() {
			continue
		}
		if l.status.State == v1alpha1.PoolLBCreating {
			busy = true
		}
		if l.tkeAuto || !l.cloudReady() || len(l.m.missing) > 0 || len(l.m.conflicts) > 0 || l.m.waiting > 0 ||
			len(l.m.drift) > 0 || len(o.deletableStale(l)) > 0 || releaseCount(l) > 0 {
			upToDate = false
		}
	}
	e.shared.setPending(cr.GetUID(), busy || !upToDate)

	ready, creating := false, o.needLB
	for _, l := range o.lbs {
		ready = ready || l.status.State == v1alpha1.PoolLBReady
		creating = creating || l.status.State == v1alpha1.PoolLBCreating
	}
	var needsPerson string
	switch {
	case ready:
		if msg := moving(cr.Status.AtProvider); msg != "" {
			// Work under way: not Ready, so that a composite waits and
			// Argo CD's built-in check says Progressing, not Healthy.
			cr.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse,
				Reason: xpv2.ConditionReason(v1alpha1.ReasonMovingBindings), Message: msg, LastTransitionTime: metav1.Now()})
		} else {
			cr.SetConditions(xpv2.Available())
		}
	case creating:
		cr.SetConditions(xpv2.Creating())
	default:
		needsPerson = "no load balancer of the pool can take bindings: each is missing or blacklisted"
		cr.SetConditions(xpv2.Unavailable().WithMessage(needsPerson))
	}
	if o.notOwned != nil && upToDate {
		// Synced=False names the refused load balancers, with the status
		// above (NotOwned) written; with work to do, Update says it.
		return managed.ExternalObservation{}, o.notOwned
	}
	if needsPerson != "" && upToDate {
		// A load balancer only a person can bring back: Synced=False
		// (the reconciler's ReconcileError, with the status above still
		// written), which Argo CD's built-in check reads as Degraded. Only
		// when Update has nothing to do, so no work waits behind it.
		return managed.ExternalObservation{}, errors.New(needsPerson)
	}
	return managed.ExternalObservation{
		ResourceExists:          meta.GetExternalName(cr) != "",
		ResourceUpToDate:        upToDate,
		ResourceLateInitialized: adopted,
		Diff:                    o.diff(),
	}, nil
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.PortPool) (managed.ExternalCreation, error) {
	cr.SetConditions(xpv2.Creating())
	meta.SetExternalName(cr, cr.GetName())
	return managed.ExternalCreation{}, e.sync(ctx, cr)
}

func (e *external) Update(ctx context.Context, cr *v1alpha1.PortPool) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, e.sync(ctx, cr)
}

// outcome is what one write to one load balancer came to.
type outcome struct {
	lb  string
	err error
}

// sync sends the next write of every load balancer that needs one and,
// when the pool runs low, creates one load balancer. A load balancer busy
// with a task, or a write the rate limit held back, is left for the next
// reconcile (a pool with work left comes back within a second); any other failure is
// returned, with the conflicts that need a person, after every other load
// balancer has had its turn.
func (e *external) sync(ctx context.Context, cr *v1alpha1.PortPool) error {
	o, err := e.observation(ctx, cr)
	if err != nil {
		return err
	}
	if o.shapeErr != nil {
		return o.shapeErr
	}
	settings := cr.Spec.ForProvider.Listener
	outs := make([]outcome, len(o.lbs))
	parallel(len(o.lbs), func(i int) {
		l := o.lbs[i]
		outs[i] = outcome{lb: l.id}
		if l.tkeAuto {
			if err := l.c.TagLoadBalancer(ctx, l.id, poolTags(cr, nil)); err != nil && !clb.IsNotFound(err) {
				outs[i].err = errors.Wrap(err, "cannot tag the load balancer tke-extend created for the pool as the pool's")
				return
			}
		}
		if !l.cloudReady() {
			return
		}
		outs[i].err = o.next(ctx, l, settings)
		if err := deregisterLeft(ctx, l); err != nil && outs[i].err == nil {
			outs[i].err = err
		}
	})
	var problems []string
	for _, out := range outs {
		if _, notYet := clb.NotYet(out.err); out.err != nil && !notYet {
			problems = append(problems, out.lb+": "+out.err.Error())
		}
	}
	for _, l := range o.lbs {
		if l.removed {
			continue
		}
		for _, c := range l.m.conflicts {
			problems = append(problems, fmt.Sprintf("%s: %s; delete that listener or take the load balancer out of the pool", l.id, c))
		}
	}
	if o.needLB {
		if err := e.createLB(ctx, cr, o); err != nil {
			problems = append(problems, "autoCreate: "+err.Error())
		}
	}
	if o.notOwned != nil {
		problems = append(problems, o.notOwned.Error())
	}
	if len(problems) > 0 {
		return errors.New("cannot complete the pool: " + summary(problems, maxProblems))
	}
	return nil
}

// next sends the one write l needs most: missing listeners first (they
// give the pool capacity), then settings, then the removal of listeners
// no slot wants.
func (o *observation) next(ctx context.Context, l *lbObs, settings *v1alpha1.PoolListenerSettings) error {
	if l.removed {
		if ids := o.removable(l); len(ids) > 0 {
			_, err := l.c.DeleteListeners(ctx, l.id, deleteBatches(ids)[0])
			if clb.IsNotFound(err) {
				return nil
			}
			return errors.Wrap(err, "cannot delete the pool's listeners on a load balancer removed from it")
		}
		return nil
	}
	if batches := createBatches(o.shape, l.id, o.owner, settings, l.m.missing); len(batches) > 0 {
		_, _, err := l.c.CreateListener(ctx, batches[0])
		if clb.IsQuota(err) {
			return errors.Wrapf(err, "cannot create listeners: the listener quota is used up; %d listeners of others leave no room for the pool's %d",
				len(l.listeners)-len(o.ownListeners(l)), o.shape.wanted())
		}
		return errors.Wrap(err, "cannot create listeners")
	}
	if len(l.m.drift) > 0 {
		d := l.m.drift[0]
		_, err := l.c.ModifyListener(ctx, clb.ModifyPoolListenerRequest(l.id, d.id, d.protocol, d.settings))
		return errors.Wrapf(err, "cannot modify listener %s (%s)", d.id, d.key)
	}
	if ids := o.deletableStale(l); len(ids) > 0 {
		_, err := l.c.DeleteListeners(ctx, l.id, deleteBatches(ids)[0])
		return errors.Wrap(err, "cannot delete listeners the pool no longer wants")
	}
	return nil
}

// createLB creates the pool's next load balancer from the template.
func (e *external) createLB(ctx context.Context, cr *v1alpha1.PortPool, o *observation) error {
	var existing []string
	for _, l := range o.lbs {
		if l.auto && l.found() {
			existing = append(existing, l.id)
		}
	}
	_, _, err := e.home.CreateLoadBalancer(ctx, lbCreateRequest(cr, len(existing), existing))
	return errors.Wrap(err, "cannot create a load balancer")
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.PortPool) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	o, err := e.observation(ctx, cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	n, err := e.liveBindings(ctx, cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if n = max(n, o.bindings); n > 0 {
		return managed.ExternalDelete{}, errors.Errorf("pool %s still has %d bindings; delete the Pods or their PodAddresses first", poolKey(cr), n)
	}
	outs := make([]outcome, len(o.lbs))
	parallel(len(o.lbs), func(i int) {
		l := o.lbs[i]
		outs[i] = outcome{lb: l.id}
		switch {
		case !l.found():
		case l.auto:
			_, err := l.c.DeleteLoadBalancer(ctx, l.id)
			if !clb.IsNotFound(err) {
				outs[i].err = errors.Wrap(err, "cannot delete the load balancer the pool created")
			}
		default:
			if ids := o.ownListeners(l); len(ids) > 0 {
				_, err := l.c.DeleteListeners(ctx, l.id, deleteBatches(ids)[0])
				if !clb.IsNotFound(err) {
					outs[i].err = errors.Wrap(err, "cannot delete the pool's listeners")
				}
			}
		}
	})
	var problems []string
	for _, out := range outs {
		if _, notYet := clb.NotYet(out.err); out.err != nil && !notYet {
			problems = append(problems, out.lb+": "+out.err.Error())
		}
	}
	if len(problems) > 0 {
		return managed.ExternalDelete{}, errors.New("cannot delete the pool: " + summary(problems, maxProblems))
	}
	return managed.ExternalDelete{}, nil
}

// observation returns what Observe found in this reconcile, observing
// again if it did not run.
func (e *external) observation(ctx context.Context, cr *v1alpha1.PortPool) (*observation, error) {
	if e.obs != nil {
		return e.obs, nil
	}
	o, err := e.observe(ctx, cr)
	if err != nil {
		return nil, err
	}
	e.obs = o
	return o, nil
}

func (e *external) Disconnect(context.Context) error { return nil }

// parallel runs fn(0..n-1), at most parallelLBs at a time.
func parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, parallelLBs)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// joinErrors returns nil, the one error, or a summary of several.
func joinErrors(errs []error) error {
	var msgs []string
	var last error
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
			last = err
		}
	}
	switch len(msgs) {
	case 0:
		return nil
	case 1:
		return last
	}
	return errors.New(summary(msgs, maxProblems))
}

// poolsOfBinding maps a PodAddress to the pools that should look now: all
// it asks for while it waits for a port (a pool may create a load
// balancer), and, once it is deleted, only those its bindings hold
// something up on (the pool's deletion, a load balancer removed from the
// pool or draining, a listener the pool no longer wants). Any other
// binding that goes only moves the counts, which the poll catches: a
// reconcile per deleted Pod would describe every load balancer of the
// pool once per Pod.
func poolsOfBinding(kube client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrlreconcile.Request {
		pa, ok := o.(*networkv1alpha1.PodAddress)
		if !ok {
			return nil
		}
		var keys []string
		switch {
		case pa.Status.State == networkv1alpha1.StateNoPortAvailable:
			keys = networkv1alpha1.PoolsOf(pa)
		case pa.GetDeletionTimestamp() != nil:
			for _, b := range pa.RecordedBindings() {
				if !slices.Contains(keys, b.Pool) && holdsUp(ctx, kube, b) {
					keys = append(keys, b.Pool)
				}
			}
		}
		var reqs []ctrlreconcile.Request
		for _, key := range keys {
			if nn, ok := networkv1alpha1.ParsePoolKey(key); ok {
				reqs = append(reqs, ctrlreconcile.Request{NamespacedName: nn})
			}
		}
		return reqs
	}
}

// holdsUp reports whether binding b keeps its pool from removing
// something: the pool is being deleted, b's load balancer takes no
// bindings, or b's listener is not one the pool wants. A pool that cannot
// be read is asked to look, as before.
func holdsUp(ctx context.Context, kube client.Reader, b networkv1alpha1.PortBinding) bool {
	nn, ok := networkv1alpha1.ParsePoolKey(b.Pool)
	if !ok {
		return false
	}
	pp := &v1alpha1.PortPool{}
	if err := kube.Get(ctx, nn, pp); err != nil {
		return !kerrors.IsNotFound(err)
	}
	if meta.WasDeleted(pp) {
		return true
	}
	for _, lb := range pp.Status.AtProvider.LoadBalancers {
		if lb.ID != b.LoadBalancerID {
			continue
		}
		if !v1alpha1.TakesBindings(lb.State) {
			return true
		}
		wanted := slices.Collect(maps.Values(lb.Listeners))
		for _, id := range b.ListenerIDs {
			if !slices.Contains(wanted, id) {
				return true
			}
		}
		return false
	}
	return true // a load balancer the status no longer lists
}

// moving says which load balancer that left the pool still has bindings
// or listeners of the pool (as the pool's Lua script words it), or "".
func moving(at v1alpha1.PortPoolObservation) string {
	for _, lb := range at.LoadBalancers {
		switch {
		case (lb.State == v1alpha1.PoolLBRemoved || lb.State == v1alpha1.PoolLBDraining) && lb.Allocated > 0:
			return fmt.Sprintf("load balancer %s (%s): %d bindings moving", lb.ID, lb.State, lb.Allocated)
		case lb.State == v1alpha1.PoolLBRemoved:
			return fmt.Sprintf("load balancer %s left the pool: deleting its listeners", lb.ID)
		}
	}
	return ""
}
