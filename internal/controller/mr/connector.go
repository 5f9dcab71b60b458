// Package mr holds what every managed resource controller shares: the
// connector to the cloud client pool, the standard reconciler setup, and
// asynchronous task tracking.
package mr

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

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

// Connect tracks the use of the managed resource's provider config, then
// returns an external client for it.
func (c *Connector[T, C]) Connect(ctx context.Context, mg T) (managed.TypedExternalClient[T], error) {
	if err := c.Usage.Track(ctx, mg); err != nil {
		return nil, errors.Wrap(err, "cannot track provider config usage")
	}
	cfg, err := clients.ResolveManaged(ctx, c.Kube, mg)
	if err != nil {
		return nil, err
	}
	cl, err := c.Pool.Client(cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create Tencent Cloud client")
	}
	return c.New(cl, c.Kube), nil
}
