package portpool

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// observation is what Observe found.
type observation struct {
	shape    shape
	shapeErr error
	owner    namer
	lbs      []*lbObs
	bindings int64
	needLB   bool
	// notOwned refuses the load balancers of other namespaces.
	notOwned error
}

// lbObs is one load balancer of the pool.
type lbObs struct {
	id, region  string
	c           api
	auto        bool
	blacklisted bool
	// draining: in spec.drain; its bindings move elsewhere.
	draining bool
	// removed: no longer in the spec, kept while the pool's bindings or
	// listeners remain on it.
	removed bool
	lb      *clbsdk.LoadBalancer // nil: NotFound or NotOwned
	// notOwned: the pool's namespace may not build on it (mr.Owners).
	notOwned  bool
	listeners []*clbsdk.Listener
	m         lbListeners
	bound     map[int64]bool // allocated start ports
	inUse     listenerSet    // the listeners its bindings use
	// recorded maps "PROTOCOL/port" to the listener id the pool's
	// bindings record there, and recordedTargets to their "ip:port".
	recorded        map[string]string
	recordedTargets map[string]map[string]bool
	// certs maps "PROTOCOL/port" to the certificate a binding there
	// carries (a Pod's certSecret, granted): its listener takes that
	// one in place of the pool's while the binding holds the slot.
	certs map[string]string
	// adopted: ids of tke-extend's listeners the pool took over; tke:
	// those on its slots it has not (pools of tke-port-pools only).
	adopted map[string]bool
	tke     []v1alpha1.TKEListener
	// inherited: listeners of adopted with targets no binding records
	// (tkeextend.go); backends are their targets as just read, and
	// release the "ip:port" to deregister, by listener id.
	inherited []v1alpha1.TKEListener
	backends  map[string]*clbsdk.ListenerBackend
	release   map[string][]string
	// tkeAuto: tke-extend created it for the pool, which takes it over
	// by tagging it as its own (tkeextend.go).
	tkeAuto bool
	status  v1alpha1.PoolLoadBalancerStatus
}

func (l *lbObs) found() bool { return l.lb != nil }

// cloudReady reports whether the load balancer itself is created (Status
// 1); before that it takes no listeners.
func (l *lbObs) cloudReady() bool { return l.lb != nil && clb.Deref(l.lb.Status) == 1 }

func poolKey(cr *v1alpha1.PortPool) string {
	return networkv1alpha1.PoolKey(cr.GetNamespace(), cr.GetName())
}

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
		if id := clb.Deref(lb.LoadBalancerId); id != "" {
			autoByID[id] = lb
		}
	}
	blacklist, drain := map[string]bool{}, map[string]bool{}
	for _, b := range p.Blacklist {
		blacklist[v1alpha1.ParseLoadBalancerRef(b).ID] = true
	}
	for _, b := range p.Drain {
		drain[v1alpha1.ParseLoadBalancerRef(b).ID] = true
	}
	named, err := e.specLoadBalancers(ctx, cr)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range named {
		ref := v1alpha1.ParseLoadBalancerRef(s)
		if ref.ID == "" || seen[ref.ID] {
			continue
		}
		seen[ref.ID] = true
		c, err := e.clientFor(ctx, cr, ref.Region)
		if err != nil {
			return nil, err
		}
		region := ref.Region
		if region == "" {
			region = cfg.Region
		}
		o.lbs = append(o.lbs, &lbObs{id: ref.ID, region: region, c: c, lb: autoByID[ref.ID], auto: autoByID[ref.ID] != nil})
	}
	sort.SliceStable(auto, func(i, j int) bool {
		a, b := clb.Deref(auto[i].CreateTime), clb.Deref(auto[j].CreateTime)
		if a != b {
			return a < b
		}
		return clb.Deref(auto[i].LoadBalancerId) < clb.Deref(auto[j].LoadBalancerId)
	})
	for _, lb := range auto {
		id := clb.Deref(lb.LoadBalancerId)
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		o.lbs = append(o.lbs, &lbObs{id: id, region: cfg.Region, c: e.home, lb: lb, auto: true})
	}
	// A load balancer that left the spec stays, as Removed, while the
	// pool's bindings or listeners are on it: the bindings move, then the
	// listeners are deleted. Status is what remembers it.
	for _, st := range cr.Status.AtProvider.LoadBalancers {
		if seen[st.ID] || st.AutoCreated || st.ID == "" {
			continue
		}
		seen[st.ID] = true
		c, err := e.clientFor(ctx, cr, st.Region)
		if err != nil {
			return nil, err
		}
		o.lbs = append(o.lbs, &lbObs{id: st.ID, region: cmp.Or(st.Region, cfg.Region), c: c, removed: true})
	}
	for _, l := range o.lbs {
		l.blacklisted = blacklist[l.id]
		l.draining = drain[l.id]
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
	var stop error
	if o.notOwned, stop = o.refuseForeign(ctx, mr.Owners{Kube: e.kube}, cr); stop != nil {
		return nil, stop
	}
	markTKEAutoCreated(cr, cfg.Region, o.lbs)
	if err := e.countBindings(ctx, cr, o); err != nil {
		return nil, err
	}
	if err := e.takeOver(ctx, cr, o); err != nil {
		return nil, err
	}
	for _, l := range o.lbs {
		if o.shapeErr == nil {
			l.m = match(o.shape, o.owner, p.Listener, l.listeners, l.adopted, l.certs)
			l.m.hold(o.shape, l.inherited)
		}
	}
	o.fillStatus()
	if o.shapeErr == nil && !meta.WasDeleted(cr) {
		usage := make([]lbUsage, 0, len(o.lbs))
		for _, l := range o.lbs {
			// One about to be tagged as the pool's counts already, so
			// that the reconcile tagging it creates none in its stead.
			usage = append(usage, lbUsage{state: l.status.State, autoCreated: l.auto || l.tkeAuto, free: l.status.Free, allocated: l.status.Allocated})
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

// refuseForeign sets aside the pool's load balancers the pool's
// namespace may not build on (mr.Owners): those of another namespace that
// did not let it in, or that let it in for fewer listeners than the pool
// puts on each load balancer. They count as gone: the pool writes nothing
// there, not even when it is deleted, and shows them NotOwned, so that its
// bindings move elsewhere. The refusals are returned for the Synced
// condition. An untagged load balancer no grant gives the namespace stops
// the pool instead (the error): the platform team may still grant it, and
// until then nothing moves.
func (o *observation) refuseForeign(ctx context.Context, owners mr.Owners, cr *v1alpha1.PortPool) (refused, stop error) {
	ns := cr.GetNamespace()
	if ns == podannotation.TKEPoolNamespace {
		// Only the provider writes there, from an admin's cluster-scoped
		// CLBPortPool, whose load balancers the admin chose; unless it is
		// a GameServerSet's, whose users chose them.
		if ns = cr.GetAnnotations()[v1alpha1.AnnotationActsFor]; ns == "" {
			return nil, nil
		}
	}
	var errs []error
	for _, l := range o.lbs {
		if l.lb == nil {
			continue
		}
		tags := clb.LoadBalancerTags(l.lb)
		err := owners.CheckAs(ctx, ns, cr.GetProviderConfigReference(), mr.BuildOn, "load balancer "+l.id, l.id, tags)
		if mr.IsNotGranted(err) || (err != nil && !mr.IsNotOwned(err)) {
			return nil, err
		}
		if err == nil {
			err = o.withinBound(ctx, owners, ns, l.id, tags)
		}
		if err != nil {
			l.lb, l.listeners, l.auto, l.notOwned = nil, nil, false, true
			errs = append(errs, err)
		}
	}
	return joinErrors(errs), nil
}

// withinBound refuses a load balancer of another namespace on which the
// pool would hold more listeners than that namespace's bound there.
func (o *observation) withinBound(ctx context.Context, owners mr.Owners, ns, id string, tags map[string]string) error {
	limit, bounded, err := owners.SharedBound(ctx, ns, tags)
	if err != nil || !bounded || o.shapeErr != nil {
		return err
	}
	if need := o.shape.slots * int64(len(o.shape.protocols)); need > int64(limit) {
		return errors.Errorf("the pool puts %d listeners on load balancer %s of namespace %s, over namespace %s's bound there (%d, spec.consumers.maxListenersPerNamespace of its LoadBalancer); its owners may raise it",
			need, id, tags[mr.TagNamespace], ns, limit)
	}
	return nil
}

// countBindings reads the pool's bindings from the PodAddresses (the
// manager's cache, indexed by pool).
func (e *external) countBindings(ctx context.Context, cr *v1alpha1.PortPool, o *observation) error {
	list := &networkv1alpha1.PodAddressList{}
	// Read only: the pool's PodAddresses are not copied for a count.
	if err := e.kube.List(ctx, list, client.MatchingFields{networkv1alpha1.PoolIndex: poolKey(cr)}, client.UnsafeDisableDeepCopy); err != nil {
		return errors.Wrap(err, "cannot list the PodAddresses of the pool")
	}
	byID := map[string]*lbObs{}
	for _, l := range o.lbs {
		l.bound, l.inUse, l.recorded, l.recordedTargets, l.certs = map[int64]bool{}, listenerSet{}, map[string]string{}, map[string]map[string]bool{}, map[string]string{}
		byID[l.id] = l
	}
	for _, pa := range list.Items {
		for _, b := range pa.RecordedBindings() {
			if b.Pool != poolKey(cr) {
				continue
			}
			o.bindings++
			if l := byID[b.LoadBalancerID]; l != nil {
				l.bound[int64(b.Port)] = true
				l.inUse.add(b)
				for proto, id := range b.ListenerIDs {
					k := key(proto, int64(b.Port))
					l.recorded[k] = id
					if b.CertID != "" {
						l.certs[k] = b.CertID
					}
					if b.TargetIP != "" {
						if l.recordedTargets[k] == nil {
							l.recordedTargets[k] = map[string]bool{}
						}
						l.recordedTargets[k][fmt.Sprintf("%s:%d", b.TargetIP, b.TargetPort)] = true
					}
				}
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
			for _, b := range pa.RecordedBindings() {
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
			Allocated: int64(len(l.bound)), AllocatedListeners: int64(len(l.inUse)),
		}
		if len(l.m.ids) > 0 {
			st.Listeners = l.m.ids
		}
		st.Adopted, st.TKEListeners, st.Inherited = adoptedStatus(l.m.ids, l.adopted), l.tke, l.inherited
		if lb := l.lb; lb != nil {
			st.VIPs = clb.LoadBalancerVIPs(lb)
			// Domain is set on domain-based load balancers only, whose
			// address is the name; LoadBalancerDomain on every public one.
			st.Hostname = clb.Deref(lb.Domain)
			st.Domain = clb.Deref(lb.LoadBalancerDomain)
			if st.Domain == "" {
				st.Domain = st.Hostname
			}
			st.ISP = clb.Deref(lb.VipIsp)
			st.Name, st.Type = clb.Deref(lb.LoadBalancerName), clb.Deref(lb.LoadBalancerType)
			st.AddressIPVersion, st.IPv6Mode = clb.Deref(lb.AddressIPVersion), clb.Deref(lb.IPv6Mode)
		}
		for i := int64(0); i < o.shape.slots; i++ {
			if l.m.usable[i] && !l.bound[o.shape.port(i)] {
				st.Free++
			}
		}
		switch {
		case l.removed:
			st.State, st.Free = v1alpha1.PoolLBRemoved, 0
			st.ListenersWanted, st.ListenersReady = 0, int64(len(o.ownListeners(l)))
		case l.notOwned:
			st.State, st.Free = v1alpha1.PoolLBNotOwned, 0
		case !l.found():
			st.State, st.Free = v1alpha1.PoolLBNotFound, 0
		case l.draining:
			st.State, st.Free = v1alpha1.PoolLBDraining, 0
		case l.blacklisted:
			st.State, st.Free = v1alpha1.PoolLBBlacklisted, 0
		case l.cloudReady() && o.shapeErr == nil && st.ListenersReady == st.ListenersWanted:
			st.State = v1alpha1.PoolLBReady
		default:
			st.State = v1alpha1.PoolLBCreating
		}
		l.status = st
	}
}

func (o *observation) status() v1alpha1.PortPoolObservation {
	s := v1alpha1.PortPoolObservation{Bindings: o.bindings, SlotsPerLoadBalancer: o.shape.slots}
	for _, l := range o.lbs {
		if l.removed && !l.holdsAnything(o) {
			continue // gone from the pool for good
		}
		s.LoadBalancers = append(s.LoadBalancers, l.status)
		s.Allocated += l.status.Allocated
		if l.status.State == v1alpha1.PoolLBReady {
			s.Free += l.status.Free
		}
	}
	return s
}

// diff says, per load balancer, what Update has to do.
func (o *observation) diff() string {
	var d []string
	for _, l := range o.lbs {
		if l.removed {
			if n := len(o.removable(l)); n > 0 {
				d = append(d, fmt.Sprintf("%s: removed from the pool; %d listeners of the pool to delete", l.id, n))
			}
			continue
		}
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
		if l.tkeAuto {
			parts = append(parts, "tke-extend created it for the pool: to tag as the pool's")
		}
		if n := releaseCount(l); n > 0 {
			parts = append(parts, fmt.Sprintf("%d targets tke-extend left for Pods that are gone: to deregister", n))
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

// ownListeners returns the ids of every listener of l named by the pool,
// or taken over from tke-extend.
func (o *observation) ownListeners(l *lbObs) []string {
	var ids []string
	for _, ls := range l.listeners {
		if ls != nil && ls.ListenerId != nil && (clb.Deref(ls.ListenerName) == o.owner.listenerName(clb.Deref(ls.Port)) || l.adopted[*ls.ListenerId]) {
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

// holdsAnything reports whether the pool's bindings or listeners are still
// on l.
func (l *lbObs) holdsAnything(o *observation) bool {
	return len(l.bound) > 0 || len(o.ownListeners(l)) > 0
}

// removable returns the pool's listeners on a removed load balancer once
// no binding is left there: the bindings move first (the PodAddress
// controller deregisters them), so no Pod loses its address to a
// listener deleted under it.
func (o *observation) removable(l *lbObs) []string {
	if !l.removed || len(l.bound) > 0 {
		return nil
	}
	return o.ownListeners(l)
}
