// Package gameserverset makes, for each OpenKruiseGame GameServerSet with
// networkType TencentCloud-CLB, the CLBPortPool <namespace>-<name> that
// OKG's plugin names in its Pods' mapping lines, as tke-extend does; the
// pool serves only the GameServerSet's namespace. The GameServerSet is read
// as unstructured: kruise-game is not a dependency.
package gameserverset

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
)

const controllerName = "gameserverset"

// GroupVersionKind of OKG's GameServerSet.
func GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "game.kruise.io", Version: "v1alpha1", Kind: "GameServerSet"}
}

// Event reasons on a GameServerSet.
const (
	reasonBadConf  = "CannotMakePool"
	reasonMadePool = "MadePool"
)

// Setup adds the GameServerSet controller to mgr. The GameServerSet kind
// must be served.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	r := &reconciler{kube: mgr.GetClient(), events: mgr.GetEventRecorderFor(controllerName)}
	gss := &unstructured.Unstructured{}
	gss.SetGroupVersionKind(GroupVersionKind())
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(o.ForControllerRuntime()).
		For(gss, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The pools made: a pool changed by hand is put back, and, as the
		// cache fills at start, a pool whose GameServerSet went while the
		// provider was down is deleted.
		Watches(&v1alpha1.CLBPortPool{}, handler.EnqueueRequestsFromMapFunc(gameServerSetOf),
			builder.WithPredicates(predicate.NewPredicateFuncs(madeForGameServerSet))).
		Complete(errors.WithSilentRequeueOnConflict(r))
}

func madeForGameServerSet(o client.Object) bool {
	return o.GetLabels()[v1alpha1.LabelMadeFor] == v1alpha1.MadeForGameServerSet
}

// gameServerSetOf maps a pool to the GameServerSet it was made for.
func gameServerSetOf(_ context.Context, o client.Object) []reconcile.Request {
	ns, name, ok := splitKey(o.GetAnnotations()[v1alpha1.AnnotationGameServerSet])
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

func splitKey(s string) (ns, name string, ok bool) {
	for i := range len(s) {
		if s[i] == '/' {
			return s[:i], s[i+1:], i > 0 && i < len(s)-1
		}
	}
	return "", "", false
}

type reconciler struct {
	kube   client.Client
	events record.EventRecorder
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gss := &unstructured.Unstructured{}
	gss.SetGroupVersionKind(GroupVersionKind())
	err := r.kube.Get(ctx, req.NamespacedName, gss)
	if err != nil && !kerrors.IsNotFound(err) {
		return reconcile.Result{}, errors.Wrap(err, "cannot get the GameServerSet")
	}
	var conf map[string]string
	wants := false
	if err == nil && gss.GetDeletionTimestamp() == nil {
		conf, wants = networkConf(gss)
	}
	if !wants {
		return reconcile.Result{}, r.cleanup(ctx, req.NamespacedName)
	}
	spec, protocols, err := poolSpec(conf)
	if err != nil {
		r.events.Eventf(gss, corev1.EventTypeWarning, reasonBadConf, "cannot make the CLBPortPool %s: network conf: %v", poolName(req.Namespace, req.Name), err)
		return reconcile.Result{}, nil
	}
	want := &v1alpha1.CLBPortPool{ObjectMeta: metav1.ObjectMeta{
		Name:   poolName(req.Namespace, req.Name),
		Labels: map[string]string{v1alpha1.LabelMadeFor: v1alpha1.MadeForGameServerSet},
		Annotations: map[string]string{
			v1alpha1.AnnotationGameServerSet: req.String(),
			v1alpha1.AnnotationNamespace:     req.Namespace,
			v1alpha1.AnnotationProtocols:     protocols,
		},
	}, Spec: spec}
	return reconcile.Result{}, r.apply(ctx, gss, want)
}

// apply creates or updates the pool; a pool of that name not made for this
// GameServerSet is left alone, and the GameServerSet told.
func (r *reconciler) apply(ctx context.Context, gss *unstructured.Unstructured, want *v1alpha1.CLBPortPool) error {
	have := &v1alpha1.CLBPortPool{}
	err := r.kube.Get(ctx, client.ObjectKeyFromObject(want), have)
	if kerrors.IsNotFound(err) {
		if err := r.kube.Create(ctx, want); err != nil {
			if kerrors.IsInvalid(err) {
				r.events.Eventf(gss, corev1.EventTypeWarning, reasonBadConf, "the CLBPortPool %s is refused: %v", want.Name, err)
				return nil
			}
			return errors.Wrapf(err, "cannot create the CLBPortPool %s", want.Name)
		}
		r.events.Eventf(gss, corev1.EventTypeNormal, reasonMadePool, "made the CLBPortPool %s", want.Name)
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, "cannot get the CLBPortPool %s", want.Name)
	}
	if !madeFor(have, want) {
		r.events.Eventf(gss, corev1.EventTypeWarning, reasonBadConf, "the CLBPortPool %s exists and was not made for this GameServerSet; it is left as it is", want.Name)
		return nil
	}
	if equality.Semantic.DeepEqual(have.Spec, want.Spec) && equalSubset(want.Annotations, have.Annotations) && equalSubset(want.Labels, have.Labels) {
		return nil
	}
	have.Spec = want.Spec
	have.Annotations = merged(have.Annotations, want.Annotations)
	have.Labels = merged(have.Labels, want.Labels)
	if err := r.kube.Update(ctx, have); err != nil {
		if kerrors.IsInvalid(err) {
			r.events.Eventf(gss, corev1.EventTypeWarning, reasonBadConf, "the CLBPortPool %s refuses the change: %v", want.Name, err)
			return nil
		}
		return errors.Wrapf(err, "cannot update the CLBPortPool %s", want.Name)
	}
	return nil
}

// cleanup deletes the pool made for the GameServerSet key, if any.
func (r *reconciler) cleanup(ctx context.Context, key types.NamespacedName) error {
	have := &v1alpha1.CLBPortPool{}
	if err := r.kube.Get(ctx, types.NamespacedName{Name: poolName(key.Namespace, key.Name)}, have); err != nil {
		return client.IgnoreNotFound(errors.Wrap(err, "cannot get the CLBPortPool"))
	}
	if have.Annotations[v1alpha1.AnnotationGameServerSet] != key.String() || !madeForGameServerSet(have) || have.DeletionTimestamp != nil {
		return nil
	}
	uid := have.UID
	err := r.kube.Delete(ctx, have, client.Preconditions{UID: &uid})
	return client.IgnoreNotFound(errors.Wrapf(err, "cannot delete the CLBPortPool %s", have.Name))
}

// madeFor: have carries the label and the GameServerSet of want.
func madeFor(have, want *v1alpha1.CLBPortPool) bool {
	return madeForGameServerSet(have) && have.Annotations[v1alpha1.AnnotationGameServerSet] == want.Annotations[v1alpha1.AnnotationGameServerSet]
}

func equalSubset(sub, m map[string]string) bool {
	for k, v := range sub {
		if m[k] != v {
			return false
		}
	}
	return true
}

func merged(m, add map[string]string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, add)
	return out
}
