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
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/clbconv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// States of a pool's load balancer in status.atProvider.loadBalancers.
const (
	StateReady       = "Ready"
	StateCreating    = "Creating"
	StateNotFound    = "NotFound"
	StateBlacklisted = "Blacklisted"
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
	// BindingsIndex is the field index of PodAddresses by the pools their
	// bindings use ("namespace/name").
	BindingsIndex = "portpool.clb.tencentcloud.m.crossplane.io/bindings"
)

// Setup adds the PortPool controller and the PodAddress index it counts
// bindings with.
func Setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &networkv1alpha1.PodAddress{}, BindingsIndex, PoolsOf); err != nil {
		return errors.Wrap(err, "cannot index PodAddresses by pool")
	}
	sh := newShared(time.Now)
	live := mgr.GetAPIReader()
	return mr.Setup(mgr, o, pool, mr.Kind[*v1alpha1.PortPool]{
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
	})
}

// PoolsOf indexes a PodAddress by the pools ("namespace/name") its
// bindings use.
func PoolsOf(obj client.Object) []string {
	pa, ok := obj.(*networkv1alpha1.PodAddress)
	if !ok {
		return nil
	}
	var out []string
	for _, b := range pa.Status.Bindings {
		if b.Pool != "" && !slices.Contains(out, b.Pool) {
			out = append(out, b.Pool)
		}
	}
	return out
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
	kube   client.Reader // the manager's cache, with BindingsIndex
	live   client.Reader // the API server, for the check before deleting
	shared *shared
	// config resolves the provider config: the home region's name, and
	// the credentials of clients for load balancers of other regions.
	config   func(ctx context.Context, cr *v1alpha1.PortPool) (clients.Config, error)
	clientOf func(cfg clients.Config) (api, error)

	cfg *clients.Config
	obs *observation
}

// observation is what Observe found.
type observation struct {
	shape    shape
	shapeErr error
	owner    namer
	lbs      []*lbObs
	bindings int64
	needLB   bool
}

// lbObs is one load balancer of the pool.
type lbObs struct {
	id, region  string
	c           api
	auto        bool
	blacklisted bool
	lb          *clbsdk.LoadBalancer // nil: NotFound
	listeners   []*clbsdk.Listener
	m           lbListeners
	bound       map[int64]bool // allocated start ports
	status      v1alpha1.PoolLoadBalancerStatus
}

func (l *lbObs) found() bool { return l.lb != nil }

// cloudReady reports whether the load balancer itself is created (Status
// 1); before that it takes no listeners.
func (l *lbObs) cloudReady() bool { return l.lb != nil && clbconv.Deref(l.lb.Status) == 1 }

// lbRef is a load balancer id of the spec: lb-… or region:lb-….
type lbRef struct{ region, id string }

func parseRef(s string) lbRef {
	if i := strings.LastIndex(s, ":"); i >= 0 {
		return lbRef{region: s[:i], id: s[i+1:]}
	}
	return lbRef{id: s}
}

func poolKey(cr *v1alpha1.PortPool) string { return cr.GetNamespace() + "/" + cr.GetName() }

func (e *external) homeConfig(ctx context.Context, cr *v1alpha1.PortPool) (clients.Config, error) {
	if e.cfg == nil {
		cfg, err := e.config(ctx, cr)
		if err != nil {
			return clients.Config{}, errors.Wrap(err, "cannot resolve the provider config")
		}
		e.cfg = &cfg
	}
	return *e.cfg, nil
}

// clientFor returns the client of region ("" or the home region: the
// provider config's client).
func (e *external) clientFor(ctx context.Context, cr *v1alpha1.PortPool, region string) (api, error) {
	cfg, err := e.homeConfig(ctx, cr)
	if err != nil {
		return nil, err
	}
	if region == "" || region == cfg.Region {
		return e.home, nil
	}
	cfg.Region = region
	c, err := e.clientOf(cfg)
	return c, errors.Wrapf(err, "cannot build a client for region %s", region)
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.PortPool) (managed.ExternalObservation, error) {
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
		if !l.found() {
			continue
		}
		if l.status.State == StateCreating {
			busy = true
		}
		if !l.cloudReady() || len(l.m.missing) > 0 || len(l.m.conflicts) > 0 || l.m.waiting > 0 ||
			len(l.m.drift) > 0 || len(o.deletableStale(l)) > 0 {
			upToDate = false
		}
	}
	e.shared.setPending(cr.GetUID(), busy || !upToDate)

	ready, creating := false, o.needLB
	for _, l := range o.lbs {
		ready = ready || l.status.State == StateReady
		creating = creating || l.status.State == StateCreating
	}
	switch {
	case ready:
		cr.SetConditions(xpv2.Available())
	case creating:
		cr.SetConditions(xpv2.Creating())
	default:
		cr.SetConditions(xpv2.Unavailable().WithMessage("no load balancer of the pool can take bindings: each is missing or blacklisted"))
	}
	return managed.ExternalObservation{
		ResourceExists:          meta.GetExternalName(cr) != "",
		ResourceUpToDate:        upToDate,
		ResourceLateInitialized: adopted,
		Diff:                    o.diff(),
	}, nil
}

// inCloud reports whether anything of the pool exists: a listener it
// named or a load balancer it created.
func (o *observation) inCloud() bool {
	for _, l := range o.lbs {
		if l.found() && (l.auto || len(o.ownListeners(l)) > 0) {
			return true
		}
	}
	return false
}

// observe reads the pool's load balancers, their listeners and the
// pool's bindings.
func (e *external) observe(ctx context.Context, cr *v1alpha1.PortPool) (*observation, error) {
	p := cr.Spec.ForProvider
	cfg, err := e.homeConfig(ctx, cr)
	if err != nil {
		return nil, err
	}
	o := &observation{owner: newNamer(cr.GetNamespace(), cr.GetName())}

	// The load balancers the pool created, found by tag so that a
	// restarted provider (or a lost create answer) never creates twice.
	auto, err := e.home.FindLoadBalancersByTag(ctx, TagPoolUID, string(cr.GetUID()))
	if err != nil {
		return nil, errors.Wrap(err, "cannot look for the load balancers the pool created")
	}
	autoByID := map[string]*clbsdk.LoadBalancer{}
	for _, lb := range auto {
		if id := clbconv.Deref(lb.LoadBalancerId); id != "" {
			autoByID[id] = lb
		}
	}
	blacklist := map[string]bool{}
	for _, b := range p.Blacklist {
		blacklist[parseRef(b).id] = true
	}
	seen := map[string]bool{}
	for _, s := range p.LoadBalancerIDs {
		ref := parseRef(s)
		if ref.id == "" || seen[ref.id] {
			continue
		}
		seen[ref.id] = true
		c, err := e.clientFor(ctx, cr, ref.region)
		if err != nil {
			return nil, err
		}
		region := ref.region
		if region == "" {
			region = cfg.Region
		}
		o.lbs = append(o.lbs, &lbObs{id: ref.id, region: region, c: c, lb: autoByID[ref.id], auto: autoByID[ref.id] != nil})
	}
	sort.SliceStable(auto, func(i, j int) bool {
		a, b := clbconv.Deref(auto[i].CreateTime), clbconv.Deref(auto[j].CreateTime)
		if a != b {
			return a < b
		}
		return clbconv.Deref(auto[i].LoadBalancerId) < clbconv.Deref(auto[j].LoadBalancerId)
	})
	for _, lb := range auto {
		id := clbconv.Deref(lb.LoadBalancerId)
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		o.lbs = append(o.lbs, &lbObs{id: id, region: cfg.Region, c: e.home, lb: lb, auto: true})
	}
	for _, l := range o.lbs {
		l.blacklisted = blacklist[l.id]
	}

	// The listener quota sets the slots; the smallest of the regions used.
	quota := int64(-1)
	for _, l := range o.lbs {
		if err := e.quota(ctx, l.c, &quota); err != nil {
			return nil, err
		}
	}
	if quota < 0 {
		if err := e.quota(ctx, e.home, &quota); err != nil {
			return nil, err
		}
	}
	o.shape, o.shapeErr = newShape(p, quota)
	if o.shapeErr != nil {
		o.shapeErr = errors.Wrap(o.shapeErr, "invalid pool")
	}

	if err := e.describe(ctx, o.lbs); err != nil {
		return nil, err
	}
	for _, l := range o.lbs {
		if o.shapeErr == nil {
			l.m = match(o.shape, o.owner, p.Listener, l.listeners)
		}
	}
	if err := e.countBindings(ctx, cr, o); err != nil {
		return nil, err
	}
	o.fillStatus()
	if o.shapeErr == nil && !meta.WasDeleted(cr) {
		usage := make([]lbUsage, 0, len(o.lbs))
		for _, l := range o.lbs {
			usage = append(usage, lbUsage{state: l.status.State, autoCreated: l.auto, free: l.status.Free, allocated: l.status.Allocated})
		}
		o.needLB = needLoadBalancer(p.AutoCreate, o.shape.slots, usage)
	}
	return o, nil
}

// quota lowers *q to the listener quota of c's region.
func (e *external) quota(ctx context.Context, c api, q *int64) error {
	v, err := e.shared.quotas.listenerQuota(ctx, c)
	if err != nil {
		return err
	}
	if *q < 0 || v < *q {
		*q = v
	}
	return nil
}

// describe reads every load balancer not known yet and the listeners of
// those that exist, several load balancers at once.
func (e *external) describe(ctx context.Context, lbs []*lbObs) error {
	errs := make([]error, len(lbs))
	parallel(len(lbs), func(i int) {
		l := lbs[i]
		if l.lb == nil {
			lb, err := l.c.DescribeLoadBalancer(ctx, l.id)
			switch {
			case clb.IsNotFound(err):
				return
			case err != nil:
				errs[i] = errors.Wrapf(err, "cannot describe load balancer %s", l.id)
				return
			}
			l.lb = lb
		}
		if !l.cloudReady() {
			return
		}
		ls, err := l.c.DescribeListeners(ctx, l.id, "", 0)
		switch {
		case clb.IsNotFound(err):
			l.lb = nil
		case err != nil:
			errs[i] = errors.Wrapf(err, "cannot describe the listeners of load balancer %s", l.id)
		default:
			l.listeners = ls
		}
	})
	return joinErrors(errs)
}

// countBindings reads the pool's bindings from the PodAddresses (the
// manager's cache, indexed by pool).
func (e *external) countBindings(ctx context.Context, cr *v1alpha1.PortPool, o *observation) error {
	list := &networkv1alpha1.PodAddressList{}
	if err := e.kube.List(ctx, list, client.MatchingFields{BindingsIndex: poolKey(cr)}); err != nil {
		return errors.Wrap(err, "cannot list the PodAddresses of the pool")
	}
	byID := map[string]*lbObs{}
	for _, l := range o.lbs {
		l.bound = map[int64]bool{}
		byID[l.id] = l
	}
	for _, pa := range list.Items {
		for _, b := range pa.Status.Bindings {
			if b.Pool != poolKey(cr) {
				continue
			}
			o.bindings++
			if l := byID[b.LoadBalancerID]; l != nil {
				l.bound[int64(b.Port)] = true
			}
		}
	}
	return nil
}

// liveBindings counts the pool's bindings on the API server itself, so
// that a binding the cache has not seen yet still stops a deletion.
func (e *external) liveBindings(ctx context.Context, cr *v1alpha1.PortPool) (int64, error) {
	var n int64
	opts := []client.ListOption{client.Limit(500)}
	for {
		list := &networkv1alpha1.PodAddressList{}
		if err := e.live.List(ctx, list, opts...); err != nil {
			return 0, errors.Wrap(err, "cannot list PodAddresses")
		}
		for _, pa := range list.Items {
			for _, b := range pa.Status.Bindings {
				if b.Pool == poolKey(cr) {
					n++
				}
			}
		}
		if list.Continue == "" {
			return n, nil
		}
		opts = []client.ListOption{client.Limit(500), client.Continue(list.Continue)}
	}
}

// fillStatus computes every load balancer's status.
func (o *observation) fillStatus() {
	for _, l := range o.lbs {
		st := v1alpha1.PoolLoadBalancerStatus{
			ID: l.id, Region: l.region, AutoCreated: l.auto,
			ListenersWanted: o.shape.wanted(), ListenersReady: l.m.ready(),
			Allocated: int64(len(l.bound)),
		}
		if len(l.m.ids) > 0 {
			st.Listeners = l.m.ids
		}
		if lb := l.lb; lb != nil {
			for _, v := range lb.LoadBalancerVips {
				st.VIPs = append(st.VIPs, clbconv.Deref(v))
			}
			st.Domain = clbconv.Deref(lb.LoadBalancerDomain)
			if st.Domain == "" {
				st.Domain = clbconv.Deref(lb.Domain)
			}
			st.ISP = clbconv.Deref(lb.VipIsp)
		}
		for i := int64(0); i < o.shape.slots; i++ {
			if l.m.usable[i] && !l.bound[o.shape.port(i)] {
				st.Free++
			}
		}
		switch {
		case !l.found():
			st.State, st.Free = StateNotFound, 0
		case l.blacklisted:
			st.State, st.Free = StateBlacklisted, 0
		case l.cloudReady() && o.shapeErr == nil && st.ListenersReady == st.ListenersWanted:
			st.State = StateReady
		default:
			st.State = StateCreating
		}
		l.status = st
	}
}

func (o *observation) status() v1alpha1.PortPoolObservation {
	s := v1alpha1.PortPoolObservation{Bindings: o.bindings, SlotsPerLoadBalancer: o.shape.slots}
	for _, l := range o.lbs {
		s.LoadBalancers = append(s.LoadBalancers, l.status)
		s.Allocated += l.status.Allocated
		if l.status.State == StateReady {
			s.Free += l.status.Free
		}
	}
	return s
}

// diff says, per load balancer, what Update has to do.
func (o *observation) diff() string {
	var d []string
	for _, l := range o.lbs {
		if !l.found() {
			continue
		}
		var parts []string
		if n := len(o.shape.protocols)*int(o.shape.slots) - len(l.m.ids); n > 0 {
			parts = append(parts, fmt.Sprintf("%d listeners missing", n))
		}
		if len(l.m.drift) > 0 {
			parts = append(parts, fmt.Sprintf("%s: %s", l.m.drift[0].key, l.m.drift[0].diff))
			if len(l.m.drift) > 1 {
				parts = append(parts, fmt.Sprintf("%d more listeners with other settings", len(l.m.drift)-1))
			}
		}
		if n := len(o.deletableStale(l)); n > 0 {
			parts = append(parts, fmt.Sprintf("%d listeners no slot wants", n))
		}
		if len(parts) > 0 {
			d = append(d, l.id+": "+strings.Join(parts, ", "))
		}
	}
	if o.needLB {
		d = append(d, "autoCreate: a new load balancer is needed")
	}
	return strings.Join(d, "; ")
}

// ownListeners returns the ids of every listener of l named by the pool.
func (o *observation) ownListeners(l *lbObs) []string {
	var ids []string
	for _, ls := range l.listeners {
		if ls != nil && ls.ListenerId != nil && clbconv.Deref(ls.ListenerName) == o.owner.listenerName(clbconv.Deref(ls.Port)) {
			ids = append(ids, *ls.ListenerId)
		}
	}
	return ids
}

// deletableStale returns the pool's listeners no slot wants and no
// binding uses.
func (o *observation) deletableStale(l *lbObs) []string {
	var ids []string
	for _, s := range l.m.stale {
		if !l.bound[s.port] {
			ids = append(ids, s.id)
		}
	}
	return ids
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
	lb    string
	err   error
	wrote bool
}

// sync sends the next write of every load balancer that needs one and,
// when the pool runs low, creates one load balancer. A load balancer busy
// with a task is left for the next reconcile; any other failure is
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
		if !l.cloudReady() {
			return
		}
		outs[i].wrote, outs[i].err = o.next(ctx, l, settings)
	})
	var problems []string
	for _, out := range outs {
		if out.err != nil && !clb.IsBusy(out.err) {
			problems = append(problems, out.lb+": "+out.err.Error())
		}
	}
	for _, l := range o.lbs {
		for _, c := range l.m.conflicts {
			problems = append(problems, fmt.Sprintf("%s: %s; delete that listener or take the load balancer out of the pool", l.id, c))
		}
	}
	if o.needLB {
		if err := e.createLB(ctx, cr, o); err != nil {
			problems = append(problems, "autoCreate: "+err.Error())
		}
	}
	if len(problems) > 0 {
		return errors.New("cannot complete the pool: " + summary(problems, maxProblems))
	}
	return nil
}

// next sends the one write l needs most: missing listeners first (they
// give the pool capacity), then settings, then the removal of listeners
// no slot wants.
func (o *observation) next(ctx context.Context, l *lbObs, settings *v1alpha1.PoolListenerSettings) (bool, error) {
	if batches := createBatches(o.shape, l.id, o.owner, settings, l.m.missing); len(batches) > 0 {
		_, _, err := l.c.CreateListener(ctx, batches[0])
		return err == nil, errors.Wrap(err, "cannot create listeners")
	}
	if len(l.m.drift) > 0 {
		d := l.m.drift[0]
		_, err := l.c.ModifyListener(ctx, modifyRequest(l.id, d.id, d.protocol, settings))
		return err == nil, errors.Wrapf(err, "cannot modify listener %s (%s)", d.id, d.key)
	}
	if ids := o.deletableStale(l); len(ids) > 0 {
		_, err := l.c.DeleteListeners(ctx, l.id, deleteBatches(ids)[0])
		return err == nil, errors.Wrap(err, "cannot delete listeners the pool no longer wants")
	}
	return false, nil
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
		if out.err != nil && !clb.IsBusy(out.err) {
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
