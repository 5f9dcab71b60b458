// Package clbpodbinding writes tke-extend v2's CLBPodBinding of each Pod
// that asks in tke-extend's syntax: a read-only mirror of the Pod's
// PodAddress (same namespace and name), owned by it, so that tke-extend
// users' `kubectl get clbpodbinding` and dashboards keep working. The
// provider never reads a CLBPodBinding as input: a tenant with
// crossplane-edit may write one, and whatever it says is overwritten from
// the PodAddress.
package clbpodbinding

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
)

const controllerName = "clbpodbinding"

// TKEFinalizer is the finalizer tke-extend puts on its bindings. Its
// controller, which removes it, is gone once the provider serves the
// kind: a binding taken over loses it, or its deletion would never end.
const TKEFinalizer = "networking.cloud.tencent.com/finalizer"

// Setup adds the CLBPodBinding controller to mgr.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	r := &reconciler{kube: mgr.GetClient()}
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(o.ForControllerRuntime()).
		For(&networkv1alpha1.PodAddress{}).
		// Any change to a binding, by anyone, brings the PodAddress of
		// the same name to overwrite it; an owner reference removed by
		// an edit does not hide it.
		Watches(&v1alpha1.CLBPodBinding{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
		})).
		Complete(errors.WithSilentRequeueOnConflict(r))
}

type reconciler struct {
	kube client.Client
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pa := &networkv1alpha1.PodAddress{}
	if err := r.kube.Get(ctx, req.NamespacedName, pa); err != nil {
		// A PodAddress gone takes its binding with it (owner reference).
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	m, want := mirrorOf(pa)
	cpb := &v1alpha1.CLBPodBinding{}
	err := r.kube.Get(ctx, req.NamespacedName, cpb)
	if err != nil && !kerrors.IsNotFound(err) {
		return reconcile.Result{}, errors.Wrap(err, "cannot get the CLBPodBinding")
	}
	exists := err == nil
	switch {
	case !want && exists && metav1.IsControlledBy(cpb, pa):
		// The Pod no longer asks in tke-extend's syntax.
		return reconcile.Result{}, errors.Wrap(client.IgnoreNotFound(r.kube.Delete(ctx, cpb, client.Preconditions{UID: &cpb.UID})), "cannot delete the CLBPodBinding")
	case !want:
		// Not ours to write; nothing here reads it.
		return reconcile.Result{}, nil
	case !exists:
		return reconcile.Result{}, r.create(ctx, pa, m)
	case cpb.DeletionTimestamp != nil:
		// Deleted by someone: let it go (without tke-extend's finalizer);
		// its deletion brings this PodAddress back to make it again.
		if controllerutil.RemoveFinalizer(cpb, TKEFinalizer) {
			return reconcile.Result{}, errors.Wrap(r.kube.Update(ctx, cpb), "cannot remove tke-extend's finalizer from the CLBPodBinding")
		}
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.overwrite(ctx, pa, cpb, m)
}

// create makes the binding, then writes its status: the status
// subresource drops a status sent with a create.
func (r *reconciler) create(ctx context.Context, pa *networkv1alpha1.PodAddress, m mirror) error {
	cpb := &v1alpha1.CLBPodBinding{ObjectMeta: metav1.ObjectMeta{Namespace: pa.Namespace, Name: pa.Name}, Spec: m.spec}
	if err := controllerutil.SetControllerReference(pa, cpb, r.kube.Scheme()); err != nil {
		return err
	}
	if err := r.kube.Create(ctx, cpb); err != nil {
		return errors.Wrap(err, "cannot create the CLBPodBinding")
	}
	cpb.Status = m.status
	return errors.Wrap(r.kube.Status().Update(ctx, cpb), "cannot update the CLBPodBinding's status")
}

// overwrite makes an existing binding say m, whoever wrote it before
// (tke-extend, a user, an older mirror): owned by pa alone, without
// tke-extend's finalizer.
func (r *reconciler) overwrite(ctx context.Context, pa *networkv1alpha1.PodAddress, cpb *v1alpha1.CLBPodBinding, m mirror) error {
	owned := cpb.DeepCopy()
	owned.OwnerReferences = nil
	if err := controllerutil.SetControllerReference(pa, owned, r.kube.Scheme()); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(owned, TKEFinalizer)
	owned.Spec = m.spec
	if !equality.Semantic.DeepEqual(owned.OwnerReferences, cpb.OwnerReferences) || !equality.Semantic.DeepEqual(owned.Finalizers, cpb.Finalizers) ||
		!equality.Semantic.DeepEqual(owned.Spec, cpb.Spec) {
		if err := r.kube.Update(ctx, owned); err != nil {
			return errors.Wrap(err, "cannot update the CLBPodBinding")
		}
	}
	if equality.Semantic.DeepEqual(owned.Status, m.status) {
		return nil
	}
	owned.Status = m.status
	return errors.Wrap(r.kube.Status().Update(ctx, owned), "cannot update the CLBPodBinding's status")
}
