// Package mr holds what every managed resource controller shares: the
// connector to the cloud client pool, the standard reconciler setup, and
// asynchronous task tracking.
package mr

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
)

// A Connector connects managed resources of type T to Tencent Cloud through
// the process-wide client pool, so every controller shares one client (and
// its rate limits, locks and batches) per account, region and endpoint.
type Connector[T resource.ModernManaged, C any] struct {
	Kube  client.Client
	Usage resource.ModernTracker
	Pool  Pool[C]
	// New builds the kind's external client around the shared cloud client.
	New func(c C, kube client.Client) managed.TypedExternalClient[T]
}

// A Pool hands out the shared cloud client C (a *clb.Client, a
// *vpc.Client) of an account, region and endpoint.
type Pool[C any] interface {
	Client(cfg clients.Config) (C, error)
}

// A Regional managed resource names its own region (GetRegion, "" for
// the provider config's).
type Regional interface {
	GetRegion() string
}

// Connect tracks the use of the managed resource's provider config, then
// returns an external client for it. A resource being deleted is not
// tracked: its usage was recorded while it lived, and in a namespace being
// deleted the API server refuses to create one, which would keep the
// resource, its cloud object and the namespace for ever.
func (c *Connector[T, C]) Connect(ctx context.Context, mg T) (managed.TypedExternalClient[T], error) {
	if !meta.WasDeleted(mg) {
		if err := c.Usage.Track(ctx, mg); err != nil {
			return nil, errors.Wrap(err, "cannot track provider config usage")
		}
	} else if neverCreated(mg) {
		// Nothing of it is in the cloud, so it goes without credentials:
		// one refused by its provider config can still be deleted.
		return gone[T]{}, nil
	}
	cfg, err := clients.ResolveManaged(ctx, c.Kube, mg)
	if err != nil {
		return nil, err
	}
	// A resource of another region gets that region's client, with the
	// same credentials and endpoint.
	if r, ok := any(mg).(Regional); ok && r.GetRegion() != "" {
		cfg.Region = r.GetRegion()
	}
	cl, err := c.Pool.Client(cfg)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot create Tencent Cloud client for region %s", cfg.Region)
	}
	return c.New(cl, c.Kube), nil
}

// The kinds whose forProvider has a region.
var (
	_ Regional = &clbv1alpha1.LoadBalancer{}
	_ Regional = &clbv1alpha1.Listener{}
	_ Regional = &clbv1alpha1.Rule{}
	_ Regional = &clbv1alpha1.TargetSet{}
)

// neverCreated reports whether mg has no cloud object: no external name
// (each kind records the cloud id there, an import names one) and no
// create was ever started.
func neverCreated(mg resource.Object) bool {
	return meta.GetExternalName(mg) == "" && meta.GetExternalCreatePending(mg).IsZero() &&
		meta.GetExternalCreateSucceeded(mg).IsZero() && meta.GetExternalCreateFailed(mg).IsZero()
}

// gone is the external client of a resource with no cloud object.
type gone[T resource.ModernManaged] struct{}

func (gone[T]) Observe(context.Context, T) (managed.ExternalObservation, error) {
	return managed.ExternalObservation{ResourceExists: false}, nil
}

func (gone[T]) Create(context.Context, T) (managed.ExternalCreation, error) {
	return managed.ExternalCreation{}, errors.New("a resource being deleted is not created")
}

func (gone[T]) Update(context.Context, T) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, nil
}

func (gone[T]) Delete(context.Context, T) (managed.ExternalDelete, error) {
	return managed.ExternalDelete{}, nil
}

func (gone[T]) Disconnect(context.Context) error { return nil }
