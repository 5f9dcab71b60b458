package podaddress

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/optional"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/pods"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// Pods of other clusters (RemotePods). A RemotePod's spec is what an agent
// in a workload cluster sees of one of its Pods; the reconcile makes a
// *corev1.Pod of it and runs the same code as for a Pod of this cluster.
// Only three things differ: where the Pod is told (RemotePod.status, which
// the agent applies, instead of a patch of the Pod), where a Warning goes
// (status.warning, never an Event about a Pod this cluster does not have)
// and where the node's CVM instance comes from (spec.node).

// errRemoteEIP refuses an EIP for a Pod of another cluster: an EIP is
// associated with the VPC-CNI network interface that holds the Pod IP,
// which the provider finds in its own VPC, not in a cluster behind NAT.
var errRemoteEIP = errors.New("an EIP per Pod is not served for Pods of other clusters (RemotePods); ask for pool ports instead")

// reasonOutOfBounds: a RemotePod claims what its WorkloadCluster does not
// allow (an address outside its CIDRs, a pool outside its pools), or its
// cluster is missing or suspended.
const reasonOutOfBounds event.Reason = "OutOfClusterBounds"

// A remote is the RemotePod behind a Pod made by podOf, for the one
// reconcile that made it.
type remote struct {
	rp *v1alpha1.RemotePod
	// warning is the Warning to write with the next status.
	warning *v1alpha1.RemoteEvent
}

// remotes maps the Pods made of RemotePods, while their reconcile runs, to
// their RemotePods. A Pod of this cluster is never in it.
type remotes struct {
	m sync.Map
	// served says whether RemotePods are served yet.
	served *pods.Remote
}

func (s *remotes) of(pod *corev1.Pod) *remote {
	if v, ok := s.m.Load(pod); ok {
		return v.(*remote) //nolint:forcetypeassert // only *remote is stored.
	}
	return nil
}

// remotePod returns the Pod the RemotePod of key stands for, or nil when
// there is none. done drops it from r.remote once the reconcile ends.
func (r *Reconciler) remotePod(ctx context.Context, key types.NamespacedName) (pod *corev1.Pod, done func(), err error) {
	if !r.remote.served.On() {
		return nil, func() {}, nil
	}
	rp, err := optional.Get(ctx, r.kube, key, &v1alpha1.RemotePod{})
	if err != nil || rp == nil {
		return nil, func() {}, err
	}
	pod = pods.Of(rp)
	r.remote.m.Store(pod, &remote{rp: rp})
	return pod, func() { r.remote.m.Delete(pod) }, nil
}

// warn keeps a Warning for the RemotePod's next status write.
func (x *remote) warn(e event.Event) {
	x.warning = &v1alpha1.RemoteEvent{Reason: string(e.Reason), Message: e.Message, Time: metav1.Now()}
}

// tellRemote writes what the Pod is to be told into its RemotePod's
// status: the annotations that changed from orig to pod (both views made
// by podOf, pod as the Pod path changed it), the conditions the Pod path
// set, the RemotePod's own Healthy and Synced (from told, the address
// condition the Pod path made, whether or not the Pod carries it), and a
// pending Warning. A Warning stays while the Pod waits on others
// (failing), and goes once it does not, so that status.warning says what
// is wrong now. It writes only when the status changes, and not from a
// copy older than its own last write (see toldMemo).
func (r *Reconciler) tellRemote(ctx context.Context, x *remote, orig, pod *corev1.Pod, told corev1.PodCondition, failing bool) error {
	st := x.rp.Status.DeepCopy()
	for k, v := range pod.Annotations {
		if ov, ok := orig.Annotations[k]; !ok || ov != v {
			if st.Annotations == nil {
				st.Annotations = map[string]string{}
			}
			st.Annotations[k] = v
			st.RemoveAnnotations = slices.DeleteFunc(st.RemoveAnnotations, func(s string) bool { return s == k })
		}
	}
	for k := range orig.Annotations {
		if _, ok := pod.Annotations[k]; !ok {
			delete(st.Annotations, k)
			if !slices.Contains(st.RemoveAnnotations, k) {
				st.RemoveAnnotations = append(st.RemoveAnnotations, k)
			}
		}
	}
	// The Ready condition is the agent's (spec.ready); the others are ours.
	st.Conditions = slices.DeleteFunc(slices.Clone(pod.Status.Conditions), func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady || c.Type == v1alpha1.RemotePodHealthy || c.Type == v1alpha1.RemotePodSynced
	})
	st.Conditions = append(st.Conditions, remoteHealth(x.rp.Status.Conditions, told, failing)...)
	switch w := x.warning; {
	case !failing:
		st.Warning = nil
	case w != nil && (st.Warning == nil || st.Warning.Reason != w.Reason || st.Warning.Message != w.Message):
		st.Warning = w
	}
	if equality(*st, x.rp.Status) {
		return nil
	}
	if r.records.told.stale(orig) {
		return nil // our last write is not in the cache yet
	}
	r.records.told.patched(orig)
	rp := x.rp.DeepCopy()
	rp.Status = *st
	if err := r.kube.Status().Patch(ctx, rp, client.MergeFrom(x.rp)); err != nil {
		r.records.told.forget(orig.GetUID())
		return client.IgnoreNotFound(errors.Wrap(err, "cannot tell the RemotePod its addresses"))
	}
	x.rp = rp
	x.warning = nil
	return nil
}

// remoteHealth is a RemotePod's Healthy and Synced, which Argo CD's
// built-in check reads: Healthy as told says, Synced False while the
// request waits on a person. As for a Pod (tellPod), a state on the way to
// Bound that lasts a second (Pending, Allocated) adds no write of its own:
// it gets none until the RemotePod has them. WaitBackend, which lasts
// until the Pod has an IP, gets them, so that such a RemotePod has a
// status and is not taken for Healthy. The states on the way share one
// Healthy=False, so they cost one write, not one each. A condition keeps
// its time from had while its status stays.
func remoteHealth(had []corev1.PodCondition, told corev1.PodCondition, failing bool) []corev1.PodCondition {
	h := corev1.PodCondition{Type: v1alpha1.RemotePodHealthy, Status: told.Status, Reason: told.Reason, Message: told.Message}
	if told.Status != corev1.ConditionTrue && !failing {
		if told.Reason != v1alpha1.StateWaitBackend && !slices.ContainsFunc(had, func(c corev1.PodCondition) bool { return c.Type == v1alpha1.RemotePodHealthy }) {
			return nil
		}
		h.Reason, h.Message = string(v1alpha1.ReasonBinding), "The Pod's addresses are being bound"
	}
	sy := corev1.PodCondition{Type: v1alpha1.RemotePodSynced, Status: corev1.ConditionTrue, Reason: string(xpv2.ReasonReconcileSuccess)}
	if failing {
		sy.Status, sy.Reason, sy.Message = corev1.ConditionFalse, string(xpv2.ReasonReconcileError), told.Message
	}
	out := []corev1.PodCondition{h, sy}
	for i := range out {
		out[i].LastTransitionTime = metav1.Now()
		for _, c := range had {
			if c.Type == out[i].Type && c.Status == out[i].Status {
				out[i].LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	return out
}

// nodeInstance is the CVM instance of the node pod runs on: from the Node
// of this cluster, or from spec.node of a RemotePod.
func (r *Reconciler) nodeInstance(ctx context.Context, pod *corev1.Pod) (string, error) {
	if x := r.remote.of(pod); x != nil {
		if n := x.rp.Spec.Node; n != nil && n.InstanceID != "" {
			return n.InstanceID, nil
		}
		return "", errors.Errorf("RemotePod %s names no spec.node.instanceId; the NodePort backend needs one", x.rp.GetName())
	}
	node := &corev1.Node{}
	if err := r.kube.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
		return "", errors.Wrapf(err, "cannot get node %s", pod.Spec.NodeName)
	}
	id, err := instanceID(node.Spec.ProviderID)
	return id, errors.Wrapf(err, "node %s", node.GetName())
}

// outOfBounds returns why a RemotePod that asks for an address (want) may
// not have it: beyond what its WorkloadCluster allows (the agent is not
// trusted with any address or pool). A refused Pod holds nothing: decide
// releases an existing PodAddress, as for a Pod that stops asking.
func (r *Reconciler) outOfBounds(ctx context.Context, x *remote, want *ask) (refusal, err error) {
	if x == nil || want == nil {
		return nil, nil
	}
	return r.bounded(ctx, x, want)
}

// bounded returns why the RemotePod of x may not have what it asks for, or
// nil; err is a failure to read its WorkloadCluster.
func (r *Reconciler) bounded(ctx context.Context, x *remote, want *ask) (refusal, err error) {
	wc := &v1alpha1.WorkloadCluster{}
	key := types.NamespacedName{Namespace: x.rp.GetNamespace(), Name: x.rp.Spec.Cluster}
	if err := r.kube.Get(ctx, key, wc); err != nil {
		if kerrors.IsNotFound(err) {
			return errors.Errorf("spec.cluster: WorkloadCluster %s does not exist in namespace %s", key.Name, key.Namespace), nil
		}
		return nil, errors.Wrapf(err, "cannot get WorkloadCluster %s", key)
	}
	if wc.Spec.Suspend {
		return errors.Errorf("WorkloadCluster %s is suspended (spec.suspend): its Pods are not served", wc.GetName()), nil
	}
	b, err := wc.Bounds()
	if err != nil {
		return err, nil
	}
	if err := b.Admit(&x.rp.Spec); err != nil {
		return err, nil
	}
	for _, p := range want.spec.Ports {
		for _, pool := range p.Pools {
			if k := pool.Key(x.rp.GetNamespace()); !b.AllowsPool(k) {
				return errors.New(b.PoolsMessage(k)), nil
			}
		}
	}
	return nil, nil
}

// refuseRemote tells a refused RemotePod why: its address conditions
// False with the reason, the address and status annotations told before
// removed, and the refusal as status.warning. It writes nothing when the
// RemotePod says so already.
func (r *Reconciler) refuseRemote(ctx context.Context, x *remote, pod *corev1.Pod, refusal error) {
	r.podEvent(pod, event.Warning(reasonOutOfBounds, refusal))
	orig := pod.DeepCopy()
	c := corev1.PodCondition{Type: conditionAddressReady, Status: corev1.ConditionFalse, Reason: string(reasonOutOfBounds), Message: refusal.Error()}
	setPodCondition(pod, c)
	for _, g := range podannotation.ReadinessGates(pod) {
		c.Type = g
		setPodCondition(pod, c)
	}
	for k := range x.rp.Status.Annotations {
		delete(pod.Annotations, k)
	}
	if err := r.tellRemote(ctx, x, orig, pod, c, true); err != nil {
		r.out.log.Debug("cannot tell a RemotePod it is refused", "remotePod", client.ObjectKeyFromObject(pod), "error", err)
	}
}

// remotePodsOfCluster maps a WorkloadCluster to its RemotePods: a change
// of its bounds or its suspension is judged again for each.
func (r *Reconciler) remotePodsOfCluster(ctx context.Context, wc *v1alpha1.WorkloadCluster) []reconcile.Request {
	l := &v1alpha1.RemotePodList{}
	if err := r.kube.List(ctx, l, client.InNamespace(wc.GetNamespace())); err != nil {
		r.out.log.Debug("cannot list the RemotePods of a WorkloadCluster", "workloadCluster", client.ObjectKeyFromObject(wc), "error", err)
		return nil
	}
	var out []reconcile.Request
	for i := range l.Items {
		if l.Items[i].Spec.Cluster == wc.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
		}
	}
	return out
}
