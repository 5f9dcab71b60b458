package podaddress

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
)

// waitersOfPool maps a PortPool change to the PodAddresses that use it or
// wait for it, and those of namespaces it no longer serves.
func (r *Reconciler) waitersOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	l := &v1alpha1.PodAddressList{}
	// Read only, and every PodAddress of the pool on each change of it:
	// not copied.
	if err := r.kube.List(ctx, l, client.MatchingFields{v1alpha1.PoolIndex: v1alpha1.PoolKey(o.GetNamespace(), o.GetName())}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	pp, _ := o.(*clbv1alpha1.PortPool)
	allowed := map[string]bool{} // by namespace: the pool's consent read once per change
	for _, pa := range l.Items {
		if !v1alpha1.Serving(pa.Status.State) || pp == nil || allocation.AnyDeparted(pp, pa.RecordedBindings()) || r.deniedByPool(ctx, pp, &pa, allowed) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pa)})
		}
	}
	return reqs
}
