package agent

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// heartbeat renews the agent's Lease in the management cluster. The
// provider created it; the agent may only get and update it.
type heartbeat struct {
	hub      client.Client // writes
	api      client.Reader // the Lease and WorkloadCluster are read by name: no list or watch
	lease    types.NamespacedName
	cluster  types.NamespacedName // the WorkloadCluster, for its grace period
	link     *link
	identity string
	interval time.Duration
	log      logr.Logger
}

// Start renews the Lease every interval until ctx ends. Its duration is
// three intervals: the provider counts the agent connected for that long
// after a renewal.
func (h *heartbeat) Start(ctx context.Context) error {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		// Bounded: behind a cut link a request may hang rather than fail.
		rctx, cancel := context.WithTimeout(ctx, max(h.interval, 5*time.Second))
		at, err := h.renew(rctx)
		if err == nil {
			h.link.heartbeat(at, h.grace(rctx))
		} else if ctx.Err() == nil {
			h.log.Error(err, "Cannot renew the heartbeat Lease", "lease", h.lease)
		}
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// renew updates the Lease and returns the renewTime it wrote: the time the
// provider counts the grace period from.
func (h *heartbeat) renew(ctx context.Context) (time.Time, error) {
	l := &coordinationv1.Lease{}
	if err := h.api.Get(ctx, h.lease, l); err != nil {
		return time.Time{}, err
	}
	now := metav1.NowMicro()
	secs := int32(max(3*h.interval/time.Second, 1)) //nolint:gosec // a few intervals
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != h.identity || l.Spec.AcquireTime == nil {
		l.Spec.HolderIdentity = &h.identity
		l.Spec.AcquireTime = &now
	}
	l.Spec.RenewTime = &now
	l.Spec.LeaseDurationSeconds = &secs
	return now.Time, h.hub.Update(ctx, l)
}

// grace is the WorkloadCluster's disconnect grace period, read while the
// management cluster answers; 0 when it cannot be read (the last one read
// stays).
func (h *heartbeat) grace(ctx context.Context) time.Duration {
	wc := &v1alpha1.WorkloadCluster{}
	if err := h.api.Get(ctx, h.cluster, wc); err != nil {
		h.log.V(1).Info("Cannot read the WorkloadCluster's grace period", "error", err.Error())
		return 0
	}
	if g := wc.Spec.DisconnectGracePeriod; g != nil && g.Duration > 0 {
		return g.Duration
	}
	return defaultGrace
}

// NeedLeaderElection is false: the agent runs alone, without election.
func (h *heartbeat) NeedLeaderElection() bool { return false }

// leaseOf is the key of the heartbeat Lease of cluster in namespace.
func leaseOf(namespace, cluster string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: v1alpha1.AgentLease(cluster)}
}
