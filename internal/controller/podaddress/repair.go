package podaddress

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/audit"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
)

// repair re-registers the targets the audit found missing from a Bound
// PodAddress, as one more operation of its binder; it ends the reconcile
// while that runs.
func (r *Reconciler) repair(ctx context.Context, pa *v1alpha1.PodAddress) outcome {
	key := client.ObjectKeyFromObject(pa)
	rp, ok := r.cloud.repairs.Get(key)
	if !ok {
		return goOn()
	}
	if !v1alpha1.Serving(pa.Status.State) || !pa.Status.BoundAt.Equal(&rp.BoundAt) {
		r.cloud.repairs.Drop(key) // bound anew since, or on its way out
		return goOn()
	}
	ops := targets.Missing(pa.Status.Bindings, rp.Targets)
	if len(ops) == 0 {
		r.cloud.repairs.Drop(key)
		return goOn()
	}
	if o := afterCloud(r.cloud.binder.Send(ctx, pa, ops)); o.end {
		return o
	}
	var ts []string
	for _, o := range ops {
		for _, t := range o.Targets() {
			ts = append(ts, targets.String(t)+" on listener "+t.ListenerID)
		}
	}
	r.cloud.repairs.Finish(key, len(ts))
	r.out.record.Event(pa, event.Normal(audit.ReasonTargetRepaired,
		"re-registered targets removed behind the provider's back: "+strings.Join(ts, ", ")))
	return goOn()
}
