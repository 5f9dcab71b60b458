package targets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
)

// Run gives each op the cloud client of its pool's provider config and
// its load balancer's region, and hands them to the binder under a
// generation that identifies them. A deregistration from a pool that is
// gone is dropped: its listeners went with it, and their targets.
func (b *Binder) Run(ctx context.Context, pa *v1alpha1.PodAddress, ops []Op) (bool, error) {
	send := make([]Op, 0, len(ops))
	for _, o := range ops {
		c, err := b.cloud(ctx, o.pool, o.region)
		if kerrors.IsNotFound(errors.Cause(err)) && !o.register {
			continue
		}
		if err != nil {
			return false, err
		}
		o.c = c
		send = append(send, o)
	}
	if len(send) == 0 {
		return true, nil
	}
	if naive(send[0].c) {
		return true, runInline(ctx, send)
	}
	return b.start(client.ObjectKeyFromObject(pa), generation(send), send)
}

// generation identifies an op set by what it does, region included: the
// same targets in another region are another operation.
func generation(ops []Op) string {
	h := sha256.New()
	for _, o := range ops {
		_, _ = fmt.Fprintf(h, "%v|%s|%s|%s|", o.register, o.pool, o.region, o.lb)
		for _, t := range o.targets {
			_, _ = fmt.Fprintf(h, "%s,%s,%s,%s,%d;", t.ListenerID, t.LocationID, t.EniIP, t.InstanceID, t.Port)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
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
