// Package tkehostport tells the Pods of tke-extend's HostPort scheme the
// public addresses of their hostPorts. A Node annotated with
// enable-clb-port-mapping and clb-port-mapping holds listeners (port
// ranges) that forward to its own IP and ports, through its PodAddress
// (podannotation.TKENodeAddressName, served by the podaddress
// controller). A Pod with enable-clb-hostport-mapping "true" holds no
// port of a pool: it is told, in clb-hostport-mapping-result, where each
// of its hostPorts is reached on its Node's listeners, as tke-extend
// tells it.
//
// The Pod is its namespace's to write, its node and hostPorts included,
// so it is told only what it holds: the hostPorts its containers declare,
// once the kubelet of its node runs it (phase Running, its host IP one of
// that Node's: a Pod whose hostPort is taken there is refused by the
// kubelet and never runs). Nothing here calls the cloud or holds a slot.
package tkehostport

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/optional"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const (
	controllerName = "tke-hostport"

	// indexNode indexes the Pods that ask by their node.
	indexNode = "tkehostport.spec.nodeName"

	// reasonNoAddress: the Pod asks and its node has no listeners that
	// cover a hostPort of it.
	reasonNoAddress event.Reason = "NoHostPortAddress"
)

// Setup adds the controller to mgr. Its reads of PodAddresses go through
// the manager's cache, which drops statuses the provider did not seal.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, indexNode, func(o client.Object) []string {
		pod, ok := o.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" || !podannotation.TKENodeHostPorts(pod.GetAnnotations()) {
			return nil
		}
		return []string{pod.Spec.NodeName}
	}); err != nil {
		return err
	}
	r := &reconciler{kube: mgr.GetClient(), record: event.NewAPIRecorder(mgr.GetEventRecorderFor(controllerName))}
	asks := func(o client.Object) bool { return podannotation.TKENodeHostPorts(o.GetAnnotations()) }
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(o.ForControllerRuntime()).
		For(&corev1.Pod{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e ctrlevent.CreateEvent) bool { return asks(e.Object) },
			UpdateFunc:  func(e ctrlevent.UpdateEvent) bool { return asks(e.ObjectNew) },
			DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
			GenericFunc: func(e ctrlevent.GenericEvent) bool { return asks(e.Object) },
		})).
		// A Node's PodAddress bound, moved or gone: its Pods are told again.
		Watches(&v1alpha1.PodAddress{}, handler.EnqueueRequestsFromMapFunc(r.podsOfNode)).
		Complete(errors.WithSilentRequeueOnConflict(r))
}

type reconciler struct {
	kube   client.Client
	record event.Recorder
}

func (r *reconciler) podsOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	node, ok := podannotation.TKENodeOf(client.ObjectKeyFromObject(o))
	if !ok {
		return nil
	}
	l := &corev1.PodList{}
	if err := r.kube.List(ctx, l, client.MatchingFields{indexNode: node}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
	}
	return out
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.kube.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !podannotation.TKENodeHostPorts(pod.GetAnnotations()) || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	node, err := optional.Get(ctx, r.kube, types.NamespacedName{Name: pod.Spec.NodeName}, &corev1.Node{})
	if err != nil {
		return reconcile.Result{}, err
	}
	pa, err := optional.Get(ctx, r.kube, podannotation.TKENodeAddressName(pod.Spec.NodeName), &v1alpha1.PodAddress{})
	if err != nil {
		return reconcile.Result{}, err
	}
	want, why := tell(pod, node, pa)
	if why != nil {
		r.record.Event(pod, event.Warning(reasonNoAddress, why))
	}
	if want == nil || maps.EqualFunc(want, pick(pod.GetAnnotations(), want), func(a, b string) bool { return a == b }) {
		return reconcile.Result{}, nil
	}
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, client.IgnoreNotFound(errors.Wrap(r.kube.Patch(ctx, pod, client.RawPatch(types.MergePatchType, raw)),
		"cannot tell the Pod its hostPorts' addresses"))
}

// pick returns the entries of a whose keys are those of keys.
func pick(a, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keys {
		if v, ok := a[k]; ok {
			out[k] = v
		}
	}
	return out
}

// tell decides what a Pod that asks (podannotation.TKENodeHostPorts) is
// told, from its Node and that Node's PodAddress: the annotations to
// write, or nil to write nothing, and why nothing can be told (for a
// Warning), or nil when the Pod only waits. What it was told before
// stays until there is something new to tell, as with tke-extend.
func tell(pod *corev1.Pod, node *corev1.Node, pa *v1alpha1.PodAddress) (map[string]string, error) {
	if pod.Status.Phase != corev1.PodRunning || node == nil {
		return nil, nil // not holding its hostPorts on the node (yet)
	}
	if !runsOn(pod, node) {
		return nil, fmt.Errorf("the Pod's host IP %s is not an address of its node %s: its hostPorts are not told", pod.Status.HostIP, node.GetName())
	}
	if pa == nil && asks(node) {
		return nil, nil // its listeners are being made, or its pool's switch from tke-extend is in a dry run
	}
	if pa == nil {
		return nil, fmt.Errorf("node %s has no CLB listeners: annotate it with %s \"true\" and %s (e.g. \"7000 TCPUDP my-pool\")",
			node.GetName(), podannotation.TKEAnnotationEnableMapping, podannotation.TKEAnnotationPortMapping)
	}
	if !v1alpha1.Serving(pa.Status.State) {
		return nil, nil // its node's listeners are being bound
	}
	entries := podannotation.TKENodeHostPortResult(pod, pa.Status.Bindings)
	if len(entries) == 0 {
		return nil, fmt.Errorf("no hostPort of the Pod is within the listeners of node %s (%s)", node.GetName(), ranges(pa.Status.Bindings))
	}
	return podannotation.TKENodeHostPortAnnotations(entries), nil
}

// asks reports whether node asks for listeners: tke-extend's switch on,
// with port lines.
func asks(node *corev1.Node) bool {
	a := node.GetAnnotations()
	return strings.EqualFold(strings.TrimSpace(a[podannotation.TKEAnnotationEnableMapping]), "true") &&
		strings.TrimSpace(a[podannotation.TKEAnnotationPortMapping]) != ""
}

// runsOn reports whether the kubelet of node runs pod: the host IP it
// reported is one of the node's addresses.
func runsOn(pod *corev1.Pod, node *corev1.Node) bool {
	if pod.Spec.NodeName != node.GetName() || pod.Status.HostIP == "" {
		return false
	}
	return slices.ContainsFunc(node.Status.Addresses, func(a corev1.NodeAddress) bool { return a.Address == pod.Status.HostIP })
}

// ranges says which node ports bs forward to, for a message.
func ranges(bs []v1alpha1.PortBinding) string {
	s := ""
	for i, b := range bs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", b.Protocol, b.ContainerPort)
		if b.EndPort > b.Port {
			s += fmt.Sprintf("-%d", b.ContainerPort+b.EndPort-b.Port)
		}
	}
	return s
}
