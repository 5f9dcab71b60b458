// Package pods is the Pods the per-Pod address controllers serve: the Pods
// of this cluster, and those of workload clusters behind NAT, whose agents
// describe them as RemotePods and which are seen here as Pods made of
// them, so that one code path serves both. It also says which changes of a
// Pod matter to its addresses.
package pods

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Changed filters Pod updates down to those that matter to addresses: what
// the Pod asks for (annotations, labels for policies), where it runs (IPs)
// and its deletion.
func Changed(o, n client.Object) bool {
	po, ok1 := o.(*corev1.Pod)
	pn, ok2 := n.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return !maps.Equal(po.Annotations, pn.Annotations) ||
		!maps.Equal(po.Labels, pn.Labels) ||
		po.Status.PodIP != pn.Status.PodIP ||
		po.Status.HostIP != pn.Status.HostIP ||
		!po.DeletionTimestamp.Equal(pn.DeletionTimestamp)
}

// Remote turns the serving of RemotePods on once their kind is served.
// Under safe-start Crossplane may activate the RemotePod kind after the
// kinds the PodAddress controller needs, or never: until Served, nothing
// reads or watches RemotePods, and the Pod path runs as it always did.
type Remote struct {
	mu      sync.Mutex
	served  bool
	pending []func() error // watches of controllers set up before Served
	on      atomic.Bool
}

// Served adds the RemotePod watches of the controllers set up so far (later
// ones add theirs at once) and lets the reconciles read RemotePods.
func (x *Remote) Served() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.served = true
	x.on.Store(true)
	for _, w := range x.pending {
		if err := w(); err != nil {
			return err
		}
	}
	x.pending = nil
	return nil
}

// On reports whether RemotePods are served.
func (x *Remote) On() bool { return x.on.Load() }

// Watch adds w now if the kind is served, else once it is.
func (x *Remote) Watch(w func() error) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.served {
		return w()
	}
	x.pending = append(x.pending, w)
	return nil
}

// Matching lists the Pods made of the RemotePods of namespace whose labels
// sel matches. RemotePods carry their Pod's labels in their spec, so the
// selector is applied here rather than by the cache.
func (x *Remote) Matching(ctx context.Context, kube client.Reader, namespace string, sel labels.Selector) ([]corev1.Pod, error) {
	if !x.On() {
		return nil, nil
	}
	l := &v1alpha1.RemotePodList{}
	if err := kube.List(ctx, l, client.InNamespace(namespace)); err != nil {
		return nil, errors.Wrap(err, "cannot list RemotePods")
	}
	var out []corev1.Pod
	for i := range l.Items {
		if sel.Matches(labels.Set(l.Items[i].Spec.Labels)) {
			out = append(out, *Of(&l.Items[i]))
		}
	}
	return out, nil
}

// Of is the Pod a RemotePod stands for, named like the RemotePod so that
// it shares its key with its PodAddress. Its annotations and conditions
// are the spec's with the status applied: what the Pod will carry once the
// agent has told it, so that telling compares with what was told, as it
// does for a Pod.
func Of(rp *v1alpha1.RemotePod) *corev1.Pod {
	s := rp.Spec
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         rp.GetNamespace(),
			Name:              rp.GetName(),
			UID:               types.UID(s.PodUID),
			ResourceVersion:   rp.GetResourceVersion(),
			CreationTimestamp: rp.GetCreationTimestamp(),
			Labels:            maps.Clone(s.Labels),
			Annotations:       maps.Clone(s.Annotations),
		},
	}
	if pod.Annotations == nil && len(rp.Status.Annotations) > 0 {
		pod.Annotations = map[string]string{}
	}
	maps.Copy(pod.Annotations, rp.Status.Annotations)
	for _, k := range rp.Status.RemoveAnnotations {
		delete(pod.Annotations, k)
	}
	if s.Owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{{Kind: s.Owner.Kind, Name: s.Owner.Name, Controller: new(true)}}
	}
	if s.Deleting || rp.GetDeletionTimestamp() != nil {
		pod.DeletionTimestamp = new(metav1.Now())
	}
	for _, c := range s.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
	}
	for _, g := range s.ReadinessGates {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(g)})
	}
	if s.Node != nil {
		pod.Spec.NodeName = s.Node.Name
		pod.Status.HostIP = s.Node.InternalIP
	}
	pod.Status.PodIP = s.PodIP
	for _, ip := range s.PodIPs {
		pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(pod.Status.PodIPs) == 0 && s.PodIP != "" {
		pod.Status.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	ready := corev1.ConditionFalse
	if s.Ready {
		ready = corev1.ConditionTrue
	}
	pod.Status.Conditions = append([]corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}, rp.Status.Conditions...)
	return pod
}
