package podaddress

import (
	"context"
	"encoding/json"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/optional"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// Nodes of tke-extend's HostPort scheme. A Node annotated as a Pod is
// (enable-clb-port-mapping, clb-port-mapping) holds pool ports through
// the PodAddress podannotation.TKENodeAddressName(node): the reconcile
// makes a *corev1.Pod of the Node, whose IP is the node's, and runs the
// same code as for a Pod, so its slots come from the one allocator and are
// recorded, registered, audited and released as every Pod's. Only three
// things differ: the stand-in carries only the Node's mapping annotations
// (nothing else a Node says is a request), it is told on the Node's
// annotations (tke-extend writes its clb-port-mapping-result there) and
// its Events go to the Node. Nodes are written by cluster admins only;
// the Pods told their hostPorts' addresses on these listeners are told by
// the hostport controller, which checks each Pod against its node.

// nodeAnnotations are the Node annotations a stand-in carries: the
// request and what the provider tells.
func nodeAnnotations() []string {
	return []string{
		podannotation.TKEAnnotationEnableMapping, podannotation.TKEAnnotationPortMapping,
		podannotation.TKEAnnotationMappingResult, podannotation.TKEAnnotationMappingStatus,
		podannotation.AnnotationAddresses, podannotation.AnnotationStatus,
	}
}

// nodes maps the Pods made of Nodes, while their reconcile runs, to their
// Nodes. A Pod of the cluster is never in it.
type nodes struct {
	m sync.Map
}

func (s *nodes) of(pod *corev1.Pod) *corev1.Node {
	if v, ok := s.m.Load(pod); ok {
		return v.(*corev1.Node) //nolint:forcetypeassert // only *corev1.Node is stored.
	}
	return nil
}

// nodePod returns the stand-in of the Node whose ports the PodAddress of
// key holds, or nil when the Node is gone. done drops it from r.nodes once
// the reconcile ends. Names of that form are the Nodes': a Pod of the
// same name is never served.
func (r *Reconciler) nodePod(ctx context.Context, name string) (*corev1.Pod, func(), error) {
	node, err := optional.Get(ctx, r.kube, types.NamespacedName{Name: name}, &corev1.Node{})
	if err != nil || node == nil {
		return nil, func() {}, err
	}
	pod := standIn(node)
	r.nodes.m.Store(pod, node)
	return pod, func() { r.nodes.m.Delete(pod) }, nil
}

// standIn is the Pod a Node acts as: its mapping annotations, its
// InternalIPs as the Pod's IPs (IPv4 first), running on itself. Its
// ports, undeclared, are the lines' numbers: the target is the node's IP
// and the line's port, and a segment forwards on to the ports above it.
func standIn(node *corev1.Node) *corev1.Pod {
	key := podannotation.TKENodeAddressName(node.GetName())
	pod := &corev1.Pod{}
	pod.SetNamespace(key.Namespace)
	pod.SetName(key.Name)
	pod.SetUID(node.GetUID())
	pod.SetResourceVersion(node.GetResourceVersion())
	pod.SetCreationTimestamp(node.GetCreationTimestamp())
	pod.SetDeletionTimestamp(node.GetDeletionTimestamp())
	a := map[string]string{}
	for _, k := range nodeAnnotations() {
		if v, ok := node.GetAnnotations()[k]; ok {
			a[k] = v
		}
	}
	pod.SetAnnotations(a)
	pod.Spec.NodeName = node.GetName()
	pod.Status.Phase = corev1.PodRunning
	var v4, v6 []string
	for _, ad := range node.Status.Addresses {
		if ad.Type != corev1.NodeInternalIP {
			continue
		}
		if v, s := byFamily(ad.Address); v != "" {
			v4 = append(v4, v)
		} else if s != "" {
			v6 = append(v6, s)
		}
	}
	for _, ip := range append(v4, v6...) {
		if pod.Status.PodIP == "" {
			pod.Status.PodIP, pod.Status.HostIP = ip, ip
		}
		pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
		pod.Status.HostIPs = append(pod.Status.HostIPs, corev1.HostIP{IP: ip})
	}
	return pod
}

// tellNode writes on the Node the annotations the Pod path changed on its
// stand-in (orig as made, pod as told): tke-extend's result and status and
// ours. A merge patch of those keys only; nothing when none changed.
func (r *Reconciler) tellNode(ctx context.Context, node *corev1.Node, orig, pod *corev1.Pod) error {
	patch := map[string]any{}
	for _, k := range nodeAnnotations() {
		v, ok := pod.Annotations[k]
		ov, had := orig.Annotations[k]
		switch {
		case ok && (!had || ov != v):
			patch[k] = v
		case !ok && had:
			patch[k] = nil
		}
	}
	if len(patch) == 0 || r.records.told.stale(orig) {
		return nil
	}
	r.records.told.patched(orig)
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err != nil {
		return err
	}
	if err := r.kube.Patch(ctx, node, client.RawPatch(types.MergePatchType, raw)); err != nil {
		r.records.told.forget(orig.GetUID())
		return client.IgnoreNotFound(errors.Wrap(err, "cannot tell the Node its addresses"))
	}
	return nil
}

// nodeRequest maps a Node to the PodAddress that holds its ports.
func nodeRequest(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: podannotation.TKENodeAddressName(o.GetName())}}
}

// nodeChanged lets through the events of Nodes that ask, or asked, for
// node-level listeners: a Node that asks, stops asking, changes its lines
// or its IPs, or is deleted.
func nodeChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e ctrlevent.CreateEvent) bool { return asksOrAsked(e.Object) },
		DeleteFunc:  func(e ctrlevent.DeleteEvent) bool { return asksOrAsked(e.Object) },
		GenericFunc: func(e ctrlevent.GenericEvent) bool { return asksOrAsked(e.Object) },
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			if !asksOrAsked(e.ObjectOld) && !asksOrAsked(e.ObjectNew) {
				return false
			}
			o, okO := e.ObjectOld.(*corev1.Node)
			n, okN := e.ObjectNew.(*corev1.Node)
			if !okO || !okN {
				return true
			}
			return !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) || !equality(o.Status.Addresses, n.Status.Addresses) ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
		},
	}
}

// asksOrAsked reports whether o carries the switch or a result: a Node
// told before that stops asking still has its PodAddress to release.
func asksOrAsked(o client.Object) bool {
	a := o.GetAnnotations()
	_, sw := a[podannotation.TKEAnnotationEnableMapping]
	_, told := a[podannotation.TKEAnnotationMappingResult]
	_, ours := a[podannotation.AnnotationStatus]
	return sw || told || ours
}
