// Package clbpodbinding writes tke-extend v2's CLBPodBinding of each Pod
// that asks in tke-extend's syntax: a read-only mirror of the Pod's
// PodAddress (same namespace and name), owned by it, so that tke-extend
// users' `kubectl get clbpodbinding` and dashboards keep working; and the
// CLBNodeBinding of each Node of tke-extend's HostPort scheme, from the
// Node's PodAddress, owned by the Node. The provider never reads either as
// input: a tenant with crossplane-edit may write a CLBPodBinding, and
// whatever it says is overwritten from the PodAddress.
package clbpodbinding

import (
	"context"

	corev1 "k8s.io/api/core/v1"
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
	xpmeta "github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const controllerName = "clbpodbinding"

// TKEFinalizer is the finalizer tke-extend puts on its bindings. Its
// controller, which removes it, is gone once the provider serves the
// kind: a binding taken over loses it, or its deletion would never end.
const TKEFinalizer = "networking.cloud.tencent.com/finalizer"

// AnnotationMirrorOf marks a CLBNodeBinding the provider writes: the
// PodAddress it mirrors. A Node's binding cannot be owned by that
// namespaced PodAddress (a cluster-scoped object's owners are
// cluster-scoped): it is owned by its Node, and deleted by this
// controller when the PodAddress is gone.
const AnnotationMirrorOf = "network.tencentcloud.crossplane.io/mirror-of"

// Setup adds the CLBPodBinding controller to mgr. It also writes the
// CLBNodeBinding of each Node of tke-extend's HostPort scheme, from the
// Node's PodAddress (podannotation.TKENodeAddressName).
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
		Watches(&v1alpha1.CLBNodeBinding{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: podannotation.TKENodeAddressName(o.GetName())}}
		})).
		Complete(errors.WithSilentRequeueOnConflict(r))
}

type reconciler struct {
	kube client.Client
}

// A record is a CLBPodBinding or a CLBNodeBinding: the same spec and
// status.
type record struct {
	obj    client.Object
	spec   *v1alpha1.CLBBindingSpec
	status *v1alpha1.CLBBindingStatus
}

func podRecord(c *v1alpha1.CLBPodBinding) record {
	return record{obj: c, spec: &c.Spec, status: &c.Status}
}
func nodeRecord(c *v1alpha1.CLBNodeBinding) record {
	return record{obj: c, spec: &c.Spec, status: &c.Status}
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pa := &networkv1alpha1.PodAddress{}
	err := r.kube.Get(ctx, req.NamespacedName, pa)
	if err != nil && !kerrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if node, ok := podannotation.TKENodeOf(req.NamespacedName); ok {
		if err != nil {
			pa = nil
		}
		return reconcile.Result{}, r.node(ctx, node, pa)
	}
	if err != nil {
		// A PodAddress gone takes its binding with it (owner reference).
		return reconcile.Result{}, nil
	}
	m, want := mirrorOf(pa)
	cpb := &v1alpha1.CLBPodBinding{}
	err = r.kube.Get(ctx, req.NamespacedName, cpb)
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
		cpb = &v1alpha1.CLBPodBinding{ObjectMeta: metav1.ObjectMeta{Namespace: pa.Namespace, Name: pa.Name}}
		return reconcile.Result{}, r.create(ctx, podRecord(cpb), pa, m)
	}
	return reconcile.Result{}, r.overwrite(ctx, podRecord(cpb), pa, m)
}

// node writes the CLBNodeBinding of node from its PodAddress pa (nil when
// gone): created, overwritten, or deleted once pa is gone or no longer
// asks. One the provider did not write (tke-extend's) is taken over while
// pa asks, and left alone otherwise.
func (r *reconciler) node(ctx context.Context, node string, pa *networkv1alpha1.PodAddress) error {
	cnb := &v1alpha1.CLBNodeBinding{}
	err := r.kube.Get(ctx, client.ObjectKey{Name: node}, cnb)
	if err != nil && !kerrors.IsNotFound(err) {
		return errors.Wrap(err, "cannot get the CLBNodeBinding")
	}
	exists := err == nil
	var m mirror
	want := false
	if pa != nil {
		m, want = mirrorOf(pa)
	}
	key := podannotation.TKENodeAddressName(node).String()
	switch {
	case !want && exists && cnb.GetAnnotations()[AnnotationMirrorOf] == key:
		return errors.Wrap(client.IgnoreNotFound(r.kube.Delete(ctx, cnb, client.Preconditions{UID: &cnb.UID})), "cannot delete the CLBNodeBinding")
	case !want:
		return nil
	}
	owner := &corev1.Node{}
	if err := r.kube.Get(ctx, client.ObjectKey{Name: node}, owner); err != nil {
		// A Node gone takes its binding with it (owner reference).
		return client.IgnoreNotFound(errors.Wrap(err, "cannot get the Node"))
	}
	if !exists {
		cnb = &v1alpha1.CLBNodeBinding{ObjectMeta: metav1.ObjectMeta{Name: node, Annotations: map[string]string{AnnotationMirrorOf: key}}}
		return r.create(ctx, nodeRecord(cnb), owner, m)
	}
	return r.overwrite(ctx, nodeRecord(cnb), owner, m)
}

// create makes the binding, owned by owner, then writes its status: the
// status subresource drops a status sent with a create.
func (r *reconciler) create(ctx context.Context, rec record, owner client.Object, m mirror) error {
	*rec.spec = m.spec
	if err := controllerutil.SetControllerReference(owner, rec.obj, r.kube.Scheme()); err != nil {
		return err
	}
	if err := r.kube.Create(ctx, rec.obj); err != nil {
		return errors.Wrapf(err, "cannot create the %T", rec.obj)
	}
	*rec.status = m.status
	return errors.Wrapf(r.kube.Status().Update(ctx, rec.obj), "cannot update the %T's status", rec.obj)
}

// overwrite makes an existing binding say m, whoever wrote it before
// (tke-extend, a user, an older mirror): owned by owner alone, without
// tke-extend's finalizer. One being deleted (by someone) is let go
// without that finalizer; its deletion brings the PodAddress back to
// make it again.
func (r *reconciler) overwrite(ctx context.Context, rec record, owner client.Object, m mirror) error {
	if rec.obj.GetDeletionTimestamp() != nil {
		if controllerutil.RemoveFinalizer(rec.obj, TKEFinalizer) {
			return errors.Wrapf(r.kube.Update(ctx, rec.obj), "cannot remove tke-extend's finalizer from the %T", rec.obj)
		}
		return nil
	}
	orig, ok := rec.obj.DeepCopyObject().(client.Object)
	if !ok {
		return errors.Errorf("cannot copy %T", rec.obj)
	}
	origSpec := *rec.spec.DeepCopy()
	rec.obj.SetOwnerReferences(nil)
	if err := controllerutil.SetControllerReference(owner, rec.obj, r.kube.Scheme()); err != nil {
		return err
	}
	controllerutil.RemoveFinalizer(rec.obj, TKEFinalizer)
	if _, node := owner.(*corev1.Node); node {
		xpmeta.AddAnnotations(rec.obj, map[string]string{AnnotationMirrorOf: podannotation.TKENodeAddressName(owner.GetName()).String()})
	}
	*rec.spec = m.spec
	if !equality.Semantic.DeepEqual(rec.obj.GetOwnerReferences(), orig.GetOwnerReferences()) ||
		!equality.Semantic.DeepEqual(rec.obj.GetFinalizers(), orig.GetFinalizers()) ||
		!equality.Semantic.DeepEqual(rec.obj.GetAnnotations(), orig.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(*rec.spec, origSpec) {
		if err := r.kube.Update(ctx, rec.obj); err != nil {
			return errors.Wrapf(err, "cannot update the %T", rec.obj)
		}
	}
	if equality.Semantic.DeepEqual(*rec.status, m.status) {
		return nil
	}
	*rec.status = m.status
	return errors.Wrapf(r.kube.Status().Update(ctx, rec.obj), "cannot update the %T's status", rec.obj)
}
