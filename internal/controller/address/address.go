// Package address manages elastic public IPs (EIPs) as Address managed
// resources: allocate, bind to an ENI private IP or a CVM instance, rename,
// re-bind, unbind and release.
//
// EIP writes are asynchronous; instead of tracking their tasks, Observe
// reads the address's own status (CREATING, BINDING, UNBINDING, OFFLINING
// are transient) and acts only once it has settled.
package address

import (
	"context"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// ConnPublicIP is the connection detail key of the address.
const ConnPublicIP = "publicIp"

// Setup adds the Address controller.
func Setup(mgr ctrl.Manager, o controller.Options, pool *vpc.Pool) error {
	return mr.Setup(mgr, o, pool, mr.Kind[*v1alpha1.Address, *vpc.Client]{
		GVK:    v1alpha1.AddressGroupVersionKind,
		Object: func() *v1alpha1.Address { return &v1alpha1.Address{} },
		New: func(c *vpc.Client, _ client.Client) managed.TypedExternalClient[*v1alpha1.Address] {
			return &external{c: c}
		},
	})
}

// api is what this controller needs of the cloud client.
type api interface {
	Allocate(ctx context.Context, r vpc.AllocateRequest) ([]string, string, error)
	Describe(ctx context.Context, ids []string) ([]vpc.Address, error)
	DescribeByTag(ctx context.Context, key, value string) ([]vpc.Address, error)
	Associate(ctx context.Context, id, eniID, privateIP string) (string, error)
	AssociateInstance(ctx context.Context, id, instanceID string) (string, error)
	Disassociate(ctx context.Context, id string) (string, error)
	Release(ctx context.Context, ids []string) (string, error)
	Rename(ctx context.Context, id, name string) error
}

type external struct {
	c api
}

// settled reports whether no asynchronous change is under way, so the
// address accepts writes.
func settled(status string) bool {
	return slices.Contains([]string{vpc.StatusUnbind, vpc.StatusBind, vpc.StatusBindENI}, status)
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.Address) (managed.ExternalObservation, error) {
	a, adopted, err := e.find(ctx, cr)
	if err != nil || a == nil {
		return managed.ExternalObservation{}, err
	}
	cr.Status.AtProvider = observe(*a)
	lateInit := mr.MayLateInitialize(cr) && lateInitialize(&cr.Spec.ForProvider, *a)

	switch a.Status {
	case vpc.StatusCreating:
		cr.SetConditions(xpv2.Creating())
	case vpc.StatusOfflining:
		cr.SetConditions(xpv2.Deleting())
	default:
		cr.SetConditions(xpv2.Available())
	}
	obs := managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        true,
		ResourceLateInitialized: lateInit || adopted,
		ConnectionDetails:       managed.ConnectionDetails{ConnPublicIP: []byte(a.PublicIP)},
	}
	// A binding or unbinding refuses writes; drift is acted on once the
	// address has settled.
	if settled(a.Status) {
		obs.Diff = diff(cr, *a)
		obs.ResourceUpToDate = obs.Diff == ""
	}
	return obs, nil
}

// find returns the address of cr: by its external name, or, when none is
// saved yet, by the UID tag of an allocation whose answer was lost.
func (e *external) find(ctx context.Context, cr *v1alpha1.Address) (*vpc.Address, bool, error) {
	if id := meta.GetExternalName(cr); id != "" {
		found, err := e.c.Describe(ctx, []string{id})
		if err != nil || len(found) == 0 {
			return nil, false, errors.Wrap(err, "cannot describe address")
		}
		return &found[0], false, nil
	}
	found, err := e.c.DescribeByTag(ctx, mr.TagUID, string(cr.GetUID()))
	if err != nil || len(found) == 0 {
		return nil, false, errors.Wrap(err, "cannot look for an address allocated earlier")
	}
	meta.SetExternalName(cr, found[0].ID)
	return &found[0], true, nil
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.Address) (managed.ExternalCreation, error) {
	cr.SetConditions(xpv2.Creating())
	ids, _, err := e.c.Allocate(ctx, AllocateRequest(cr))
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, "cannot allocate address")
	}
	if len(ids) == 0 {
		// The id is not known yet; the UID tag finds it on the next Observe.
		return managed.ExternalCreation{}, nil
	}
	meta.SetExternalName(cr, ids[0])
	return managed.ExternalCreation{}, nil
}

// Update renames the address and moves its binding one step: an address
// bound elsewhere is unbound first, and bound as wanted once Observe sees it
// unbound.
func (e *external) Update(ctx context.Context, cr *v1alpha1.Address) (managed.ExternalUpdate, error) {
	id := meta.GetExternalName(cr)
	at := cr.Status.AtProvider
	if want := name(cr); want != at.Name {
		if err := e.c.Rename(ctx, id, want); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, "cannot rename address")
		}
	}
	if boundTo(cr.Spec.ForProvider.Association) == at.BoundTo {
		return managed.ExternalUpdate{}, nil
	}
	if at.BoundTo != "" {
		_, err := e.c.Disassociate(ctx, id)
		return managed.ExternalUpdate{}, errors.Wrap(err, "cannot unbind address")
	}
	as := cr.Spec.ForProvider.Association
	var err error
	if as.InstanceID != nil {
		_, err = e.c.AssociateInstance(ctx, id, *as.InstanceID)
	} else {
		_, err = e.c.Associate(ctx, id, deref(as.NetworkInterfaceID), deref(as.PrivateIPAddress))
	}
	return managed.ExternalUpdate{}, errors.Wrap(err, "cannot bind address")
}

// Delete unbinds a bound address, then releases it; each step waits for the
// address to settle, and the reconciler comes back until it is gone.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.Address) (managed.ExternalDelete, error) {
	cr.SetConditions(xpv2.Deleting())
	id := meta.GetExternalName(cr)
	at := cr.Status.AtProvider
	switch {
	case !settled(at.Status):
		return managed.ExternalDelete{}, nil
	case at.BoundTo != "":
		_, err := e.c.Disassociate(ctx, id)
		if vpc.IsNotFound(err) {
			return managed.ExternalDelete{}, nil
		}
		return managed.ExternalDelete{}, errors.Wrap(err, "cannot unbind address")
	}
	_, err := e.c.Release(ctx, []string{id})
	if vpc.IsNotFound(err) {
		return managed.ExternalDelete{}, nil
	}
	return managed.ExternalDelete{}, errors.Wrap(err, "cannot release address")
}

func (e *external) Disconnect(context.Context) error { return nil }
