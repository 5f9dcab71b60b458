// Package clbportpool serves tke-extend v2's CLBPortPool: each one becomes
// the PortPool tke-port-pools/<name>, owned by it, and shows that
// PortPool's state in tke-extend's status fields.
package clbportpool

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const controllerName = "clbportpool"

// finalizer holds a CLBPortPool until its PortPool is gone. The owner
// reference would do it too, but only where a garbage collector runs, and
// without saying when.
const finalizer = "network.tencentcloud.crossplane.io/portpool"

// Setup adds the CLBPortPool controller to mgr.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	r := &reconciler{kube: mgr.GetClient()}
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(o.ForControllerRuntime()).
		// The annotations choose protocols and consumers; our status
		// writes change neither.
		For(&v1alpha1.CLBPortPool{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&clbv1alpha1.PortPool{}).
		Complete(errors.WithSilentRequeueOnConflict(r))
}

type reconciler struct {
	kube client.Client
}

// PortPoolOf is the PortPool that serves the CLBPortPool name.
func PortPoolOf(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: podannotation.TKEPoolNamespace, Name: name}
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cpp := &v1alpha1.CLBPortPool{}
	if err := r.kube.Get(ctx, req.NamespacedName, cpp); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	st := v1alpha1.CLBPortPoolStatus{PortPool: PortPoolOf(cpp.Name).String(), ObservedGeneration: cpp.Generation}
	if cpp.DeletionTimestamp != nil {
		return reconcile.Result{}, r.delete(ctx, cpp, st)
	}
	remembered := rememberAutoCreated(cpp)
	if controllerutil.AddFinalizer(cpp, finalizer) || remembered {
		if err := r.kube.Update(ctx, cpp); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot add the CLBPortPool's finalizer")
		}
	}
	m, err := toPortPool(cpp)
	st.Ignored = m.ignored
	if err != nil {
		return reconcile.Result{}, r.pending(ctx, cpp, st, "cannot make a PortPool of this pool: "+err.Error())
	}
	pp, why, err := r.apply(ctx, cpp, m)
	if err != nil {
		return reconcile.Result{}, err
	}
	if why != "" {
		return reconcile.Result{}, r.pending(ctx, cpp, st, why)
	}
	observe(&st, pp)
	return reconcile.Result{}, r.writeStatus(ctx, cpp, st)
}

// apply creates or updates the PortPool. why says why it could not, when
// the user must act (a PortPool of someone else's in the way, a change
// the PortPool refuses).
func (r *reconciler) apply(ctx context.Context, cpp *v1alpha1.CLBPortPool, m mapping) (pp *clbv1alpha1.PortPool, why string, err error) {
	if err := r.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		return nil, "", errors.Wrapf(err, "cannot create the namespace %s", podannotation.TKEPoolNamespace)
	}
	key := PortPoolOf(cpp.Name)
	pp = &clbv1alpha1.PortPool{}
	err = r.kube.Get(ctx, key, pp)
	if kerrors.IsNotFound(err) {
		pp = &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Annotations: m.annotations}}
		pp.Spec.ForProvider, pp.Spec.Consumers, pp.Spec.ManagementPolicies = m.params, &m.consumers, m.policies
		if err := controllerutil.SetControllerReference(cpp, pp, r.kube.Scheme()); err != nil {
			return nil, "", err
		}
		if err := r.kube.Create(ctx, pp); err != nil {
			if kerrors.IsInvalid(err) {
				return nil, "the PortPool " + key.String() + " is refused: " + err.Error(), nil
			}
			return nil, "", errors.Wrapf(err, "cannot create the PortPool %s", key)
		}
		return pp, "", nil
	}
	if err != nil {
		return nil, "", errors.Wrapf(err, "cannot get the PortPool %s", key)
	}
	if !metav1.IsControlledBy(pp, cpp) {
		return nil, "the PortPool " + key.String() + " exists and is not this CLBPortPool's: delete or rename it", nil
	}
	same := func(k string) bool { return pp.GetAnnotations()[k] == m.annotations[k] }
	if equality.Semantic.DeepEqual(pp.Spec.ForProvider, m.params) && equality.Semantic.DeepEqual(pp.Spec.Consumers, &m.consumers) &&
		same(clbv1alpha1.AnnotationActsFor) && same(clbv1alpha1.AnnotationTKESwitch) && same(v1alpha1.AnnotationTKEAutoCreated) &&
		policiesEqual(pp.Spec.ManagementPolicies, m.policies) {
		return pp, "", nil
	}
	pp.Spec.ForProvider, pp.Spec.Consumers, pp.Spec.ManagementPolicies = m.params, &m.consumers, m.policies
	for _, k := range []string{clbv1alpha1.AnnotationActsFor, clbv1alpha1.AnnotationTKESwitch, v1alpha1.AnnotationTKEAutoCreated} {
		if want, ok := m.annotations[k]; ok {
			meta.AddAnnotations(pp, map[string]string{k: want})
		} else {
			meta.RemoveAnnotations(pp, k)
		}
	}
	if err := r.kube.Update(ctx, pp); err != nil {
		if kerrors.IsInvalid(err) {
			return nil, "the PortPool " + key.String() + " refuses the change: " + err.Error(), nil
		}
		return nil, "", errors.Wrapf(err, "cannot update the PortPool %s", key)
	}
	return pp, "", nil
}

// delete deletes the PortPool, and lets the CLBPortPool go once it is gone
// (its listeners deleted in the cloud). The PortPool's deletion wakes this
// reconcile (Owns).
func (r *reconciler) delete(ctx context.Context, cpp *v1alpha1.CLBPortPool, st v1alpha1.CLBPortPoolStatus) error {
	pp := &clbv1alpha1.PortPool{}
	err := r.kube.Get(ctx, PortPoolOf(cpp.Name), pp)
	if err != nil && !kerrors.IsNotFound(err) {
		return errors.Wrap(err, "cannot get the PortPool")
	}
	if err == nil && metav1.IsControlledBy(pp, cpp) {
		if pp.DeletionTimestamp == nil {
			if err := r.kube.Delete(ctx, pp); client.IgnoreNotFound(err) != nil {
				return errors.Wrap(err, "cannot delete the PortPool")
			}
		}
		st.State, st.Message = v1alpha1.StateDeleting, ptr.To("waiting for the PortPool "+PortPoolOf(cpp.Name).String()+" to be deleted")
		return r.writeStatus(ctx, cpp, st)
	}
	if controllerutil.RemoveFinalizer(cpp, finalizer) {
		return errors.Wrap(r.kube.Update(ctx, cpp), "cannot remove the CLBPortPool's finalizer")
	}
	return nil
}

// observe copies what the PortPool says into tke-extend's fields.
func observe(st *v1alpha1.CLBPortPoolStatus, pp *clbv1alpha1.PortPool) {
	ready, synced := pp.GetCondition(xpv2.TypeReady), pp.GetCondition(xpv2.TypeSynced)
	st.State, st.Reason = v1alpha1.StatePending, v1alpha1.ReasonWaiting
	switch {
	case synced.Status == corev1.ConditionFalse && synced.Message != "":
		st.Reason = v1alpha1.ReasonFailed
		st.Message = ptr.To("PortPool " + PortPoolOf(pp.Name).String() + ": " + synced.Message)
	case ready.Status == corev1.ConditionTrue:
		st.State, st.Reason = v1alpha1.StateActive, ""
	case ready.Message != "":
		st.Message = ptr.To("waiting for the PortPool " + PortPoolOf(pp.Name).String() + " to be Ready: " + ready.Message)
	default:
		st.Message = ptr.To("waiting for the PortPool " + PortPoolOf(pp.Name).String() + " to be Ready")
	}
	st.Quota = pp.Status.AtProvider.SlotsPerLoadBalancer * int64(len(pp.Spec.ForProvider.Protocols))
	for _, l := range pp.Status.AtProvider.LoadBalancers {
		// tke-extend's allocated counts listeners, not our slots.
		s := v1alpha1.LoadBalancerStatus{LoadbalancerID: l.ID, LoadbalancerName: l.Name, Ips: l.VIPs, Allocated: l.AllocatedListeners, State: l.State}
		if l.AddressIPVersion != "" {
			s.AddressIPVersion = ptr.To(l.AddressIPVersion)
		}
		switch l.State {
		case clbv1alpha1.PoolLBReady:
			s.State = v1alpha1.LBStateRunning
		case clbv1alpha1.PoolLBNotFound:
			s.State = v1alpha1.LBStateNotFound
		}
		if l.AutoCreated {
			s.AutoCreated = ptr.To(true)
		}
		if l.Domain != "" {
			s.Hostname = ptr.To(l.Domain)
		}
		st.LoadbalancerStatuses = append(st.LoadbalancerStatuses, s)
	}
}

func (r *reconciler) pending(ctx context.Context, cpp *v1alpha1.CLBPortPool, st v1alpha1.CLBPortPoolStatus, msg string) error {
	st.State, st.Reason, st.Message = v1alpha1.StatePending, v1alpha1.ReasonFailed, ptr.To(msg)
	return r.writeStatus(ctx, cpp, st)
}

func (r *reconciler) writeStatus(ctx context.Context, cpp *v1alpha1.CLBPortPool, st v1alpha1.CLBPortPoolStatus) error {
	if equality.Semantic.DeepEqual(cpp.Status, st) {
		return nil
	}
	cpp.Status = st
	return errors.Wrap(r.kube.Status().Update(ctx, cpp), "cannot update the CLBPortPool's status")
}

// policiesEqual compares management policies, none being the default
// (everything).
func policiesEqual(have, want xpv2.ManagementPolicies) bool {
	if len(want) == 0 {
		return len(have) == 0 || len(have) == 1 && have[0] == xpv2.ManagementActionAll
	}
	return equality.Semantic.DeepEqual(have, want)
}
