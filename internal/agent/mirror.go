package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// Component is the source of the Events the agent records.
const Component = "tencentcloud-network-agent"

// indexNodeName indexes the workload cluster's Pods by node, so that a
// node's change reaches its Pods.
const indexNodeName = "spec.nodeName"

// A mirror keeps, for each Pod of the workload cluster that asks for an
// address, a RemotePod in the management cluster whose spec is what the
// agent sees of the Pod, and applies the RemotePod's status to the Pod.
// It is keyed by the Pod's namespace and name.
type mirror struct {
	local   client.Client // the workload cluster (cached Pods and Nodes)
	hub     client.Client // the management cluster (cached RemotePods and policies of the namespace)
	hubAPI  client.Reader // the management cluster, uncached: RemotePods of withdrawn Pods
	link    *link
	ns      string // the cluster's namespace in the management cluster
	cluster string
	log     logr.Logger

	mu sync.Mutex
	// warned is, by Pod, the last Warning recorded, so an unchanged
	// status records nothing.
	warned map[types.NamespacedName]warned
}

type warned struct {
	uid types.UID
	at  time.Time
}

// retell is how often a withdrawn Pod's RemotePod is read again until the
// provider serves it: the hub's watch may take a while to resume after a cut.
const retell = 5 * time.Second

func (m *mirror) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// Cut off for longer than the grace period: the provider has released
	// the addresses, so the Pods are told so; nothing is asked of the hub.
	if since, grace, down := m.link.down(time.Now()); down {
		return reconcile.Result{}, m.withdraw(ctx, req.NamespacedName, since, grace)
	}
	pod := &corev1.Pod{}
	if err := m.local.Get(ctx, req.NamespacedName, pod); err != nil {
		if !kerrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		pod = nil
	}
	name := v1alpha1.RemotePodName(req.Namespace, req.Name)
	rp := &v1alpha1.RemotePod{}
	var hub client.Reader = m.hub
	back := pod != nil && withdrawn(pod)
	if back {
		// The cache may still hold the RemotePod from before the cut,
		// with what the provider said before it released the addresses.
		hub = m.hubAPI
	}
	if err := hub.Get(ctx, types.NamespacedName{Namespace: m.ns, Name: name}, rp); err != nil {
		if !kerrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		rp = nil
	}
	asks := false
	if pod != nil {
		var err error
		if asks, err = m.asks(ctx, pod); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !asks {
		if pod == nil {
			m.forget(req.NamespacedName)
		}
		if rp != nil && rp.Spec.Cluster == m.cluster && rp.GetDeletionTimestamp() == nil {
			m.log.V(1).Info("Deleting the RemotePod of a Pod gone or no longer asking", "remotePod", name)
			return reconcile.Result{}, client.IgnoreNotFound(m.hub.Delete(ctx, rp, client.Preconditions{UID: &rp.UID}))
		}
		return reconcile.Result{}, nil
	}
	spec, err := m.specOf(ctx, pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case rp == nil:
		rp = &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: name}, Spec: spec}
		if err := m.hub.Create(ctx, rp); err != nil {
			return reconcile.Result{}, err
		}
	case rp.GetDeletionTimestamp() != nil:
		// Being released (grace expired or cluster deleted): recreated
		// once gone, as the watch tells.
		return retellIf(back), nil
	case !equality.Semantic.DeepEqual(rp.Spec, spec):
		rp.Spec = spec
		if err := m.hub.Update(ctx, rp); err != nil {
			return reconcile.Result{}, err
		}
	}
	if back && len(rp.Status.Annotations) == 0 && len(podConditions(rp.Status)) == 0 {
		// A withdrawn Pod stays so until the provider serves it anew.
		return retellIf(back), nil
	}
	return reconcile.Result{}, m.writeBack(ctx, pod, rp.Status)
}

func retellIf(back bool) reconcile.Result {
	if back {
		return reconcile.Result{RequeueAfter: retell}
	}
	return reconcile.Result{}
}

// asks reports whether pod asks for an address: by annotation, in any
// syntax, or through a PodAddressPolicy of the cluster's namespace.
func (m *mirror) asks(ctx context.Context, pod *corev1.Pod) (bool, error) {
	// An invalid request is mirrored too: the provider tells the Pod why.
	if _, asked, _ := podannotation.Parse(pod); asked {
		return true, nil
	}
	pols := &v1alpha1.PodAddressPolicyList{}
	if err := m.hub.List(ctx, pols, client.InNamespace(m.ns)); err != nil {
		return false, err
	}
	for _, pol := range pols.Items {
		if selects(&pol, pod.GetLabels()) {
			return true, nil
		}
	}
	return false, nil
}

// selects is the policy's selector on Pod labels; an empty one selects none.
func selects(pol *v1alpha1.PodAddressPolicy, l map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.Selector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(l))
}

// specOf is what the agent sees of pod.
func (m *mirror) specOf(ctx context.Context, pod *corev1.Pod) (v1alpha1.RemotePodSpec, error) {
	s := v1alpha1.RemotePodSpec{
		Cluster:      m.cluster,
		PodNamespace: pod.Namespace,
		PodName:      pod.Name,
		PodUID:       string(pod.UID),
		Labels:       maps.Clone(pod.Labels),
		PodIP:        pod.Status.PodIP,
		Deleting:     pod.GetDeletionTimestamp() != nil,
	}
	for _, k := range podannotation.RequestAnnotations() {
		if v, ok := pod.Annotations[k]; ok {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[k] = v
		}
	}
	if o := metav1.GetControllerOf(pod); o != nil {
		s.Owner = &v1alpha1.RemoteOwner{Kind: o.Kind, Name: o.Name}
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, v1alpha1.RemoteContainer{Name: c.Name, Ports: c.Ports})
	}
	for _, g := range pod.Spec.ReadinessGates {
		s.ReadinessGates = append(s.ReadinessGates, string(g.ConditionType))
	}
	for _, ip := range pod.Status.PodIPs {
		s.PodIPs = append(s.PodIPs, ip.IP)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			s.Ready = c.Status == corev1.ConditionTrue
		}
	}
	if pod.Spec.NodeName != "" {
		s.Node = &v1alpha1.RemoteNode{Name: pod.Spec.NodeName}
		node := &corev1.Node{}
		switch err := m.local.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, node); {
		case err == nil:
			s.Node.InstanceID = instanceID(node.Spec.ProviderID)
			s.Node.InternalIP = internalIP(node)
		case !kerrors.IsNotFound(err):
			return s, err
		}
	}
	return s, nil
}

// instanceID is the CVM instance id at the end of a TKE node's providerID
// ("qcloud:///<zone>/ins-…"), or "" for another kind of node.
func instanceID(providerID string) string {
	id := providerID[strings.LastIndex(providerID, "/")+1:]
	if !strings.HasPrefix(id, "ins-") {
		return ""
	}
	return id
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// writeBack applies what the provider tells the Pod: its annotations (a
// merge patch of the keys that differ), its conditions (a patch of the
// status subresource) and its last Warning (an Event). Nothing is written
// when the Pod already says it.
func (m *mirror) writeBack(ctx context.Context, pod *corev1.Pod, st v1alpha1.RemotePodStatus) error {
	set := map[string]any{}
	for k, v := range st.Annotations {
		if cur, ok := pod.Annotations[k]; !ok || cur != v {
			set[k] = v
		}
	}
	if withdrawn(pod) {
		set[podannotation.AnnotationHubUnreachable] = nil // told again
	}
	for _, k := range st.RemoveAnnotations {
		if _, ok := pod.Annotations[k]; ok {
			if _, keep := st.Annotations[k]; !keep {
				set[k] = nil // a merge patch's null removes the key
			}
		}
	}
	if len(set) > 0 {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set}})
		if err != nil {
			return err
		}
		if err := m.local.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("cannot set the Pod's annotations: %w", err)
		}
	}

	var conds []corev1.PodCondition
	for _, want := range podConditions(st) {
		if cur := condition(pod, want.Type); cur != nil && cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
			continue
		}
		if want.LastTransitionTime.IsZero() {
			want.LastTransitionTime = metav1.Now()
		}
		conds = append(conds, want)
	}
	if len(conds) > 0 {
		// Pod conditions merge by type in a strategic merge patch: the
		// kubelet's own conditions stay as they are.
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
		if err != nil {
			return err
		}
		if err := m.local.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			return fmt.Errorf("cannot set the Pod's conditions: %w", err)
		}
	}

	if w := st.Warning; w != nil {
		return m.warn(ctx, pod, w)
	}
	return nil
}

// podConditions are the conditions of st the Pod is told: the address
// conditions. The RemotePod's own (Healthy, Synced) stay on it, and a
// Ready there would replace the kubelet's on the Pod.
func podConditions(st v1alpha1.RemotePodStatus) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range st.Conditions {
		if slices.Contains(addressConditions(), c.Type) {
			out = append(out, c)
		}
	}
	return out
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// warn records w as a Warning Event on pod once. The Event's name is made
// of the Pod's and the warning's time, so a restarted agent that records
// it again is refused as AlreadyExists rather than repeating it.
func (m *mirror) warn(ctx context.Context, pod *corev1.Pod, w *v1alpha1.RemoteEvent) error {
	key := client.ObjectKeyFromObject(pod)
	m.mu.Lock()
	last, seen := m.warned[key]
	m.mu.Unlock()
	if seen && last.uid == pod.UID && !w.Time.After(last.at) {
		return nil
	}
	if err := m.event(ctx, pod, w, fmt.Sprintf("%s.%x", pod.Name, w.Time.UnixNano())); err != nil {
		return err
	}
	m.mu.Lock()
	m.warned[key] = warned{uid: pod.UID, at: w.Time.Time}
	m.mu.Unlock()
	return nil
}

// event records w as a Warning Event named name on pod; one that exists
// already is not an error, so a name made of what the Event is about
// records it once.
func (m *mirror) event(ctx context.Context, pod *corev1.Pod, w *v1alpha1.RemoteEvent, name string) error {
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		},
		Reason:              w.Reason,
		Message:             w.Message,
		Type:                corev1.EventTypeWarning,
		FirstTimestamp:      w.Time,
		LastTimestamp:       w.Time,
		Count:               1,
		Source:              corev1.EventSource{Component: Component},
		ReportingController: Component,
		ReportingInstance:   m.cluster,
	}
	if err := m.local.Create(ctx, e); err != nil && !kerrors.IsAlreadyExists(err) {
		return fmt.Errorf("cannot record the Pod's warning: %w", err)
	}
	return nil
}

// forget drops what the mirror remembers of a Pod that is gone.
func (m *mirror) forget(nn types.NamespacedName) {
	m.mu.Lock()
	delete(m.warned, nn)
	m.mu.Unlock()
}
