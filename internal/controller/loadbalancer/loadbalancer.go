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
			return &external{c: c, kube: kube}
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
	c    api
	kube client.Client
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.LoadBalancer) (managed.ExternalObservation, error) {
	lb, adopted, err := e.find(ctx, cr)
	if err != nil || lb == nil {
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

// find returns the load balancer of cr: by its external name, or, when
// none is saved yet, by name for a resource that may not create (an
// import), else by the UID tag of a create whose id was lost.
func (e *external) find(ctx context.Context, cr *v1alpha1.LoadBalancer) (lb *clbsdk.LoadBalancer, adopted bool, err error) {
	if id := meta.GetExternalName(cr); id != "" {
		lb, err := e.c.DescribeLoadBalancer(ctx, id)
		if clb.IsNotFound(err) {
			return nil, false, nil
		}
		return lb, false, errors.Wrap(err, "cannot describe load balancer")
	}
	if name := cr.Spec.ForProvider.Name; name != nil && !mayCreate(cr) {
		lb, err := e.importByName(ctx, cr, *name)
		return lb, false, err
	}
	found, err := e.c.FindLoadBalancersByTag(ctx, TagUID, string(cr.GetUID()))
	if err != nil || len(found) == 0 {
		return nil, false, errors.Wrap(err, "cannot look for a load balancer created earlier")
	}
	meta.SetExternalName(cr, clb.Deref(found[0].LoadBalancerId))
	return found[0], true, nil
}

// mayCreate reports whether the management policies let the provider
// create the load balancer.
func mayCreate(cr *v1alpha1.LoadBalancer) bool {
	p := cr.GetManagementPolicies()
	return len(p) == 0 || slices.Contains(p, xpv2.ManagementActionAll) || slices.Contains(p, xpv2.ManagementActionCreate)
}

// importByName finds the one load balancer named name and saves its id as
// the external name at once: an Observe-only resource is never updated by
// the reconciler, and the id must not depend on the name staying unique.
// None or several of that name is an error for the user to resolve.
func (e *external) importByName(ctx context.Context, cr *v1alpha1.LoadBalancer, name string) (*clbsdk.LoadBalancer, error) {
	found, err := e.c.FindLoadBalancersByName(ctx, name)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot look for the load balancer named %q", name)
	}
	switch len(found) {
	case 0:
		return nil, errors.Errorf("no load balancer is named %q in this region; create it, or set the external name to its id", name)
	case 1:
	default:
		ids := make([]string, 0, len(found))
		for _, lb := range found {
			ids = append(ids, clb.Deref(lb.LoadBalancerId))
		}
		slices.Sort(ids)
		return nil, errors.Errorf("%d load balancers are named %q (%s); set the external name to the id of the one to import",
			len(found), name, strings.Join(ids, ", "))
	}
	orig := cr.DeepCopy()
	meta.SetExternalName(cr, clb.Deref(found[0].LoadBalancerId))
	if err := e.kube.Patch(ctx, cr, client.MergeFrom(orig)); err != nil {
		return nil, errors.Wrap(err, "cannot save the external name of the load balancer found by name")
	}
	return found[0], nil
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.LoadBalancer) (managed.ExternalCreation, error) {
	cr.SetConditions(xpv2.Creating())
	ids, task, err := e.c.CreateLoadBalancer(ctx, CreateRequest(cr))
	return mr.Created(cr, ids, task, err, "create load balancer", true)
}

func (e *external) Update(ctx context.Context, cr *v1alpha1.LoadBalancer) (managed.ExternalUpdate, error) {
	req := clb.ModifyLoadBalancerRequest(meta.GetExternalName(cr), cr.Spec.ForProvider)
	task, err := e.c.ModifyLoadBalancerAttributes(ctx, req)
	return mr.Updated(&cr.Status.AtProvider.Task, task, err, "modify load balancer")
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.LoadBalancer) (managed.ExternalDelete, error) {
	if mr.Deleting(cr, cr.Status.AtProvider.Task) {
		return managed.ExternalDelete{}, nil
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
