package nat

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// gamePod is a Pod of the workload cluster on node, asking for a port by
// annotation when ask is set.
func gamePod(ns, name, node string, ask bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "game"}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "game", Image: "game", Ports: []corev1.ContainerPort{
				{Name: "play", ContainerPort: 7777, Protocol: corev1.ProtocolUDP},
			}}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}},
		},
	}
	if ask {
		p.Annotations = map[string]string{podannotation.AnnotationPorts: "7777/UDP rooms", "unrelated": "x"}
	}
	return p
}

// setRunning plays the kubelet: an IP and a Ready condition.
func setRunning(t *testing.T, p *corev1.Pod, ip string, ready bool) {
	t.Helper()
	ctx := context.Background()
	if err := testenv.Eventually(ctx, wait, func() error {
		if err := workKube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		s := corev1.ConditionFalse
		if ready {
			s = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}
		return workKube.Status().Update(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
}

func ensureNamespace(t *testing.T, kube client.Client, ns string) {
	t.Helper()
	if err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// waitRemotePod polls until the RemotePod of Pod podNS/pod in hub namespace
// ns satisfies ok (nil: until it is gone).
func waitRemotePod(t *testing.T, ns, podNS, pod, what string, ok func(*v1alpha1.RemotePod) error) {
	t.Helper()
	key := client.ObjectKey{Namespace: ns, Name: v1alpha1.RemotePodName(podNS, pod)}
	if err := testenv.Eventually(context.Background(), wait, func() error {
		rp := &v1alpha1.RemotePod{}
		err := hubKube.Get(context.Background(), key, rp)
		if ok == nil {
			if kerrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("RemotePod %s still exists", key)
		}
		if err != nil {
			return err
		}
		return ok(rp)
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestMirrorPods: Pods that ask for an address, by annotation or through a
// policy of the cluster's namespace, have RemotePods that follow them;
// others have none.
func TestMirrorPods(t *testing.T) {
	ctx := context.Background()
	ns, name, podNS := "nat-mirror", "mirror", "mirror-games"
	newCluster(t, ns, name, 0)
	ensureNamespace(t, workKube, podNS)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mirror-node"}, Spec: corev1.NodeSpec{ProviderID: "qcloud:///100003/ins-mirror1"}}
	if err := workKube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.0.7"}}
	if err := workKube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	asks := gamePod(podNS, "asks", node.Name, true)
	if err := workKube.Create(ctx, asks); err != nil {
		t.Fatal(err)
	}
	silent := gamePod(podNS, "silent", node.Name, false)
	silent.Labels = map[string]string{"app": "other"}
	if err := workKube.Create(ctx, silent); err != nil {
		t.Fatal(err)
	}
	setRunning(t, asks, "172.16.0.5", false)

	register(t, ns, name)
	waitRemotePod(t, ns, podNS, "asks", "the annotated Pod is mirrored", func(rp *v1alpha1.RemotePod) error {
		s := rp.Spec
		switch {
		case s.Cluster != name || s.PodNamespace != podNS || s.PodName != "asks" || s.PodUID != string(asks.UID):
			return fmt.Errorf("identity: %+v", s)
		case s.Annotations[podannotation.AnnotationPorts] != "7777/UDP rooms" || len(s.Annotations) != 1:
			return fmt.Errorf("annotations %v, want the ports request only", s.Annotations)
		case s.Node == nil || s.Node.InstanceID != "ins-mirror1" || s.Node.InternalIP != "10.1.0.7":
			return fmt.Errorf("node %+v", s.Node)
		case s.PodIP != "172.16.0.5" || !slices.Equal(s.PodIPs, []string{"172.16.0.5"}) || s.Ready:
			return fmt.Errorf("ip %s %v ready %v", s.PodIP, s.PodIPs, s.Ready)
		case len(s.Containers) != 1 || len(s.Containers[0].Ports) != 1 || s.Containers[0].Ports[0].ContainerPort != 7777:
			return fmt.Errorf("containers %+v", s.Containers)
		case !slices.Equal(s.ReadinessGates, []string{podannotation.ConditionAddressReady}):
			return fmt.Errorf("readiness gates %v", s.ReadinessGates)
		case s.Labels["app"] != "game":
			return fmt.Errorf("labels %v", s.Labels)
		}
		return nil
	})

	// The Pod becomes Ready: the spec follows.
	setRunning(t, asks, "172.16.0.5", true)
	waitRemotePod(t, ns, podNS, "asks", "readiness is mirrored", func(rp *v1alpha1.RemotePod) error {
		if !rp.Spec.Ready {
			return fmt.Errorf("not ready yet")
		}
		return nil
	})
	// The node moves to another IP: the spec follows.
	if err := workKube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.0.8"}}
	if err := workKube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	waitRemotePod(t, ns, podNS, "asks", "the node's IP is followed", func(rp *v1alpha1.RemotePod) error {
		if rp.Spec.Node == nil || rp.Spec.Node.InternalIP != "10.1.0.8" {
			return fmt.Errorf("node %+v", rp.Spec.Node)
		}
		return nil
	})

	// A policy of the cluster's namespace selects the silent Pod.
	if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.RemotePodName(podNS, "silent")}, &v1alpha1.RemotePod{}); !kerrors.IsNotFound(err) {
		t.Fatalf("a Pod that asks for nothing is mirrored: %v", err)
	}
	pol := &v1alpha1.PodAddressPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "others"},
		Spec: v1alpha1.PodAddressPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Ports:    []v1alpha1.PortRequest{{Port: intstr.FromInt32(7777), Pools: []v1alpha1.PoolRef{{Name: "rooms"}}}},
		},
	}
	if err := hubKube.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	waitRemotePod(t, ns, podNS, "silent", "a Pod the policy selects is mirrored", func(*v1alpha1.RemotePod) error { return nil })
	// Its labels change away from the selector: the RemotePod goes.
	if err := workKube.Get(ctx, client.ObjectKeyFromObject(silent), silent); err != nil {
		t.Fatal(err)
	}
	silent.Labels = map[string]string{"app": "elsewhere"}
	if err := workKube.Update(ctx, silent); err != nil {
		t.Fatal(err)
	}
	waitRemotePod(t, ns, podNS, "silent", "a Pod no longer selected is dropped", nil)

	// The annotation is removed: dropped as well. Put back, mirrored again.
	if err := workKube.Get(ctx, client.ObjectKeyFromObject(asks), asks); err != nil {
		t.Fatal(err)
	}
	delete(asks.Annotations, podannotation.AnnotationPorts)
	if err := workKube.Update(ctx, asks); err != nil {
		t.Fatal(err)
	}
	waitRemotePod(t, ns, podNS, "asks", "a Pod that stops asking is dropped", nil)
	asks.Annotations[podannotation.AnnotationPorts] = "7777/UDP rooms"
	if err := workKube.Update(ctx, asks); err != nil {
		t.Fatal(err)
	}
	waitRemotePod(t, ns, podNS, "asks", "a Pod asking again is mirrored", func(*v1alpha1.RemotePod) error { return nil })

	// The Pod is being deleted (on a node, it waits for its kubelet,
	// which there is none of): the RemotePod says so.
	if err := workKube.Delete(ctx, asks); err != nil {
		t.Fatal(err)
	}
	waitRemotePod(t, ns, podNS, "asks", "a terminating Pod is deleting", func(rp *v1alpha1.RemotePod) error {
		if !rp.Spec.Deleting {
			return fmt.Errorf("not deleting yet")
		}
		return nil
	})
	// Gone: so is its RemotePod.
	if err := workKube.Delete(ctx, asks, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitRemotePod(t, ns, podNS, "asks", "a deleted Pod's RemotePod is deleted", nil)
}

// TestWriteBack: what the provider writes in a RemotePod's status reaches
// the Pod (annotations set and removed, the address condition, a Warning
// Event), once.
func TestWriteBack(t *testing.T) {
	ctx := context.Background()
	ns, name, podNS := "nat-back", "back", "back-games"
	newCluster(t, ns, name, 0)
	ensureNamespace(t, workKube, podNS)
	pod := gamePod(podNS, "room-0", "", true)
	pod.Annotations["stale"] = "old address"
	if err := workKube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	setRunning(t, pod, "172.16.1.5", false)
	register(t, ns, name)
	rp := &v1alpha1.RemotePod{}
	waitRemotePod(t, ns, podNS, "room-0", "mirrored", func(got *v1alpha1.RemotePod) error { *rp = *got; return nil })

	// The provider's side writes the status (as the PodAddress controller
	// would).
	warnAt := metav1.NewTime(time.Now().Truncate(time.Second))
	rp.Status = v1alpha1.RemotePodStatus{
		Annotations:       map[string]string{podannotation.AnnotationAddresses: `[{"address":"1.2.3.4:30001"}]`, podannotation.AnnotationStatus: podannotation.StatusReady},
		RemoveAnnotations: []string{"stale"},
		Conditions:        []corev1.PodCondition{{Type: podannotation.ConditionAddressReady, Status: corev1.ConditionTrue, Reason: "Bound"}},
		Warning:           &v1alpha1.RemoteEvent{Reason: "PoolNearlyFull", Message: "pool rooms has 2 free ports", Time: warnAt},
	}
	if err := hubKube.Status().Update(ctx, rp); err != nil {
		t.Fatal(err)
	}
	if err := testenv.Eventually(ctx, wait, func() error {
		if err := workKube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		a := pod.Annotations
		switch {
		case a[podannotation.AnnotationStatus] != podannotation.StatusReady || a[podannotation.AnnotationAddresses] == "":
			return fmt.Errorf("annotations %v", a)
		case a["stale"] != "":
			return fmt.Errorf("the removed annotation is still there: %v", a)
		case a["unrelated"] != "x":
			return fmt.Errorf("an annotation of the Pod's own was lost: %v", a)
		}
		c := condition(pod, podannotation.ConditionAddressReady)
		if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "Bound" {
			return fmt.Errorf("condition %+v", c)
		}
		if condition(pod, corev1.PodReady) == nil {
			return fmt.Errorf("the kubelet's Ready condition was replaced: %+v", pod.Status.Conditions)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The agent records the Warning after it patches the Pod.
	if err := testenv.Eventually(ctx, wait, func() error {
		events := warnings(t, pod)
		if len(events) != 1 || events[0].Reason != "PoolNearlyFull" || events[0].Message != "pool rooms has 2 free ports" {
			return fmt.Errorf("warning events %+v, want the one PoolNearlyFull", events)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// A later status change is applied too; what was applied is not
	// written again (same condition, same Event).
	rv := pod.ResourceVersion
	cond := *condition(pod, podannotation.ConditionAddressReady)
	if err := hubKube.Get(ctx, client.ObjectKeyFromObject(rp), rp); err != nil {
		t.Fatal(err)
	}
	rp.Status.Annotations["network.tencentcloud.crossplane.io/room-address"] = "1.2.3.4:30001"
	if err := hubKube.Status().Update(ctx, rp); err != nil {
		t.Fatal(err)
	}
	if err := testenv.Eventually(ctx, wait, func() error {
		if err := workKube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Annotations["network.tencentcloud.crossplane.io/room-address"] == "" {
			return fmt.Errorf("the new annotation is not applied")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if pod.ResourceVersion == rv {
		t.Fatal("the Pod was not written")
	}
	if c := condition(pod, podannotation.ConditionAddressReady); !c.LastTransitionTime.Equal(&cond.LastTransitionTime) {
		t.Errorf("the unchanged condition was rewritten: %v, was %v", c.LastTransitionTime, cond.LastTransitionTime)
	}
	if n := len(warnings(t, pod)); n != 1 {
		t.Errorf("%d warning Events after an unrelated change, want still 1", n)
	}
}

func condition(p *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ct {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// warnings are the Warning Events on pod in the workload cluster.
func warnings(t *testing.T, pod *corev1.Pod) []corev1.Event {
	t.Helper()
	l := &corev1.EventList{}
	if err := workKube.List(context.Background(), l, client.InNamespace(pod.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.UID == pod.UID && e.Type == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	return out
}
