// Package loadbalancer manages CLB instances.
package loadbalancer

import (
	"context"
	"slices"
	"strings"

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

// Tags the provider puts on every load balancer it creates (see mr.TagUID).
const (
	TagUID       = mr.TagUID
	TagNamespace = mr.TagNamespace
	TagName      = mr.TagName
	TagKind      = mr.TagKind
)

// Connection detail keys.
const (
	ConnVIP    = "vip"
	ConnDomain = "domain"
)

// Setup adds the LoadBalancer controller.
func Setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool) error {
	return mr.Setup(mgr, o, pool, mr.Kind[*v1alpha1.LoadBalancer, *clb.Client]{
		GVK:    v1alpha1.LoadBalancerGroupVersionKind,
		Object: func() *v1alpha1.LoadBalancer { return &v1alpha1.LoadBalancer{} },
		New: func(c *clb.Client, kube client.Client) managed.TypedExternalClient[*v1alpha1.LoadBalancer] {
			return &external{c: c, kube: kube, owners: mr.Owners{Kube: kube}}
		},
	})
}

// api is what this controller needs of the cloud client.
type api interface {
	mr.TaskChecker
	CreateLoadBalancer(ctx context.Context, req *clbsdk.CreateLoadBalancerRequest) ([]string, string, error)
	DescribeLoadBalancer(ctx context.Context, id string) (*clbsdk.LoadBalancer, error)
	FindLoadBalancersByTag(ctx context.Context, key, value string) ([]*clbsdk.LoadBalancer, error)
	FindLoadBalancersByName(ctx context.Context, name string) ([]*clbsdk.LoadBalancer, error)
	ModifyLoadBalancerAttributes(ctx context.Context, req *clbsdk.ModifyLoadBalancerAttributesRequest) (string, error)
	DeleteLoadBalancer(ctx context.Context, id string) (string, error)
}

type external struct {
	c      api
	kube   client.Client
	owners mr.Owners
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.LoadBalancer) (managed.ExternalObservation, error) {
	// A deletion goes on: what it may touch is decided by the owner tags
	// of the cloud object, not by the spec.
	if err := mr.CheckTags("spec.forProvider.tags", cr.Spec.ForProvider.Tags); err != nil && !meta.WasDeleted(cr) {
		return managed.ExternalObservation{}, err
	}
	lb, how, err := e.find(ctx, cr)
	if err != nil || lb == nil {
		return managed.ExternalObservation{}, err
	}
	if err := e.owners.Check(ctx, cr, mr.Manage, "load balancer "+clb.Deref(lb.LoadBalancerId), clb.Deref(lb.LoadBalancerId), clb.LoadBalancerTags(lb)); err != nil {
		return mr.Refuse(cr, err)
	}
	adopted, err := e.save(ctx, cr, lb, how)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	running, err := mr.Check(ctx, e.c, cr, &cr.Status.AtProvider.Task)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot check the load balancer's task")
	}
	cr.Status.AtProvider = clb.ObserveLoadBalancer(lb, cr.Status.AtProvider.Task)
	lateInit := mr.MayLateInitialize(cr) && clb.LateInitLoadBalancer(&cr.Spec.ForProvider, lb)

	// Ready follows the cloud's own status: Creating (0) until Normal (1).
	if cr.Status.AtProvider.Status == clb.LoadBalancerNormal {
		cr.SetConditions(xpv2.Available())
	} else {
		cr.SetConditions(xpv2.Creating())
	}

	obs := managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        true,
		ResourceLateInitialized: lateInit || adopted,
		ConnectionDetails:       connectionDetails(cr.Status.AtProvider),
	}
	// While a task runs the load balancer rejects writes; its state settles
	// when the task ends, and only then is drift worth acting on.
	if !running && cr.Status.AtProvider.Status == clb.LoadBalancerNormal {
		obs.Diff = clb.DiffLoadBalancer(cr.Spec.ForProvider, lb)
		obs.ResourceUpToDate = obs.Diff == ""
	}
	return obs, nil
}

// How find found a load balancer, which says what save does.
type found int

const (
	byExternalName found = iota
	byName
	byUIDTag
)

// find returns the load balancer of cr: by its external name, or, when
// none is saved yet, by name for a resource that may not create (an
// import), else by the UID tag of a create whose id was lost. It saves
// nothing: the owner is checked first.
func (e *external) find(ctx context.Context, cr *v1alpha1.LoadBalancer) (*clbsdk.LoadBalancer, found, error) {
	if id := meta.GetExternalName(cr); id != "" {
		lb, err := e.c.DescribeLoadBalancer(ctx, id)
		if clb.IsNotFound(err) {
			return nil, byExternalName, nil
		}
		return lb, byExternalName, errors.Wrap(err, "cannot describe load balancer")
	}
	if name := cr.Spec.ForProvider.Name; name != nil && !mayCreate(cr) {
		lb, err := e.findByName(ctx, *name)
		return lb, byName, err
	}
	found, err := e.c.FindLoadBalancersByTag(ctx, TagUID, string(cr.GetUID()))
	if err != nil || len(found) == 0 {
		return nil, byUIDTag, errors.Wrap(err, "cannot look for a load balancer created earlier")
	}
	return found[0], byUIDTag, nil
}

// save records the id of a load balancer found by name or tag as cr's
// external name and reports whether cr changed. One found by name is
// saved at once: an Observe-only resource is never updated by the
// reconciler, and the id must not depend on the name staying unique.
func (e *external) save(ctx context.Context, cr *v1alpha1.LoadBalancer, lb *clbsdk.LoadBalancer, how found) (bool, error) {
	id := clb.Deref(lb.LoadBalancerId)
	switch how {
	case byName:
		orig := cr.DeepCopy()
		meta.SetExternalName(cr, id)
		return false, errors.Wrap(e.kube.Patch(ctx, cr, client.MergeFrom(orig)), "cannot save the external name of the load balancer found by name")
	case byUIDTag:
		meta.SetExternalName(cr, id)
		return true, nil
	}
	return false, nil
}

// mayCreate reports whether the management policies let the provider
// create the load balancer.
func mayCreate(cr *v1alpha1.LoadBalancer) bool {
	p := cr.GetManagementPolicies()
	return len(p) == 0 || slices.Contains(p, xpv2.ManagementActionAll) || slices.Contains(p, xpv2.ManagementActionCreate)
}

// findByName finds the one load balancer named name. None or several of
// that name is an error for the user to resolve.
func (e *external) findByName(ctx context.Context, name string) (*clbsdk.LoadBalancer, error) {
	found, err := e.c.FindLoadBalancersByName(ctx, name)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot look for the load balancer named %q", name)
	}
	switch len(found) {
	case 0:
		return nil, errors.Errorf("no load balancer is named %q in this region; create it, or set the external name to its id", name)
	case 1:
		return found[0], nil
	}
	ids := make([]string, 0, len(found))
	for _, lb := range found {
		ids = append(ids, clb.Deref(lb.LoadBalancerId))
	}
	slices.Sort(ids)
	return nil, errors.Errorf("%d load balancers are named %q (%s); set the external name to the id of the one to import",
		len(found), name, strings.Join(ids, ", "))
}

// owned checks the owner tags Observe just read into the status, so that
// Update and Delete never write a load balancer of another namespace even
// when called without that Observe.
func (e *external) owned(ctx context.Context, cr *v1alpha1.LoadBalancer) error {
	return e.owners.Check(ctx, cr, mr.Manage, "load balancer "+meta.GetExternalName(cr), meta.GetExternalName(cr), cr.Status.AtProvider.Tags)
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.LoadBalancer) (managed.ExternalCreation, error) {
	if err := mr.CheckTags("spec.forProvider.tags", cr.Spec.ForProvider.Tags); err != nil {
		return managed.ExternalCreation{}, err
	}
	cr.SetConditions(xpv2.Creating())
	ids, task, err := e.c.CreateLoadBalancer(ctx, CreateRequest(cr))
	return mr.Created(cr, ids, task, err, "create load balancer", true)
}

func (e *external) Update(ctx context.Context, cr *v1alpha1.LoadBalancer) (managed.ExternalUpdate, error) {
	if err := e.owned(ctx, cr); err != nil {
		return managed.ExternalUpdate{}, err
	}
	req := clb.ModifyLoadBalancerRequest(meta.GetExternalName(cr), cr.Spec.ForProvider)
	task, err := e.c.ModifyLoadBalancerAttributes(ctx, req)
	return mr.Updated(&cr.Status.AtProvider.Task, task, err, "modify load balancer")
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.LoadBalancer) (managed.ExternalDelete, error) {
	if mr.Deleting(cr, cr.Status.AtProvider.Task) {
		return managed.ExternalDelete{}, nil
	}
	if err := e.owned(ctx, cr); err != nil {
		return managed.ExternalDelete{}, err
	}
	users, err := e.users(ctx, cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if len(users) > 0 {
		return managed.ExternalDelete{}, errInUse(users)
	}
	task, err := e.c.DeleteLoadBalancer(ctx, meta.GetExternalName(cr))
	return mr.Deleted(&cr.Status.AtProvider.Task, task, err, "load balancer")
}

func (e *external) Disconnect(context.Context) error { return nil }
