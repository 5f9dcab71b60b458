// Package targetset manages the whole list of targets (backends) of one
// listener or one rule.
package targetset

import (
	"context"
	"slices"

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

// Setup adds the TargetSet controller.
func Setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool) error {
	if err := setupIndexes(mgr); err != nil {
		return err
	}
	nodes := newNodeUsers()
	return mr.Setup(mgr, o, pool, mr.Kind[*v1alpha1.TargetSet, *clb.Client]{
		GVK:    v1alpha1.TargetSetGroupVersionKind,
		Object: func() *v1alpha1.TargetSet { return &v1alpha1.TargetSet{} },
		New: func(c *clb.Client, kube client.Client) managed.TypedExternalClient[*v1alpha1.TargetSet] {
			return &external{c: c, health: c, src: &resolver{kube: kube, nodes: nodes}, owners: mr.Owners{Kube: kube}}
		},
		Watches: watches{kube: mgr.GetClient(), nodes: nodes}.list(),
		// Registering and deregistering are synchronous, so a "not found"
		// is never a create the cloud has not caught up with; the default
		// 30 s grace would only hold up the deletion of a new TargetSet.
		Options: []managed.ReconcilerOption{managed.WithCreationGracePeriod(0)},
	})
}

// api is what this controller needs of the cloud client. Register and
// deregister calls of every caller are batched per load balancer by the
// client, so this controller sends its own difference as it is.
type api interface {
	mr.TaskChecker
	DescribeLoadBalancer(ctx context.Context, id string) (*clbsdk.LoadBalancer, error)
	DescribeTargets(ctx context.Context, lbID, listenerID string) (*clbsdk.ListenerBackend, error)
	RegisterTargets(ctx context.Context, lbID string, targets []clb.Target) (string, error)
	DeregisterTargets(ctx context.Context, lbID string, targets []clb.Target) (string, error)
	ModifyTargetWeight(ctx context.Context, lbID string, targets []clb.Target) (string, error)
}

// external serves one reconcile. seen holds the targets its Observe found
// and want those it resolved, so that Update and Delete act on the same
// view without describing or resolving again.
type external struct {
	c        api
	health   healthAPI // nil: no health verdicts
	src      *resolver
	owners   mr.Owners
	seen     []v1alpha1.TargetObservation
	read     bool
	want     []v1alpha1.Target
	resolved bool
}

// desired returns the targets cr wants, resolving its source once per
// reconcile.
func (e *external) desired(ctx context.Context, cr *v1alpha1.TargetSet) ([]v1alpha1.Target, error) {
	if !e.resolved {
		want, err := e.src.desired(ctx, cr)
		if err != nil {
			return nil, errors.Wrap(err, "cannot resolve the targets")
		}
		e.want, e.resolved = want, true
	}
	return e.want, nil
}

func lbID(cr *v1alpha1.TargetSet) string { return clb.Deref(cr.Spec.ForProvider.LoadBalancerID) }

// mayUpdate reports whether the management policies let the provider
// change the cloud's targets.
func mayUpdate(cr *v1alpha1.TargetSet) bool {
	p := cr.GetManagementPolicies()
	return len(p) == 0 || slices.Contains(p, xpv2.ManagementActionAll) || slices.Contains(p, xpv2.ManagementActionUpdate)
}

// resolve returns the listener or rule of cr: its external name once set,
// else the spec. A spec that names another listener or rule than the
// external name is refused: the targets would stay behind on the old one.
func resolve(cr *v1alpha1.TargetSet) (identity, error) {
	if lbID(cr) == "" {
		return identity{}, errors.New("spec.forProvider.loadBalancerId is not set and no reference resolved it")
	}
	p := cr.Spec.ForProvider
	spec := identity{listener: clb.Deref(p.ListenerID), rule: clb.Deref(p.RuleID)}
	name := meta.GetExternalName(cr)
	if name == "" {
		if spec.listener == "" {
			return identity{}, errors.New("spec.forProvider.listenerId is not set and no reference resolved it")
		}
		return spec, nil
	}
	id, err := parseExternalName(name)
	if err != nil {
		return identity{}, err
	}
	if (spec.listener != "" && spec.listener != id.listener) || (spec.rule != "" && spec.rule != id.rule) {
		return identity{}, errors.Errorf("spec.forProvider names %s but this TargetSet holds the targets of %s; a TargetSet cannot move: create a new one",
			spec, id)
	}
	return id, nil
}

// codeLBNotFound is the API's answer for a load balancer that does not exist.
const codeLBNotFound = "InvalidParameter.LBIdNotFound"

// describe returns the cloud's targets of id. Missing is true when the
// listener or rule does not exist; err explains why, unless the resource
// is being deleted (then its targets went with it). A load balancer of
// another namespace is refused first (mr.Owners): every write starts
// from what describe saw.
func (e *external) describe(ctx context.Context, cr *v1alpha1.TargetSet, id identity) (missing bool, err error) {
	if err := e.owned(ctx, cr, id); err != nil {
		return false, err
	}
	l, err := e.c.DescribeTargets(ctx, lbID(cr), id.listener)
	if clb.IsNotFound(err) {
		if clb.Code(err) == codeLBNotFound {
			return true, errors.Errorf("load balancer %s does not exist", lbID(cr))
		}
		return true, errors.Errorf("listener %s of load balancer %s does not exist", id.listener, lbID(cr))
	}
	if err != nil {
		return false, errors.Wrap(err, "cannot describe targets")
	}
	protocol := clb.Deref(l.Protocol)
	l7 := protocol == "HTTP" || protocol == "HTTPS"
	switch {
	case l7 && id.rule == "":
		return true, errors.Errorf("listener %s is %s; its targets belong to its rules: set ruleId", id.listener, protocol)
	case !l7 && id.rule != "":
		return true, errors.Errorf("listener %s is %s and has no rules; unset ruleId", id.listener, protocol)
	}
	bs, ok := clb.BackendsOf(l, id.rule)
	if !ok {
		return true, errors.Errorf("rule %s of listener %s does not exist", id.rule, id.listener)
	}
	e.seen, e.read = observe(bs), true
	return false, nil
}

// owned refuses a load balancer the namespace may not build on, and on
// one shared with it a listener it does not hold. One that does not exist
// is left to DescribeTargets' NotFound.
func (e *external) owned(ctx context.Context, cr *v1alpha1.TargetSet, id identity) error {
	lb, err := e.c.DescribeLoadBalancer(ctx, lbID(cr))
	switch {
	case clb.IsNotFound(err):
		return nil
	case err != nil:
		return errors.Wrap(err, "cannot describe the targets' load balancer")
	}
	tags := clb.LoadBalancerTags(lb)
	if err := e.owners.Check(ctx, cr, mr.BuildOn, "load balancer "+lbID(cr), lbID(cr), tags); err != nil {
		return err
	}
	if mr.Shared(cr.GetNamespace(), tags) {
		return e.owners.HeldListener(ctx, cr.GetNamespace(), lbID(cr), id.listener)
	}
	return nil
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.TargetSet) (managed.ExternalObservation, error) {
	id, err := resolve(cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if missing, err := e.describe(ctx, cr, id); err != nil {
		if missing && meta.WasDeleted(cr) {
			return managed.ExternalObservation{}, nil
		}
		return mr.Refuse(cr, err)
	}
	cr.Status.AtProvider.Targets = e.withHealth(ctx, cr, id, e.seen)
	if meta.GetExternalName(cr) == "" {
		return managed.ExternalObservation{}, nil
	}
	if meta.WasDeleted(cr) {
		e.src.forget(cr)
		// Deletion ends when no target is left.
		return managed.ExternalObservation{ResourceExists: len(e.seen) > 0, ResourceUpToDate: true}, nil
	}
	// A source that cannot be resolved changes nothing: the error is the
	// Synced condition's, and the targets stay as they are.
	want, err := e.desired(ctx, cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	running, err := mr.Check(ctx, e.c, cr, &cr.Status.AtProvider.Task)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot check the targets' task")
	}
	lateInit := mr.MayLateInitialize(cr) && lateInitialize(&cr.Spec.ForProvider, id)

	ch := plan(want, e.seen)
	// Available once the cloud's set matches the spec (for a resource that
	// may not update, whatever the cloud has is the truth). Until then it
	// is Creating; later drift leaves Ready alone while Update corrects it.
	switch {
	case !mayUpdate(cr) || (ch.empty() && !running):
		cr.SetConditions(xpv2.Available())
	case cr.GetCondition(xpv2.TypeReady).Status != "True":
		cr.SetConditions(xpv2.Creating())
	}
	obs := managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        true,
		ResourceLateInitialized: lateInit,
	}
	// A running task locks the load balancer; act on drift once it ends.
	if !running {
		obs.Diff = ch.String()
		obs.ResourceUpToDate = ch.empty()
	}
	return obs, nil
}

// lateInitialize fills the listener and rule from the external name of an
// imported TargetSet.
func lateInitialize(p *v1alpha1.TargetSetParameters, id identity) bool {
	changed := false
	if p.ListenerID == nil {
		p.ListenerID = clb.Ptr(id.listener)
		changed = true
	}
	if p.RuleID == nil && id.rule != "" {
		p.RuleID = clb.Ptr(id.rule)
		changed = true
	}
	return changed
}

// current returns the targets Observe saw, describing them when this
// external client has not.
func (e *external) current(ctx context.Context, cr *v1alpha1.TargetSet, id identity) ([]v1alpha1.TargetObservation, error) {
	if !e.read {
		if _, err := e.describe(ctx, cr, id); err != nil {
			return nil, err
		}
	}
	return e.seen, nil
}

// Create takes over the listener or rule and registers the spec's targets
// that are not bound yet, so a create whose result was lost is not sent
// twice. Targets already bound with another weight, and targets the spec
// does not list, are the next Update's.
func (e *external) Create(ctx context.Context, cr *v1alpha1.TargetSet) (managed.ExternalCreation, error) {
	cr.SetConditions(xpv2.Creating())
	id, err := resolve(cr)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	seen, err := e.current(ctx, cr, id)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	want, err := e.desired(ctx, cr)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	meta.SetExternalName(cr, id.String())
	if add := plan(want, seen).Register; len(add) > 0 {
		if _, err := e.c.RegisterTargets(ctx, lbID(cr), targets(id, add, true)); err != nil {
			return managed.ExternalCreation{}, errors.Wrap(err, "cannot register targets")
		}
	}
	return managed.ExternalCreation{}, nil
}

// Update sends only the difference: deregisters targets the spec dropped,
// registers new ones and re-weights changed ones. Registering and
// deregistering end when the calls return; a weight change is a task that
// locks the load balancer, so it goes last and at most 50 at a time.
func (e *external) Update(ctx context.Context, cr *v1alpha1.TargetSet) (managed.ExternalUpdate, error) {
	id, err := resolve(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	seen, err := e.current(ctx, cr, id)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	want, err := e.desired(ctx, cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	ch := plan(want, seen)
	if len(ch.Deregister) > 0 {
		if _, err := e.c.DeregisterTargets(ctx, lbID(cr), targets(id, ch.Deregister, false)); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, "cannot deregister targets")
		}
	}
	if len(ch.Register) > 0 {
		if _, err := e.c.RegisterTargets(ctx, lbID(cr), targets(id, ch.Register, true)); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, "cannot register targets")
		}
	}
	if len(ch.Reweight) > 0 {
		task, err := e.c.ModifyTargetWeight(ctx, lbID(cr), targets(id, ch.Reweight[:min(len(ch.Reweight), maxWeightChanges)], true))
		return mr.Updated(&cr.Status.AtProvider.Task, task, err, "change target weights")
	}
	return managed.ExternalUpdate{}, nil
}

// Delete deregisters every target of the listener or rule, listed in the
// spec or not: the TargetSet owns the whole list.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.TargetSet) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	id, err := resolve(cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	seen, err := e.current(ctx, cr, id)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	all := plan(nil, seen).Deregister
	if len(all) == 0 {
		return managed.ExternalDelete{}, nil
	}
	if _, err := e.c.DeregisterTargets(ctx, lbID(cr), targets(id, all, false)); err != nil && !clb.IsNotFound(err) {
		return managed.ExternalDelete{}, errors.Wrap(err, "cannot deregister targets")
	}
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }
