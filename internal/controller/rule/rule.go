// Package rule manages the layer-7 forwarding rules (domain + URL) of HTTP
// and HTTPS listeners.
package rule

import (
	"context"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// Setup adds the Rule controller.
func Setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool) error {
	return mr.Setup(mgr, o, pool, mr.Kind[*v1alpha1.Rule, *clb.Client]{
		GVK:    v1alpha1.RuleGroupVersionKind,
		Object: func() *v1alpha1.Rule { return &v1alpha1.Rule{} },
		New: func(c *clb.Client, kube client.Client) managed.TypedExternalClient[*v1alpha1.Rule] {
			return &external{c: c, owners: mr.Owners{Kube: kube}}
		},
		// Observe reports a rule whose create task still runs as existing
		// even before the listener lists it, so the reconciler need not
		// distrust a "not found" after a create. Its default 30 s grace
		// would also hold up the deletion of a rule created just before.
		Options: []managed.ReconcilerOption{managed.WithCreationGracePeriod(0)},
	})
}

// api is what this controller needs of the cloud client.
type api interface {
	mr.TaskChecker
	DescribeLoadBalancer(ctx context.Context, id string) (*clbsdk.LoadBalancer, error)
	DescribeListener(ctx context.Context, lbID, listenerID string) (*clbsdk.Listener, error)
	CreateRule(ctx context.Context, req *clbsdk.CreateRuleRequest) ([]string, string, error)
	ModifyRule(ctx context.Context, req *clbsdk.ModifyRuleRequest) (string, error)
	DeleteRule(ctx context.Context, req *clbsdk.DeleteRuleRequest) (string, error)
}

type external struct {
	c      api
	owners mr.Owners
}

func lbID(cr *v1alpha1.Rule) string { return clb.Deref(cr.Spec.ForProvider.LoadBalancerID) }

func listenerID(cr *v1alpha1.Rule) string { return clb.Deref(cr.Spec.ForProvider.ListenerID) }

// errNotL7 is the error of a rule whose listener cannot hold rules. Its
// text is stable, so the condition does not change between retries and the
// reconciler's backoff spaces them out.
func errNotL7(listenerID, protocol string) error {
	return errors.Errorf("listener %s is %s; rules need an HTTP or HTTPS listener", listenerID, protocol)
}

// codeLBNotFound is the API's answer for a load balancer that does not exist.
const codeLBNotFound = "InvalidParameter.LBIdNotFound"

// errMissing explains a NotFound answer about the rule's listener.
func errMissing(err error, lbID, listenerID string) error {
	if clb.Code(err) == codeLBNotFound {
		return errors.Errorf("load balancer %s does not exist", lbID)
	}
	return errors.Errorf("listener %s of load balancer %s does not exist", listenerID, lbID)
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.Rule) (managed.ExternalObservation, error) {
	switch {
	case lbID(cr) == "":
		return managed.ExternalObservation{}, errors.New("spec.forProvider.loadBalancerId is not set and no reference resolved it")
	case listenerID(cr) == "":
		return managed.ExternalObservation{}, errors.New("spec.forProvider.listenerId is not set and no reference resolved it")
	}
	id := meta.GetExternalName(cr)
	if was := cr.Status.AtProvider.ListenerID; id != "" && was != "" && was != listenerID(cr) {
		return managed.ExternalObservation{}, errors.Errorf("rule %s belongs to listener %s, not %s; a rule cannot move to another listener: create a new Rule",
			id, was, listenerID(cr))
	}
	if err := e.owned(ctx, cr); err != nil {
		return mr.Refuse(cr, err)
	}
	l, err := e.c.DescribeListener(ctx, lbID(cr), listenerID(cr))
	if clb.IsNotFound(err) {
		if meta.WasDeleted(cr) {
			// The rule went with its listener or load balancer.
			return managed.ExternalObservation{}, nil
		}
		return managed.ExternalObservation{}, errMissing(err, lbID(cr), listenerID(cr))
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot describe the rule's listener")
	}
	if p := clb.Deref(l.Protocol); !clb.IsL7(p) {
		if meta.WasDeleted(cr) {
			return managed.ExternalObservation{}, nil // such a listener holds no rules
		}
		return managed.ExternalObservation{}, errNotL7(listenerID(cr), p)
	}

	r, adopted, err := e.find(cr, l)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if r == nil {
		return e.missing(ctx, cr)
	}
	running, err := mr.Check(ctx, e.c, cr, &cr.Status.AtProvider.Task)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot check the rule's task")
	}
	cr.Status.AtProvider = clb.ObserveRule(cr.Status.AtProvider.Task, lbID(cr), l, r)
	if got, want := clb.RuleDomain(r), cr.Spec.ForProvider.Domain; got != want {
		return managed.ExternalObservation{}, errors.Errorf("rule %s matches domain %q, not %q; the domain of a rule cannot change: set %q or create a new Rule",
			clb.Deref(r.LocationId), got, want, got)
	}
	lateInit := mr.MayLateInitialize(cr) && clb.LateInitRule(&cr.Spec.ForProvider, r)

	if running && cr.Status.AtProvider.Task.Operation == mr.OpCreate {
		cr.SetConditions(xpv2.Creating())
	} else {
		cr.SetConditions(xpv2.Available())
	}
	obs := managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        true,
		ResourceLateInitialized: lateInit || adopted,
	}
	// A running task locks the load balancer; act on drift once it ends.
	if !running {
		obs.Diff = clb.DiffRule(cr.Spec.ForProvider, r)
		obs.ResourceUpToDate = obs.Diff == ""
	}
	return obs, nil
}

// owned refuses a load balancer the namespace may not build on (or, on
// one shared with it, a listener it does not hold), before the rule is looked for, made or changed on it. One that does not
// exist is left to the listener's NotFound.
func (e *external) owned(ctx context.Context, cr *v1alpha1.Rule) error {
	lb, err := e.c.DescribeLoadBalancer(ctx, lbID(cr))
	switch {
	case clb.IsNotFound(err):
		return nil
	case err != nil:
		return errors.Wrap(err, "cannot describe the rule's load balancer")
	}
	tags := clb.LoadBalancerTags(lb)
	if err := e.owners.Check(ctx, cr, mr.BuildOn, "load balancer "+lbID(cr), lbID(cr), tags); err != nil {
		return err
	}
	if mr.Shared(cr.GetNamespace(), tags) {
		return e.owners.HeldListener(ctx, cr.GetNamespace(), lbID(cr), listenerID(cr))
	}
	return nil
}

// find returns the rule of cr by its external name or, when none is saved
// yet, the rule with the same domain and URL that a create whose id was
// lost left behind. A listener holds one rule per domain and URL, so the
// rule found is the only one this resource can mean; it is adopted only
// when this resource did send a create that may have made it, so that two
// resources never silently share a rule.
func (e *external) find(cr *v1alpha1.Rule, l *clbsdk.Listener) (*clbsdk.RuleOutput, bool, error) {
	if id := meta.GetExternalName(cr); id != "" {
		return clb.FindRule(l, id), false, nil
	}
	p := cr.Spec.ForProvider
	r := clb.FindRuleByMatch(l, p.Domain, p.URL)
	if r == nil {
		return nil, false, nil
	}
	if !createMayHaveSucceeded(cr) {
		return nil, false, errors.Errorf("listener %s already has a rule for %s%s (%s); set its id as this resource's external name to manage it",
			listenerID(cr), p.Domain, p.URL, clb.Deref(r.LocationId))
	}
	meta.SetExternalName(cr, clb.Deref(r.LocationId))
	return r, true, nil
}

// createMayHaveSucceeded reports whether the reconciler started a create
// whose outcome was never recorded: a create is pending, and no failure
// was recorded after it.
func createMayHaveSucceeded(cr *v1alpha1.Rule) bool {
	pending := meta.GetExternalCreatePending(cr)
	return !pending.IsZero() && meta.GetExternalCreateFailed(cr).Before(pending)
}

// missing observes a rule its listener does not list. A rule whose create
// task still runs may not be listed yet; it exists, and is not Ready.
func (e *external) missing(ctx context.Context, cr *v1alpha1.Rule) (managed.ExternalObservation, error) {
	if _, op := mr.Pending(cr, cr.Status.AtProvider.Task); meta.GetExternalName(cr) == "" || op != mr.OpCreate || meta.WasDeleted(cr) {
		return managed.ExternalObservation{}, nil
	}
	running, err := mr.Check(ctx, e.c, cr, &cr.Status.AtProvider.Task)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot check the rule's task")
	}
	if !running {
		return managed.ExternalObservation{}, nil
	}
	cr.SetConditions(xpv2.Creating())
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.Rule) (managed.ExternalCreation, error) {
	cr.SetConditions(xpv2.Creating())
	ids, task, err := e.c.CreateRule(ctx, clb.CreateRuleRequest(lbID(cr), listenerID(cr), cr.Spec.ForProvider))
	return mr.Created(cr, ids, task, err, "create rule", false)
}

func (e *external) Update(ctx context.Context, cr *v1alpha1.Rule) (managed.ExternalUpdate, error) {
	task, err := e.c.ModifyRule(ctx, clb.ModifyRuleRequest(lbID(cr), listenerID(cr), meta.GetExternalName(cr), cr.Spec.ForProvider))
	return mr.Updated(&cr.Status.AtProvider.Task, task, err, "modify rule")
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.Rule) (managed.ExternalDelete, error) {
	if mr.Deleting(cr, cr.Status.AtProvider.Task) {
		return managed.ExternalDelete{}, nil
	}
	task, err := e.c.DeleteRule(ctx, clb.DeleteRuleRequest(lbID(cr), listenerID(cr), meta.GetExternalName(cr)))
	return mr.Deleted(&cr.Status.AtProvider.Task, task, err, "rule")
}

func (e *external) Disconnect(context.Context) error { return nil }
