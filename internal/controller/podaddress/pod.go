package podaddress

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

func equality(a, b any) bool { return reflect.DeepEqual(a, b) }

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// setPodCondition sets one condition of a Pod's status in memory and
// reports whether it changed.
func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) bool {
	cur := podCondition(pod, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
		return false
	}
	c.LastTransitionTime = metav1.Now()
	if cur != nil {
		*cur = c
	} else {
		pod.Status.Conditions = append(pod.Status.Conditions, c)
	}
	return true
}

// tellPod tells the Pod the state of its addresses: the result
// annotations (readable through the downward API), including those the
// request names, and its address condition (usable as a readiness gate),
// each only when it changed, in one request: the Pod's status subresource
// takes its metadata too, so a condition and the annotations that go with
// it are one write. The patch is a strategic merge (conditions keyed by
// type), so the kubelet's conditions and others' annotations are never
// overwritten.
//
// Bound is always told. So is a state that waits on something other than
// the provider (no free port, no pool, an invalid request) and Isolated,
// with status NotReady and the reason. A Pod on its way to Bound (Allocated,
// WaitBackend) is told only if it was told before, so that what it was
// told follows the state; a burst of thousands of Pods should not pay a
// write per Pod for a NotReady that lasts a second.
func (r *Reconciler) tellPod(ctx context.Context, pod *corev1.Pod, a *ask, pa *v1alpha1.PodAddress, state, msg string) error {
	ready := v1alpha1.Serving(state)
	always := ready || v1alpha1.WaitsOnSomeone(state) || state == v1alpha1.StateIsolated
	orig := pod.DeepCopy()
	annotated := (always || toldBefore(pod)) && annotate(pod, a, pa, ready)
	// The condition is written for Pods that wait on it (those with our
	// readiness gate, or bcs's for Pods that came from bcs), that asked
	// for it, or that were given it before (an invalid request is told
	// on every Pod): once written, it follows the state.
	gates := podannotation.ReadinessGates(pod)
	if (a.readinessGate || podCondition(pod, conditionAddressReady) != nil) && !slices.Contains(gates, conditionAddressReady) {
		gates = append(gates, conditionAddressReady)
	}
	c := corev1.PodCondition{Status: corev1.ConditionFalse, Reason: state, Message: msg}
	if ready {
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, "Bound", told(pa)
	}
	conditioned := false
	for _, g := range gates {
		if !always && podCondition(pod, g) == nil {
			continue
		}
		c.Type = g
		conditioned = setPodCondition(pod, c) || conditioned
	}
	if x := r.remote.of(pod); x != nil {
		return r.tellRemote(ctx, x, orig, pod, c, v1alpha1.WaitsOnSomeone(state))
	}
	if n := r.nodes.of(pod); n != nil {
		return r.tellNode(ctx, n, orig, pod)
	}
	// Asked before the early return: it also drops a spent entry, so that
	// a Pod told its addresses keeps none.
	stale := r.records.told.stale(orig)
	if !annotated && !conditioned {
		return nil
	}
	if stale {
		// Our patch is made and the cache has not caught up with it yet.
		return nil
	}
	r.records.told.patched(orig)
	patch := client.StrategicMergeFrom(orig)
	var err error
	if conditioned {
		err = r.kube.Status().Patch(ctx, pod, patch)
	} else {
		err = r.kube.Patch(ctx, pod, patch)
	}
	if err != nil {
		r.records.told.forget(pod.GetUID())
		return client.IgnoreNotFound(errors.Wrap(err, "cannot tell the Pod its addresses"))
	}
	return nil
}

// toldBefore reports whether the Pod carries a status annotation of ours.
func toldBefore(pod *corev1.Pod) bool {
	_, ours := pod.Annotations[podannotation.AnnotationStatus]
	_, bcs := pod.Annotations[podannotation.BCSAnnotationStatus]
	return ours || bcs
}

// annotate sets the result annotations on pod in memory and reports
// whether they changed.
func annotate(pod *corev1.Pod, a *ask, pa *v1alpha1.PodAddress, ready bool) bool {
	bs := pa.Status.Bindings
	want := podannotation.ResultAnnotations(a.syntax, bs, ready)
	if e := pa.Status.EIP; e != nil && e.State != v1alpha1.EIPFallback {
		want = podannotation.EIPResultAnnotations(e.AddressID, e.PublicIP, e.ISP, ready)
	}
	if a.syntax == podannotation.SyntaxTKEExtend {
		maps.Copy(want, podannotation.TKEResultAnnotations(a.spec.Ports, a.spec.Backend, bs, ready))
	}
	remove := withNamedAddresses(pod, want, namedAddresses(pod, a.spec.Ports, bs))
	changed := len(remove) > 0
	for k, v := range want {
		if pod.Annotations[k] != v {
			changed = true
		}
	}
	if !changed {
		return false
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	maps.Copy(pod.Annotations, want)
	for _, k := range remove {
		delete(pod.Annotations, k)
	}
	return true
}

// conditionAddressReady is the Pod condition (and readiness gate) that is
// True once every address forwards to the Pod.
const conditionAddressReady = corev1.PodConditionType(podannotation.ConditionAddressReady)

// A toldMemo remembers, per Pod, the version of the Pod it last patched the
// addresses into. A reconcile that still sees that version reads from a
// cache that has not caught up with the patch, and writing again would
// only cost the API server a request; a newer version means someone else
// changed the Pod, and the addresses are checked again.
type toldMemo struct {
	mu sync.Mutex
	rv map[types.UID]string
}

func (m *toldMemo) stale(pod *corev1.Pod) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	rv, ok := m.rv[pod.GetUID()]
	if ok && rv == pod.GetResourceVersion() {
		return true
	}
	// The cache only moves forward: once it shows another version the
	// entry is spent, and a bound Pod keeps none.
	delete(m.rv, pod.GetUID())
	return false
}

func (m *toldMemo) patched(pod *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rv[pod.GetUID()] = pod.GetResourceVersion()
}

func (m *toldMemo) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rv, uid)
}
