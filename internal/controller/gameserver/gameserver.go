// Package gameserver puts the addresses of an Agones GameServer's Pod on
// the GameServer. Agones owns all of GameServer.status; annotations are the
// channel it leaves to others, and it copies a GameServer's annotations into
// the metadata of each allocation of it. So the annotations the provider
// writes on the Pod (in every syntax: ours, bcs's, tke-extend's) are copied
// onto the GameServer, and removed from it once the Pod no longer has them.
//
// Agones is not a dependency: GameServers are read and patched as metadata
// only, and the controller runs only while the API server serves the kind.
package gameserver

import (
	"context"
	"encoding/json"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const (
	// Label is the label Agones sets on a GameServer's Pod: the
	// GameServer's name.
	Label = "agones.dev/gameserver"

	controllerName = "gameserver-addresses"
)

// GroupVersionKind is Agones' GameServer.
func GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "agones.dev", Version: "v1", Kind: "GameServer"}
}

// Setup adds the controller; GameServers must be served (the provider's
// setup calls it only once they are: Agones is optional).
func Setup(mgr ctrl.Manager, o controller.Options) error {
	o.Logger.Info("Agones GameServers are served: they carry their Pods' addresses")
	r := &Reconciler{pods: mgr.GetClient(), gameServers: mgr.GetClient(), kube: mgr.GetClient(),
		log: o.Logger.WithValues("controller", controllerName)}
	gs := &metav1.PartialObjectMetadata{}
	gs.SetGroupVersionKind(GroupVersionKind())
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(o.ForControllerRuntime()).
		// GameServers by their metadata only. Their first listing asks
		// for each: what a GameServer carries of a Pod deleted while the
		// provider was down is removed then. After that only a change of
		// the keys we write asks (someone else wrote them).
		For(gs, builder.OnlyMetadata, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
				return !maps.Equal(Carried(e.ObjectOld.GetAnnotations()), Carried(e.ObjectNew.GetAnnotations()))
			},
			DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
			GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
		})).
		// Keyed by GameServer: a Pod event asks for the GameServer its
		// label names, so the GameServer is told when its Pod goes too.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(gameServerOf), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e ctrlevent.UpdateEvent) bool { return changed(e.ObjectOld, e.ObjectNew) },
		})).
		Complete(r)
}

// gameServerOf is the GameServer a Pod's label names, in the Pod's
// namespace: never another.
func gameServerOf(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[Label]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// changed reports whether a Pod update can change what its GameServer
// carries: the addresses, or which GameServer the Pod belongs to.
func changed(o, n client.Object) bool {
	if o.GetLabels()[Label] == "" && n.GetLabels()[Label] == "" {
		return false
	}
	return o.GetLabels()[Label] != n.GetLabels()[Label] ||
		!ownerEqual(metav1.GetControllerOf(o), metav1.GetControllerOf(n)) ||
		!maps.Equal(Carried(o.GetAnnotations()), Carried(n.GetAnnotations()))
}

func ownerEqual(a, b *metav1.OwnerReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.UID == b.UID && a.Name == b.Name && a.Kind == b.Kind && a.APIVersion == b.APIVersion
}

// Carried are the annotations of annotations that the provider writes on
// Pods (podannotation.ProviderAnnotations, and those the
// AnnotationNamedAddresses annotation names): what a GameServer carries of
// its Pod's, and on a GameServer, what it carries already.
func Carried(annotations map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range podannotation.ProviderAnnotations() {
		if v, ok := annotations[k]; ok {
			out[k] = v
		}
	}
	for k := range strings.SplitSeq(annotations[podannotation.AnnotationNamedAddresses], ",") {
		if v, ok := annotations[k]; ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// Owns reports whether pod is the Pod of the GameServer gs as Agones makes
// it: named after the GameServer, labelled with its name, and with the
// GameServer (this one: its UID) as controller. A label alone is not
// enough: anyone who may create Pods in the namespace can set it.
func Owns(gs metav1.Object, pod metav1.Object) bool {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || pod.GetName() != gs.GetName() || pod.GetLabels()[Label] != gs.GetName() {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	gvk := GroupVersionKind()
	return err == nil && gv.Group == gvk.Group && ref.Kind == gvk.Kind &&
		ref.Name == gs.GetName() && ref.UID == gs.GetUID()
}

// A Reconciler copies the address annotations of a GameServer's Pod onto
// the GameServer.
type Reconciler struct {
	pods        client.Reader // the manager's cache
	gameServers client.Reader // the manager's cache of GameServers' metadata
	kube        client.Client
	log         logging.Logger
}

// Reconcile makes the GameServer of the request carry exactly the address
// annotations of its Pod: none once the Pod is gone or is not its Pod.
// Only those keys are patched, with the GameServer's UID as precondition,
// so Agones' own writes and a GameServer recreated under the same name are
// never overwritten.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gs := &metav1.PartialObjectMetadata{}
	gs.SetGroupVersionKind(GroupVersionKind())
	if err := r.gameServers.Get(ctx, req.NamespacedName, gs); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(errors.Wrap(err, "cannot get the GameServer"))
	}
	want := map[string]string{}
	pod := &corev1.Pod{}
	switch err := r.pods.Get(ctx, req.NamespacedName, pod); {
	case kerrors.IsNotFound(err):
	case err != nil:
		return reconcile.Result{}, errors.Wrap(err, "cannot get the GameServer's Pod")
	case Owns(gs, pod):
		want = Carried(pod.Annotations)
	}
	have := Carried(gs.Annotations)
	if maps.Equal(want, have) {
		r.log.Debug("GameServer carries its Pod's addresses", "gameserver", req.String(), "annotations", len(want))
		return reconcile.Result{}, nil
	}
	set := map[string]any{}
	for k := range have {
		set[k] = nil // a JSON merge patch removes a key set to null
	}
	for k, v := range want {
		set[k] = v
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": gs.UID, "annotations": set}})
	if err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot encode the GameServer patch")
	}
	if err := r.kube.Patch(ctx, gs, client.RawPatch(types.MergePatchType, body)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(errors.Wrap(err, "cannot patch the GameServer's address annotations"))
	}
	r.log.Debug("GameServer told its Pod's addresses", "gameserver", req.String(), "annotations", len(want))
	return reconcile.Result{}, nil
}
