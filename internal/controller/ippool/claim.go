package ippool

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

const claimControllerName = "netipclaim"

// setupClaims registers the controller that mirrors each NetIPClaim's
// status from the NetIP recording it. The allocator and the pool
// controller write the claim as they change the NetIP, but only after the
// NetIP: a crash in between, or a failed claim write, would leave the
// claim saying what is no longer so. This puts it right, and gives a new
// claim its Pending phase.
func setupClaims(mgr ctrl.Manager, o controller.Options) error {
	r := &claimReconciler{kube: mgr.GetClient()}
	return ctrl.NewControllerManagedBy(mgr).
		Named(claimControllerName).
		WithOptions(o.ForControllerRuntime()).
		For(&v1alpha1.NetIPClaim{}).
		// Both the old and the new NetIP are mapped, so a claim hears of
		// the IP it just lost.
		Watches(&v1alpha1.NetIP{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			nn, ok := v1alpha1.ParseClaimKey(o.(*v1alpha1.NetIP).Status.IPClaimKey)
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: nn}}
		})).
		Complete(errors.WithSilentRequeueOnConflict(r))
}

type claimReconciler struct {
	kube client.Client
}

// Reconcile sets the claim Bound to the NetIP fixed for it (Active or
// Reserved); without one, Expired if it had one, else Pending.
func (r *claimReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &v1alpha1.NetIPClaim{}
	if err := r.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ips := &v1alpha1.NetIPList{}
	key := v1alpha1.FixedKey(v1alpha1.NetIPStatus{Fixed: true, IPClaimKey: v1alpha1.ClaimKey(claim.Namespace, claim.Name)})
	if err := r.kube.List(ctx, ips, client.MatchingFields{v1alpha1.NetIPFixedIndex: key}); err != nil {
		return reconcile.Result{}, err
	}
	// A claim written before it had a Ready condition gets one here too.
	if !claim.Status.SetPhase(claimPhase(claim.Status.Phase, ips.Items)) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, client.IgnoreNotFound(r.kube.Status().Update(ctx, claim))
}

// claimPhase is a claim's phase and IP, given the phase it had and the
// NetIPs fixed for it.
func claimPhase(had string, ips []v1alpha1.NetIP) (phase, ip string) {
	for _, n := range ips {
		if n.DeletionTimestamp == nil && (n.Status.Status == v1alpha1.NetIPActive || n.Status.Status == v1alpha1.NetIPReserved) {
			return v1alpha1.ClaimBound, n.Name
		}
	}
	if had == v1alpha1.ClaimBound || had == v1alpha1.ClaimExpired {
		return v1alpha1.ClaimExpired, ""
	}
	return v1alpha1.ClaimPending, ""
}
