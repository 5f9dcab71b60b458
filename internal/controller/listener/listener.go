// Package listener manages CLB listeners.
package listener

import (
	"context"
	"fmt"

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

// Connection detail keys.
const (
	ConnVIP     = "vip"
	ConnPort    = "port"
	ConnAddress = "address"
)

// Setup adds the Listener controller.
func Setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool) error {
	return mr.Setup(mgr, o, pool, mr.Kind[*v1alpha1.Listener, *clb.Client]{
		GVK:    v1alpha1.ListenerGroupVersionKind,
		Object: func() *v1alpha1.Listener { return &v1alpha1.Listener{} },
		New: func(c *clb.Client, kube client.Client) managed.TypedExternalClient[*v1alpha1.Listener] {
			return &external{c: c, kube: kube, owners: mr.Owners{Kube: kube}}
		},
	})
}

// api is what this controller needs of the cloud client.
type api interface {
	mr.TaskChecker
	DescribeLoadBalancer(ctx context.Context, id string) (*clbsdk.LoadBalancer, error)
	CreateListener(ctx context.Context, req *clbsdk.CreateListenerRequest) ([]string, string, error)
	DescribeListener(ctx context.Context, lbID, listenerID string) (*clbsdk.Listener, error)
	DescribeListeners(ctx context.Context, lbID, protocol string, port int64) ([]*clbsdk.Listener, error)
	ModifyListener(ctx context.Context, req *clbsdk.ModifyListenerRequest) (string, error)
	DeleteListener(ctx context.Context, lbID, listenerID string) (string, error)
}

type external struct {
	c      api
	kube   client.Reader
	owners mr.Owners
	// lbTags are the owner tags of the load balancer Observe read, for
	// Create's bound on a shared load balancer.
	lbTags map[string]string
}

func lbID(cr *v1alpha1.Listener) string { return clb.Deref(cr.Spec.ForProvider.LoadBalancerID) }

func (e *external) Observe(ctx context.Context, cr *v1alpha1.Listener) (managed.ExternalObservation, error) {
	if lbID(cr) == "" {
		return managed.ExternalObservation{}, errors.New("spec.forProvider.loadBalancerId is not set and no reference resolved it")
	}
	// The load balancer is read first: its owner decides whether this
	// listener may be looked for, adopted, created or changed on it.
	lb, err := e.c.DescribeLoadBalancer(ctx, lbID(cr))
	if err != nil && !clb.IsNotFound(err) {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot describe the listener's load balancer")
	}
	if lb != nil {
		e.lbTags = clb.LoadBalancerTags(lb)
		if err := e.owners.Check(ctx, cr, mr.BuildOn, "load balancer "+lbID(cr), lbID(cr), e.lbTags); err != nil {
			return mr.Refuse(cr, err)
		}
	}
	l, adopted, err := e.find(ctx, cr)
	if err != nil || l == nil {
		return managed.ExternalObservation{}, err
	}
	running, err := mr.Check(ctx, e.c, cr, &cr.Status.AtProvider.Task)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, "cannot check the listener's task")
	}
	cr.Status.AtProvider = clb.ObserveListener(cr.Status.AtProvider.Task, lbID(cr), l, lb)
	lateInit := mr.MayLateInitialize(cr) && clb.LateInitListener(&cr.Spec.ForProvider, l)

	if running && cr.Status.AtProvider.Task.Operation == mr.OpCreate {
		cr.SetConditions(xpv2.Creating())
	} else {
		cr.SetConditions(xpv2.Available())
	}
	obs := managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        true,
		ResourceLateInitialized: lateInit || adopted,
		ConnectionDetails:       connectionDetails(cr),
	}
	// A running task locks the load balancer; act on drift once it ends.
	if !running {
		obs.Diff = clb.DiffListener(cr.Spec.ForProvider, l)
		obs.ResourceUpToDate = obs.Diff == ""
	}
	return obs, nil
}

// find returns the listener of cr by its external name or, when none is
// saved yet, the listener on the same port and protocol that a create
// whose id was lost left behind. A port holds one listener per protocol, so
// this can never pick a duplicate; a listener of someone else on the port
// is reported instead of adopted.
func (e *external) find(ctx context.Context, cr *v1alpha1.Listener) (*clbsdk.Listener, bool, error) {
	if id := meta.GetExternalName(cr); id != "" {
		l, err := e.c.DescribeListener(ctx, lbID(cr), id)
		if clb.IsNotFound(err) {
			return nil, false, nil
		}
		return l, false, errors.Wrap(err, "cannot describe listener")
	}
	p := cr.Spec.ForProvider
	found, err := e.c.DescribeListeners(ctx, lbID(cr), p.Protocol, p.Port)
	if err != nil {
		if clb.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, errors.Wrap(err, "cannot look for a listener created earlier")
	}
	for _, l := range found {
		if clb.Deref(l.Port) != p.Port || clb.Deref(l.Protocol) != p.Protocol {
			continue
		}
		if clb.Deref(l.ListenerName) != clb.ListenerName(cr) {
			return nil, false, errors.Errorf("port %d/%s of load balancer %s is used by listener %s (%q); set its id as this resource's external name to manage it",
				p.Port, p.Protocol, lbID(cr), clb.Deref(l.ListenerId), clb.Deref(l.ListenerName))
		}
		meta.SetExternalName(cr, clb.Deref(l.ListenerId))
		return l, true, nil
	}
	return nil, false, nil
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.Listener) (managed.ExternalCreation, error) {
	if err := e.withinBound(ctx, cr); err != nil {
		return managed.ExternalCreation{}, err
	}
	cr.SetConditions(xpv2.Creating())
	ids, task, err := e.c.CreateListener(ctx, clb.CreateListenerRequest(cr))
	return mr.Created(cr, ids, task, err, "create listener", false)
}

func (e *external) Update(ctx context.Context, cr *v1alpha1.Listener) (managed.ExternalUpdate, error) {
	task, err := e.c.ModifyListener(ctx, clb.ModifyListenerRequest(lbID(cr), meta.GetExternalName(cr), cr))
	return mr.Updated(&cr.Status.AtProvider.Task, task, err, "modify listener")
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.Listener) (managed.ExternalDelete, error) {
	if mr.Deleting(cr, cr.Status.AtProvider.Task) {
		return managed.ExternalDelete{}, nil
	}
	task, err := e.c.DeleteListener(ctx, lbID(cr), meta.GetExternalName(cr))
	return mr.Deleted(&cr.Status.AtProvider.Task, task, err, "listener")
}

func (e *external) Disconnect(context.Context) error { return nil }

// withinBound refuses a listener over the bound its namespace has on a
// load balancer of another namespace that let it in: the listener quota
// of a load balancer is its owner's.
func (e *external) withinBound(ctx context.Context, cr *v1alpha1.Listener) error {
	limit, bounded, err := e.owners.SharedBound(ctx, cr.GetNamespace(), e.lbTags)
	if err != nil || !bounded {
		return err
	}
	l := &v1alpha1.ListenerList{}
	if err := e.kube.List(ctx, l, client.InNamespace(cr.GetNamespace())); err != nil {
		return errors.Wrap(err, "cannot count the namespace's listeners on the shared load balancer")
	}
	held := 0
	for i := range l.Items {
		o := &l.Items[i]
		if o.GetUID() != cr.GetUID() && lbID(o) == lbID(cr) && meta.GetExternalName(o) != "" {
			held++
		}
	}
	if held < limit {
		return nil
	}
	return errors.Errorf("namespace %s holds %d listeners on load balancer %s of namespace %s, its bound there (spec.consumers.maxListenersPerNamespace of the LoadBalancer, %d by default); the load balancer's owners may raise it",
		cr.GetNamespace(), held, lbID(cr), e.lbTags[mr.TagNamespace], v1alpha1.DefaultMaxListenersPerNamespace)
}

func connectionDetails(cr *v1alpha1.Listener) managed.ConnectionDetails {
	cd := managed.ConnectionDetails{ConnPort: []byte(fmt.Sprint(cr.Spec.ForProvider.Port))}
	if len(cr.Status.AtProvider.Addresses) > 0 {
		cd[ConnAddress] = []byte(cr.Status.AtProvider.Addresses[0])
	}
	if len(cr.Status.AtProvider.VIPs) > 0 {
		cd[ConnVIP] = []byte(cr.Status.AtProvider.VIPs[0])
	}
	return cd
}
