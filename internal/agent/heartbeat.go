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
	api      client.Reader // the Lease is read by name: no list or watch
	lease    types.NamespacedName
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
		if err := h.renew(ctx); err != nil && ctx.Err() == nil {
			h.log.Error(err, "Cannot renew the heartbeat Lease", "lease", h.lease)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (h *heartbeat) renew(ctx context.Context) error {
	l := &coordinationv1.Lease{}
	if err := h.api.Get(ctx, h.lease, l); err != nil {
		return err
	}
	now := metav1.NowMicro()
	secs := int32(max(3*h.interval/time.Second, 1)) //nolint:gosec // a few intervals
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != h.identity || l.Spec.AcquireTime == nil {
		l.Spec.HolderIdentity = &h.identity
		l.Spec.AcquireTime = &now
	}
	l.Spec.RenewTime = &now
	l.Spec.LeaseDurationSeconds = &secs
	return h.hub.Update(ctx, l)
}

// NeedLeaderElection is false: the agent runs alone, without election.
func (h *heartbeat) NeedLeaderElection() bool { return false }

// leaseOf is the key of the heartbeat Lease of cluster in namespace.
func leaseOf(namespace, cluster string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: v1alpha1.AgentLease(cluster)}
}
