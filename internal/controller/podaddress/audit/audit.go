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

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
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
	clients  cloudClients
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

// API is what the audit calls on a load balancer's cloud client:
// *clb.Client serves it, and so does the fake region of the unit tests.
type API interface {
	DescribeListenersTargets(ctx context.Context, lbID string, listenerIDs []string) (map[string]*clbsdk.ListenerBackend, error)
	ModifyTargetWeight(ctx context.Context, lbID string, ts []clb.Target) (string, error)
	DeregisterTargets(ctx context.Context, lbID string, ts []clb.Target) (string, error)
}

// cloudClients hands out the client of a pool's load balancers in a region.
// A func rather than *targets.Binder, whose ClientFor returns the concrete
// type, so that tests hand out a fake region.
type cloudClients func(ctx context.Context, pool, region string) (API, error)

// binderClients is the clients of binder. A client that cannot be built is
// a nil API, not a nil *clb.Client in one, as the round tells by nil.
func binderClients(binder *targets.Binder) cloudClients {
	return func(ctx context.Context, pool, region string) (API, error) {
		c, err := binder.ClientFor(ctx, pool, region)
		if c == nil {
			return nil, err
		}
		return c, err
	}
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

// NewAuditor returns an Auditor that reads PortPools and PodAddresses from
// kube, confirms foreign targets through api (uncached), describes and
// repairs through binder's clients, and hands missing targets to repairs.
func NewAuditor(kube, api client.Reader, binder *targets.Binder, repairs *Repairs, record event.Recorder, log logging.Logger, interval time.Duration) *Auditor {
	return &Auditor{kube: kube, api: api, clients: binderClients(binder), repairs: repairs, record: record, log: log, interval: interval}
}

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
	c  API
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
		c  API
		lb string
	}
	clientsOf := map[clientKey]API{}
	groups := map[groupKey]*lbAudit{}
	group := func(pool, region, lb string) *lbAudit {
		ck := clientKey{pool, region}
		c, ok := clientsOf[ck]
		if !ok {
			var err error
			if c, err = a.clients(ctx, pool, region); err != nil {
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
