package targets

import (
	"context"
	"slices"

	"github.com/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
)

// Send gives each op the cloud client of its pool's provider config and
// its load balancer's region, and hands them to the binder. A
// deregistration from a pool that is gone is dropped: its listeners went
// with it, and their targets.
func (b *Binder) Send(ctx context.Context, pa *v1alpha1.PodAddress, ops []Op) Answer {
	send := make([]Op, 0, len(ops))
	for _, o := range ops {
		c, err := b.cloud(ctx, o.pool, o.region)
		if kerrors.IsNotFound(errors.Cause(err)) && !o.register {
			continue
		}
		if err != nil {
			return Answer{State: Failed, Err: err}
		}
		o.c = c
		send = append(send, o)
	}
	if len(send) == 0 {
		return Answer{State: Done}
	}
	if naive(send[0].c) {
		if err := runInline(ctx, send); err != nil {
			return Answer{State: Failed, Err: err}
		}
		return Answer{State: Done}
	}
	return b.start(client.ObjectKeyFromObject(pa), send)
}

// same reports whether a and b do the same: the same targets on the same
// load balancers of the same pools and regions (the same targets in
// another region are another operation). Ops and their targets are
// sorted (opsFor), so an unchanged request compares equal.
func same(a, b []Op) bool {
	return slices.EqualFunc(a, b, func(x, y Op) bool {
		return x.register == y.register && x.pool == y.pool && x.region == y.region && x.lb == y.lb &&
			slices.EqualFunc(x.targets, y.targets, func(s, t clb.Target) bool { return Compare(s, t) == 0 })
	})
}

// ClientFor returns the cloud client of the provider config of pool, in
// region (a load balancer the pool names as region:lb-…); an empty region
// is the config's own.
func (b *Binder) ClientFor(ctx context.Context, pool, region string) (*clb.Client, error) {
	if b.pool == nil {
		// NewBinderWith's: its clients are fakes, not *clb.Client.
		return nil, errors.New("the binder has no CLB client pool")
	}
	pp, err := allocation.Read(ctx, b.kube, pool)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot get PortPool %s", pool)
	}
	cfg, err := clients.ResolveManaged(ctx, b.kube, pp)
	if err != nil {
		return nil, err
	}
	if region != "" {
		cfg.Region = region
	}
	c, err := b.pool.Client(cfg)
	return c, errors.Wrapf(err, "cannot build a client for region %s", cfg.Region)
}

// api is ClientFor as an API: a client that cannot be built is a nil
// API, not a nil *clb.Client in one.
func (b *Binder) api(ctx context.Context, pool, region string) (API, error) {
	c, err := b.ClientFor(ctx, pool, region)
	if c == nil {
		return nil, err
	}
	return c, err
}
