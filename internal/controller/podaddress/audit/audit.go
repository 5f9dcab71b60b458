// Package audit compares, every interval, the targets the PodAddresses
// recorded with what their load balancers' listeners hold, and repairs the
// difference: it resets weights and deregisters foreign targets itself,
// and hands missing targets to the PodAddress reconciles (Repairs), which
// register them again through their Binder.
package audit

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
)

// The drift label values of podaddress_target_drift_total.
const (
	driftMissing = "missing"
	driftWeight  = "weight"
	driftForeign = "foreign"
)

const (
	// ReasonTargetRepaired is the Event of a target put right.
	ReasonTargetRepaired       = "TargetRepaired"
	reasonForeignTargetRemoved = "ForeignTargetRemoved"

	// boundWeight is the weight of every target the provider registers:
	// it sends none, so the API gives its default.
	boundWeight = 10

	// DefaultInterval is how often bound targets are compared with the
	// cloud unless configured otherwise.
	DefaultInterval = 5 * time.Minute
)

// An Auditor compares, every interval, what the PodAddresses recorded with
// what the pools' listeners hold, and repairs the difference: a recorded
// target of a Bound PodAddress that is missing is re-registered (by the
// PodAddress's own reconcile, through the binder, as any registration), a
// weight changed behind our back is reset, and a target that no PodAddress
// recorded is deregistered once it is confirmed foreign. Listeners are
// described per load balancer in calls of 20 (the API's limit), never per
// Pod.
//
// It is a manager Runnable that needs the leader, like the binder: only
// the provider that registers targets audits them.
type Auditor struct {
	kube     client.Reader
	binder   *targets.Binder
	repairs  *Repairs
	record   event.Recorder
	log      logging.Logger
	api      client.Reader // uncached: what confirms a target is foreign
	interval time.Duration

	// suspects are the foreign targets of the previous round. A target is
	// deregistered only when two consecutive rounds saw it, so that one
	// seen while its registration and its record were in flight (and the
	// cache behind) is never taken for foreign.
	suspects map[string]bool

	// failing holds the load balancers whose describe failed, skipped
	// until their time: an unreachable endpoint or region must not slow
	// every round for the others.
	failing map[string]failure
}

// A failure is a load balancer the audit skips until until; failures
// doubles its wait, up to maxAuditBackoff.
type failure struct {
	until    time.Time
	failures int
}

const (
	// parallelAudits bounds the load balancers described at once.
	parallelAudits = 8
	// maxAuditBackoff caps how long a failing load balancer is skipped.
	maxAuditBackoff = 5 * time.Minute
)

// NeedLeaderElection: only the leader audits.
func (a *Auditor) NeedLeaderElection() bool { return true }

// Start audits every interval until the manager stops. A round runs under
// the manager's context, so a shutdown cuts its calls short.
func (a *Auditor) Start(ctx context.Context) error {
	t := time.NewTicker(a.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := a.round(ctx); err != nil && ctx.Err() == nil {
			a.log.Info("Target audit incomplete", "error", err)
		}
		a.repairs.metrics.audits.Inc()
	}
}

// expected is a target a Bound PodAddress recorded.
type expected struct {
	pa *v1alpha1.PodAddress
	t  clb.Target
}

// lbAudit is what one round looks at on one load balancer.
type lbAudit struct {
	c  *clb.Client
	lb string
	// listeners maps each listener to describe to its pool (a PoolKey).
	listeners map[string]string
	expect    []expected
}

// suspect is a target on a pool's listener that no PodAddress recorded.
type suspect struct {
	g    *lbAudit
	t    clb.Target
	pool string
}

func (s suspect) key() string {
	return strings.Join([]string{s.g.lb, s.t.ListenerID, s.t.EniIP, s.t.InstanceID, fmt.Sprint(s.t.Port)}, "|")
}

// round audits once: one DescribeTargets per 20 listeners of each load
// balancer that holds a pool's listeners or a bound target.
func (a *Auditor) round(ctx context.Context) error {
	pps := &clbv1alpha1.PortPoolList{}
	if err := a.kube.List(ctx, pps); err != nil {
		return errors.Wrap(err, "cannot list PortPools")
	}
	pas := &v1alpha1.PodAddressList{}
	if err := a.kube.List(ctx, pas); err != nil {
		return errors.Wrap(err, "cannot list PodAddresses")
	}

	type clientKey struct{ pool, region string }
	type groupKey struct {
		c  *clb.Client
		lb string
	}
	clientsOf := map[clientKey]*clb.Client{}
	groups := map[groupKey]*lbAudit{}
	group := func(pool, region, lb string) *lbAudit {
		ck := clientKey{pool, region}
		c, ok := clientsOf[ck]
		if !ok {
			var err error
			if c, err = a.binder.ClientFor(ctx, pool, region); err != nil {
				a.log.Debug("Target audit skips a pool whose cloud client cannot be built", "pool", pool, "error", err)
			}
			clientsOf[ck] = c
		}
		if c == nil {
			return nil
		}
		gk := groupKey{c, lb}
		g := groups[gk]
		if g == nil {
			g = &lbAudit{c: c, lb: lb, listeners: map[string]string{}}
			groups[gk] = g
		}
		return g
	}

	pools := map[string]*clbv1alpha1.PortPool{}
	for i := range pps.Items {
		pp := &pps.Items[i]
		key := v1alpha1.PoolKey(pp.GetNamespace(), pp.GetName())
		pools[key] = pp
		for _, lb := range pp.Status.AtProvider.LoadBalancers {
			if lb.State == clbv1alpha1.PoolLBNotFound || len(lb.Listeners) == 0 {
				continue
			}
			if g := group(key, lb.Region, lb.ID); g != nil {
				for _, id := range lb.Listeners {
					g.listeners[id] = key
				}
			}
		}
	}
	recorded := recordedTargets(pas.Items)
	for i := range pas.Items {
		pa := &pas.Items[i]
		if !v1alpha1.Serving(pa.Status.State) || pa.Status.BoundAt == nil || pa.GetDeletionTimestamp() != nil {
			continue
		}
		for _, b := range pa.Status.Bindings {
			if !targets.Recorded(b) {
				continue
			}
			g := group(b.Pool, b.Region, b.LoadBalancerID)
			if g == nil {
				continue
			}
			for _, t := range targets.Of(b) {
				if t.ListenerID == "" {
					continue
				}
				if _, ok := g.listeners[t.ListenerID]; !ok {
					g.listeners[t.ListenerID] = b.Pool
				}
				g.expect = append(g.expect, expected{pa: pa, t: t})
			}
		}
	}

	missing := map[types.NamespacedName]*Repair{}
	next := map[string]bool{}
	var foreign []suspect
	var errs []error
	now := time.Now()
	var gs []*lbAudit
	for _, g := range slices.SortedFunc(maps.Values(groups), func(x, y *lbAudit) int { return cmp.Compare(x.lb, y.lb) }) {
		if len(g.listeners) > 0 && !a.failing[g.lb].until.After(now) {
			gs = append(gs, g)
		}
	}
	// Load balancers are described in parallel, so that one slow region
	// does not hold up the others.
	type described struct {
		cloud  map[string]*clbsdk.ListenerBackend
		err    error
		seenAt time.Time
	}
	ds := make([]described, len(gs))
	sem := make(chan struct{}, parallelAudits)
	var wg sync.WaitGroup
	for i, g := range gs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ds[i].seenAt = time.Now()
			ds[i].cloud, ds[i].err = g.c.DescribeListenersTargets(ctx, g.lb, slices.Sorted(maps.Keys(g.listeners)))
		})
	}
	wg.Wait()
	if a.failing == nil {
		a.failing = map[string]failure{}
	}
	for i, g := range gs {
		cloud, err, seenAt := ds[i].cloud, ds[i].err, ds[i].seenAt
		if err != nil {
			errs = append(errs, errors.Wrapf(err, "load balancer %s", g.lb))
			f := a.failing[g.lb]
			f.failures++
			f.until = time.Now().Add(min(a.interval<<min(f.failures, 16), maxAuditBackoff))
			a.failing[g.lb] = f
			continue
		}
		delete(a.failing, g.lb)
		var reweigh []expected
		for _, e := range g.expect {
			l := cloud[e.t.ListenerID]
			if l == nil {
				continue // the listener is gone; not a target's drift
			}
			be := targets.FindBackend(l.Targets, e.t)
			switch {
			case be == nil:
				key := client.ObjectKeyFromObject(e.pa)
				rp := missing[key]
				if rp == nil {
					rp = &Repair{BoundAt: *e.pa.Status.BoundAt, seenAt: seenAt}
					missing[key] = rp
				}
				rp.Targets = append(rp.Targets, e.t)
			case be.Weight != nil && *be.Weight != boundWeight:
				reweigh = append(reweigh, e)
			}
		}
		if len(reweigh) > 0 {
			a.reweigh(ctx, g, reweigh)
		}
		for id, pool := range g.listeners {
			l := cloud[id]
			if l == nil {
				continue
			}
			for _, be := range l.Targets {
				if findTarget(recorded[id], be) {
					continue
				}
				t, ok := backendTarget(id, be)
				if !ok {
					continue
				}
				s := suspect{g: g, t: t, pool: pool}
				next[s.key()] = true
				if a.suspects[s.key()] {
					foreign = append(foreign, s)
				}
			}
		}
	}
	a.suspects = next

	for key, rp := range missing {
		a.repairs.add(ctx, key, *rp)
	}
	if len(foreign) > 0 {
		if err := a.removeForeign(ctx, foreign, pools); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reweigh resets the weight of bound targets, in calls within the API's
// limits per load balancer.
func (a *Auditor) reweigh(ctx context.Context, g *lbAudit, es []expected) {
	slices.SortFunc(es, func(x, y expected) int { return targets.Compare(x.t, y.t) })
	for _, chunk := range weightChunks(es) {
		ts := make([]clb.Target, len(chunk))
		for i, e := range chunk {
			ts[i] = e.t
			ts[i].Weight = ptrTo(int64(boundWeight))
		}
		if _, err := g.c.ModifyTargetWeight(ctx, g.lb, ts); err != nil {
			a.log.Info("Target audit cannot reset target weights", "loadBalancer", g.lb, "error", err)
			continue // the next round tries again
		}
		a.repairs.metrics.drift.WithLabelValues(driftWeight).Add(float64(len(chunk)))
		for _, e := range chunk {
			a.record.Event(e.pa, event.Normal(ReasonTargetRepaired,
				fmt.Sprintf("reset the weight of target %s on listener %s to %d: it was changed behind the provider's back", targets.String(e.t), e.t.ListenerID, boundWeight)))
		}
	}
}

// weightChunks splits es (sorted by listener) into BatchModifyTargetWeight
// calls: at most 500 targets, 100 listeners and 50 targets per listener.
func weightChunks(es []expected) [][]expected {
	const maxTotal, maxListeners, maxPerListener = clb.MaxWeightTargets, clb.MaxWeightRules, clb.MaxWeightRuleTargets
	var out [][]expected
	var cur []expected
	listeners, perListener := 0, 0
	for i, e := range es {
		newListener := i == 0 || es[i-1].t.ListenerID != e.t.ListenerID
		if len(cur) == maxTotal || (newListener && listeners == maxListeners) || (!newListener && perListener == maxPerListener) {
			out, cur, listeners, perListener = append(out, cur), nil, 0, 0
			newListener = true
		}
		if newListener {
			listeners++
			perListener = 0
		}
		perListener++
		cur = append(cur, e)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// removeForeign deregisters the suspects that an uncached read of every
// PodAddress confirms nobody recorded. A target is recorded before its
// registration is sent, and the read comes after the describe that saw it,
// so a target of ours in flight is always in the read.
func (a *Auditor) removeForeign(ctx context.Context, ss []suspect, pools map[string]*clbv1alpha1.PortPool) error {
	pas := &v1alpha1.PodAddressList{}
	if err := a.api.List(ctx, pas); err != nil {
		return errors.Wrap(err, "cannot confirm foreign targets")
	}
	recorded := recordedTargets(pas.Items)
	byLB := map[*lbAudit][]suspect{}
	for _, s := range ss {
		ours := slices.ContainsFunc(recorded[s.t.ListenerID], func(t clb.Target) bool { return targets.Compare(t, s.t) == 0 })
		if !ours {
			byLB[s.g] = append(byLB[s.g], s)
		}
	}
	var errs []error
	for g, ss := range byLB {
		ts := make([]clb.Target, len(ss))
		for i, s := range ss {
			ts[i] = s.t
		}
		if _, err := g.c.DeregisterTargets(ctx, g.lb, ts); err != nil {
			errs = append(errs, errors.Wrapf(err, "cannot deregister foreign targets from load balancer %s", g.lb))
			continue
		}
		a.repairs.metrics.drift.WithLabelValues(driftForeign).Add(float64(len(ss)))
		for _, s := range ss {
			delete(a.suspects, s.key())
			if pp := pools[s.pool]; pp != nil {
				a.record.Event(pp, event.Warning(reasonForeignTargetRemoved, errors.Errorf(
					"deregistered target %s from listener %s of load balancer %s: no PodAddress recorded it", targets.String(s.t), s.t.ListenerID, g.lb)))
			}
		}
	}
	return errors.Join(errs...)
}

// recordedTargets indexes by listener every target the PodAddresses
// recorded, whatever their state: none of them is foreign.
func recordedTargets(pas []v1alpha1.PodAddress) map[string][]clb.Target {
	out := map[string][]clb.Target{}
	for _, pa := range pas {
		for _, b := range pa.RecordedBindings() {
			if !targets.Recorded(b) {
				continue
			}
			for _, t := range targets.Of(b) {
				out[t.ListenerID] = append(out[t.ListenerID], t)
			}
		}
	}
	return out
}

func findTarget(ts []clb.Target, be *clbsdk.Backend) bool {
	return slices.ContainsFunc(ts, func(t clb.Target) bool { return targets.Matches(t, be) })
}

// backendTarget is the target to deregister be with: by instance for a
// CVM bound by instance, by IP otherwise.
func backendTarget(listenerID string, be *clbsdk.Backend) (clb.Target, bool) {
	if be == nil || be.Port == nil {
		return clb.Target{}, false
	}
	t := clb.Target{ListenerID: listenerID, Port: *be.Port}
	if be.Type != nil && *be.Type == "CVM" && be.InstanceId != nil && *be.InstanceId != "" {
		t.InstanceID = *be.InstanceId
		return t, true
	}
	for _, ip := range be.PrivateIpAddresses {
		if ip != nil && *ip != "" {
			t.EniIP = *ip
			return t, true
		}
	}
	return clb.Target{}, false
}

func ptrTo[T any](v T) *T { return &v }

// A Repair is the targets the audit found missing from a Bound
// PodAddress. It holds while the PodAddress stays bound as it was
// (boundAt): bound anew, its targets were registered since.
type Repair struct {
	BoundAt metav1.Time
	// seenAt is when the cloud was read: a finding read before the last
	// repair of the PodAddress ended may predate that repair.
	seenAt  time.Time
	Targets []clb.Target
}

// Repairs hands the audit's findings to the PodAddress reconciles, which
// re-register the targets through the binder, so that a repair never races
// the PodAddress's own registrations and deregistrations.
type Repairs struct {
	metrics *metrics

	mu   sync.Mutex
	m    map[types.NamespacedName]Repair
	done map[types.NamespacedName]time.Time // when each last repair ended
	wake chan ctrlevent.TypedGenericEvent[*v1alpha1.PodAddress]
}

// NewRepairs returns an empty Repairs whose drift is counted in reg.
func NewRepairs(reg prometheus.Registerer) *Repairs {
	return &Repairs{
		metrics: newMetrics(reg),
		m:       map[types.NamespacedName]Repair{}, done: map[types.NamespacedName]time.Time{},
		wake: make(chan ctrlevent.TypedGenericEvent[*v1alpha1.PodAddress], 1024),
	}
}

// add records rp for key and wakes its reconcile. A finding read from the
// cloud before the PodAddress's last repair ended is dropped: that repair
// may have put the targets back after the read (a round that overlaps
// the repair of the round before on a busy machine), and counting it again
// would report drift that is not there.
func (rs *Repairs) add(ctx context.Context, key types.NamespacedName, rp Repair) {
	rs.mu.Lock()
	if rp.seenAt.Before(rs.done[key]) {
		rs.mu.Unlock()
		return
	}
	for k, at := range rs.done {
		if time.Since(at) > time.Hour {
			delete(rs.done, k) // bounded: only recent repairs matter
		}
	}
	rs.m[key] = rp
	rs.mu.Unlock()
	obj := &v1alpha1.PodAddress{}
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	select {
	case rs.wake <- ctrlevent.TypedGenericEvent[*v1alpha1.PodAddress]{Object: obj}:
	case <-ctx.Done():
	}
}

// Get returns the repair waiting for key.
func (rs *Repairs) Get(key types.NamespacedName) (Repair, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rp, ok := rs.m[key]
	return rp, ok
}

// Finish drops the repair of key, records when it ended and counts the n
// targets it registered again.
func (rs *Repairs) Finish(key types.NamespacedName, n int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.m, key)
	rs.done[key] = time.Now()
	rs.metrics.drift.WithLabelValues(driftMissing).Add(float64(n))
}

// Drop drops the repair of key unperformed.
func (rs *Repairs) Drop(key types.NamespacedName) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.m, key)
}

// Wake carries the PodAddresses that have a repair waiting.
func (rs *Repairs) Wake() <-chan ctrlevent.TypedGenericEvent[*v1alpha1.PodAddress] { return rs.wake }

// NewAuditor returns an Auditor that reads PortPools and PodAddresses from
// kube, confirms foreign targets through api (uncached), describes and
// repairs through binder's clients, and hands missing targets to repairs.
func NewAuditor(kube, api client.Reader, binder *targets.Binder, repairs *Repairs, record event.Recorder, log logging.Logger, interval time.Duration) *Auditor {
	return &Auditor{kube: kube, api: api, binder: binder, repairs: repairs, record: record, log: log, interval: interval}
}

// metrics count the audit's rounds and the drift it repaired.
type metrics struct {
	drift  *prometheus.CounterVec
	audits prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		drift: tcapi.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podaddress_target_drift_total",
			Help: "Targets the audit found changed behind the provider's back and repaired, by drift: missing (re-registered), weight (reset) or foreign (deregistered).",
		}, []string{"drift"})),
		audits: tcapi.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podaddress_target_audits_total",
			Help: "Target audit rounds completed.",
		})),
	}
}
