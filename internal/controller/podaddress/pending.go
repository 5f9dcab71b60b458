package podaddress

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// DefaultPendingHold is the default of Options.PendingHold.
const DefaultPendingHold = 15 * time.Minute

// limits bound what one Pod may hold.
type limits struct {
	// maxPortsPerPod bounds the addresses one Pod may ask for; 0: none.
	maxPortsPerPod int
	// pendingHold bounds how long a Pod that has not run on a node keeps
	// ports in pools of other namespaces; 0: for ever.
	pendingHold time.Duration
}

// pendingForeign returns the pools of other namespaces among ws in which
// pod, which has not run on a node (no host IP) for pendingHold since it
// was created, may no longer hold ports; while it still may, left is how
// long until then. A Pod that cannot be scheduled would otherwise pin
// ports of a pool shared with its namespace for ever. Pools of its own
// namespace are its team's to spend.
func (l limits) pendingForeign(pa *v1alpha1.PodAddress, pod *corev1.Pod, ws []want, now time.Time) (pools []string, left time.Duration) {
	if l.pendingHold <= 0 || pod.Status.HostIP != "" {
		return nil, 0
	}
	for _, pool := range poolsOf(ws) {
		if nn, ok := v1alpha1.ParsePoolKey(pool); ok && nn.Namespace != pa.GetNamespace() {
			pools = append(pools, pool)
		}
	}
	if len(pools) == 0 {
		return nil, 0
	}
	if left = pod.CreationTimestamp.Add(l.pendingHold).Sub(now); left > 0 {
		return nil, left
	}
	return pools, 0
}

// givePendingBack lets go of pa's bindings in the pools of other
// namespaces its Pod may no longer hold (pendingForeign), their targets
// deregistered first as for any binding dropped, keeps the others, and
// records Pending saying why. The Pod's host IP, once it runs, brings it
// back (pods.Changed), and it binds again.
func (r *Reconciler) givePendingBack(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, ws []want, foreign []string) error {
	kept := slices.DeleteFunc(slices.Clone(ws), func(w want) bool { return slices.Contains(foreign, w.Pool) })
	if o := r.dropUnwanted(ctx, pa, pod, kept); o.end {
		return o.err
	}
	msg := fmt.Sprintf("the Pod has not run on a node for %s: its ports in pools of other namespaces (%s) are given back until it does (--pending-hold)",
		r.alloc.limits.pendingHold, strings.Join(foreign, ", "))
	if _, err := r.setState(ctx, pa, v1alpha1.StatePending, msg, reconcile.Result{}); err != nil {
		return err
	}
	return r.tellPod(ctx, pod, a, pa, v1alpha1.StatePending, msg)
}
