package integration

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/targetset"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// The test API server runs no kube-controller-manager, so the tests write
// the EndpointSlices of their Services as its EndpointSlice controller
// would: one slice per Service, an endpoint per Pod with an IP, its node,
// a targetRef, and ready/serving/terminating from the Pod.

// workload is the Pods of one Service in a test, and the Service's port.
type workload struct {
	ns, svc  string
	portName string
	// targetPort is the Pods' container port the Service port targets.
	targetPort int32
	pods       []*corev1.Pod
}

// newService creates a NodePort Service with one port and returns the
// NodePort the API server allocated.
func newService(t testing.TB, ns, name, portName string, port, targetPort int32) int64 {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
		Type:     corev1.ServiceTypeNodePort,
		Selector: map[string]string{"app": name},
		Ports:    []corev1.ServicePort{{Name: portName, Port: port, TargetPort: intstr.FromInt32(targetPort), Protocol: corev1.ProtocolTCP}},
	}}
	if err := kube.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	return int64(svc.Spec.Ports[0].NodePort)
}

// newNode creates a Node (cluster-scoped, deleted after the test).
func newNode(t *testing.T, name, providerID string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if err := kube.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), n) })
}

// addPod creates a Pod of w with an IP on node, Ready or not, with a
// container port targetPort (and hostPort when not 0), and publishes it.
func (w *workload) addPod(t *testing.T, name, ip, node string, hostPort int32, ready bool, labels ...string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	l := map[string]string{"app": w.svc}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name, Labels: l}, Spec: corev1.PodSpec{
		NodeName: node,
		Containers: []corev1.Container{{Name: "server", Image: "example/server",
			Ports: []corev1.ContainerPort{{ContainerPort: w.targetPort, HostPort: hostPort}}}},
	}}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	setReady(pod, ready)
	if err := kube.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	w.pods = append(w.pods, pod)
	w.publish(t)
	return pod
}

func setReady(pod *corev1.Pod, ready bool) {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}
}

// setPodReady changes a Pod's readiness and publishes it.
func (w *workload) setPodReady(t *testing.T, name string, ready bool) {
	t.Helper()
	for _, p := range w.pods {
		if p.Name == name {
			setReady(p, ready)
			if err := kube.Status().Update(context.Background(), p); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.publish(t)
}

// removePod deletes a Pod of w and publishes the rest.
func (w *workload) removePod(t *testing.T, name string) {
	t.Helper()
	for i, p := range w.pods {
		if p.Name == name {
			if err := kube.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			w.pods = append(w.pods[:i], w.pods[i+1:]...)
			break
		}
	}
	w.publish(t)
}

// slice is the EndpointSlice the EndpointSlice controller would write for
// the Pods of w.
func (w *workload) slice() *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.svc + "-abcde", Labels: map[string]string{
			discoveryv1.LabelServiceName: w.svc, discoveryv1.LabelManagedBy: "integration-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: clb.Ptr(w.portName), Port: clb.Ptr(w.targetPort), Protocol: clb.Ptr(corev1.ProtocolTCP)}},
	}
	for _, p := range w.pods {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: clb.Ptr(ready), Serving: clb.Ptr(ready), Terminating: clb.Ptr(false)},
			NodeName:   clb.Ptr(p.Spec.NodeName),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	return sl
}

// publish writes w's EndpointSlice.
func (w *workload) publish(t *testing.T) {
	t.Helper()
	if err := w.write(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (w *workload) write(ctx context.Context) error {
	want := w.slice()
	got := &discoveryv1.EndpointSlice{}
	err := kube.Get(ctx, client.ObjectKeyFromObject(want), got)
	if kerrors.IsNotFound(err) {
		return kube.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	got.Endpoints, got.Ports = want.Endpoints, want.Ports
	return kube.Update(ctx, got)
}

// serviceTargetSet is a TargetSet of a listener whose targets follow src.
func serviceTargetSet(ns, name, lbID, lisID string, src v1alpha1.TargetSource) *v1alpha1.TargetSet {
	return newTargetSet(ns, name, lbID, lisID, nil, func(ts *v1alpha1.TargetSet) { ts.Spec.ForProvider.Source = &src })
}

// updateTS changes the spec of a TargetSet the provider writes status to,
// reading it again on a conflict.
func updateTS(t *testing.T, ts *v1alpha1.TargetSet, change func()) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "update TargetSet "+ts.Name, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(ts), ts); err != nil {
			return err
		}
		change()
		return kube.Update(ctx, ts)
	})
}

func createTS(t testing.TB, ts *v1alpha1.TargetSet) {
	t.Helper()
	if err := kube.Create(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
}

// cloudTargets returns a listener's targets in the emulated cloud as
// "ins-…:port" (CVM) or "ip:port" (ENI) → weight.
func cloudTargets(lbID, listenerID string) map[string]int {
	lb, _ := inventoryLB(lbID)
	out := map[string]int{}
	for _, l := range lb.Listeners {
		if l.ID != listenerID {
			continue
		}
		for _, tg := range l.Targets {
			k := tg.IP
			if tg.InstanceID != "" {
				k = tg.InstanceID
			}
			out[fmt.Sprintf("%s:%d", k, tg.Port)] = tg.Weight
		}
	}
	return out
}

// waitCloudTargets waits until a listener's targets are exactly want.
func waitCloudTargets(t *testing.T, lbID, listenerID string, want map[string]int) {
	t.Helper()
	eventually(t, "targets of "+listenerID, func() error {
		if got := cloudTargets(lbID, listenerID); !maps.Equal(got, want) {
			return errors.Errorf("targets %v, want %v", got, want)
		}
		return nil
	})
}

// deleteTS deletes a TargetSet and checks that its listener has no target left.
func deleteTS(t *testing.T, ts *v1alpha1.TargetSet, lbID, lisID string) {
	t.Helper()
	if err := kube.Delete(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ts)
	waitCloudTargets(t, lbID, lisID, map[string]int{})
}

// waitResolved waits until the TargetSet's Resolved condition says what
// check wants.
func waitResolved(t *testing.T, ts *v1alpha1.TargetSet, check func(xpv2.Condition) error) {
	t.Helper()
	waitFor(t, ts, func() error { return check(ts.GetCondition(targetset.TypeResolved)) })
}

// TestTargetSetServiceNodePort is scenario 1: the load balancer forwards to
// the NodePort of the nodes that run the Service's ready Pods, each node
// once. A node without a CVM instance in its providerID is left out and
// named on the Resolved condition, until it gets one.
func TestTargetSetServiceNodePort(t *testing.T) {
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 38080)
	nodeA, nodeB, nodeC := ns+"-a", ns+"-b", ns+"-c"
	newNode(t, nodeA, "qcloud:///800002/ins-np00000a")
	newNode(t, nodeB, "ins-np00000b") // a bare instance id is accepted too
	newNode(t, nodeC, "")
	nodePort := newService(t, ns, "test-svc", "tcp", 8080, 8080)
	w := &workload{ns: ns, svc: "test-svc", portName: "tcp", targetPort: 8080}
	w.addPod(t, "web-1", "10.9.0.1", nodeA, 0, true)
	w.addPod(t, "web-2", "10.9.0.2", nodeA, 0, true)
	w.addPod(t, "web-3", "10.9.0.3", nodeB, 0, true)
	w.addPod(t, "web-4", "10.9.0.4", nodeC, 0, true)

	ts := serviceTargetSet(ns, "test1", lbID, lisID, v1alpha1.TargetSource{
		Services: []v1alpha1.ServiceBackend{{Name: "test-svc", Namespace: ns, Port: intstr.FromInt32(8080)}}})
	createTS(t, ts)
	waitReady(t, ts)
	a, b := fmt.Sprintf("ins-np00000a:%d", nodePort), fmt.Sprintf("ins-np00000b:%d", nodePort)
	waitCloudTargets(t, lbID, lisID, map[string]int{a: 10, b: 10})
	waitResolved(t, ts, func(c xpv2.Condition) error {
		if c.Status != "False" || !strings.Contains(c.Message, nodeC) {
			return errors.Errorf("Resolved %s: %q, want False naming node %s", c.Status, c.Message, nodeC)
		}
		return nil
	})

	// The node gets its instance: the Node watch brings it in.
	n := &corev1.Node{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: nodeC}, n); err != nil {
		t.Fatal(err)
	}
	n.Spec.ProviderID = "qcloud:///800002/ins-np00000c"
	if err := kube.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	c := fmt.Sprintf("ins-np00000c:%d", nodePort)
	waitCloudTargets(t, lbID, lisID, map[string]int{a: 10, b: 10, c: 10})
	waitResolved(t, ts, func(c xpv2.Condition) error {
		if c.Status != "True" {
			return errors.Errorf("Resolved %s: %q, want True", c.Status, c.Message)
		}
		return nil
	})

	// The only Pod of node B goes: node B leaves; node A keeps one Pod.
	w.removePod(t, "web-3")
	w.removePod(t, "web-1")
	waitCloudTargets(t, lbID, lisID, map[string]int{a: 10, c: 10})

	deleteTS(t, ts, lbID, lisID)
}

// TestTargetSetServicePodIP is scenario 2: straight to the Pods' IPs on the
// target port (Service port 28080 → container port 8080). Targets follow
// Pods as they come, go and change readiness; includeNotReady keeps Pods
// that are not Ready.
func TestTargetSetServicePodIP(t *testing.T) {
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 38080)
	newService(t, ns, "test-svc", "", 28080, 8080) // an unnamed port
	w := &workload{ns: ns, svc: "test-svc", targetPort: 8080}
	w.addPod(t, "web-1", "10.9.1.1", "n1", 0, true)
	w.addPod(t, "web-2", "10.9.1.2", "n1", 0, true)
	w.addPod(t, "web-3", "10.9.1.3", "n2", 0, false)

	ts := serviceTargetSet(ns, "test2", lbID, lisID, v1alpha1.TargetSource{
		Services: []v1alpha1.ServiceBackend{{Name: "test-svc", Port: intstr.FromInt32(28080), Backend: v1alpha1.BackendPodIP}}})
	createTS(t, ts)
	waitReady(t, ts)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.1.1:8080": 10, "10.9.1.2:8080": 10})

	// Ready → in; scale up → in; scale down → out; not Ready → out.
	w.setPodReady(t, "web-3", true)
	w.addPod(t, "web-4", "10.9.1.4", "n2", 0, true)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.1.1:8080": 10, "10.9.1.2:8080": 10, "10.9.1.3:8080": 10, "10.9.1.4:8080": 10})
	w.removePod(t, "web-1")
	w.setPodReady(t, "web-2", false)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.1.3:8080": 10, "10.9.1.4:8080": 10})

	// includeNotReady: the Pod that is not Ready is back.
	updateTS(t, ts, func() { ts.Spec.ForProvider.Source.IncludeNotReady = true })
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.1.2:8080": 10, "10.9.1.3:8080": 10, "10.9.1.4:8080": 10})

	// Scale to zero: an empty set is a valid desired state.
	for _, p := range []string{"web-2", "web-3", "web-4"} {
		w.removePod(t, p)
	}
	waitCloudTargets(t, lbID, lisID, map[string]int{})
	waitReady(t, ts)

	w.addPod(t, "web-5", "10.9.1.5", "n1", 0, true)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.1.5:8080": 10})
	deleteTS(t, ts, lbID, lisID)
}

// TestTargetSetServiceHostPort is scenario 3: each Pod's node with the
// hostPort its container declares for the target port. A Pod without one
// is left out and named.
func TestTargetSetServiceHostPort(t *testing.T) {
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 38080)
	newNode(t, ns+"-a", "qcloud:///800002/ins-hp00000a")
	newNode(t, ns+"-b", "qcloud:///800002/ins-hp00000b")
	newService(t, ns, "test-svc", "game", 28080, 8080)
	w := &workload{ns: ns, svc: "test-svc", portName: "game", targetPort: 8080}
	w.addPod(t, "game-1", "10.9.2.1", ns+"-a", 18080, true)
	w.addPod(t, "game-2", "10.9.2.2", ns+"-b", 18080, true)
	w.addPod(t, "game-3", "10.9.2.3", ns+"-b", 0, true)

	ts := serviceTargetSet(ns, "test3", lbID, lisID, v1alpha1.TargetSource{
		Services: []v1alpha1.ServiceBackend{{Name: "test-svc", Port: intstr.FromString("game"), Backend: v1alpha1.BackendHostPort}}})
	createTS(t, ts)
	waitReady(t, ts)
	waitCloudTargets(t, lbID, lisID, map[string]int{"ins-hp00000a:18080": 10, "ins-hp00000b:18080": 10})
	waitResolved(t, ts, func(c xpv2.Condition) error {
		if c.Status != "False" || !strings.Contains(c.Message, "game-3") || !strings.Contains(c.Message, "hostPort") {
			return errors.Errorf("Resolved %s: %q, want False naming Pod game-3", c.Status, c.Message)
		}
		return nil
	})
	deleteTS(t, ts, lbID, lisID)
}

// TestTargetSetServiceWeights is scenario 7: two Services behind one
// listener weighted 80 and 20; a weight change goes out as a weight change.
func TestTargetSetServiceWeights(t *testing.T) {
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 38080)
	newService(t, ns, "svc-a", "", 80, 8080)
	newService(t, ns, "svc-b", "", 80, 8080)
	a := &workload{ns: ns, svc: "svc-a", targetPort: 8080}
	b := &workload{ns: ns, svc: "svc-b", targetPort: 8080}
	a.addPod(t, "a-1", "10.9.3.1", "n1", 0, true)
	a.addPod(t, "a-2", "10.9.3.2", "n1", 0, true)
	b.addPod(t, "b-1", "10.9.3.11", "n1", 0, true)

	ts := serviceTargetSet(ns, "test7", lbID, lisID, v1alpha1.TargetSource{Services: []v1alpha1.ServiceBackend{
		{Name: "svc-a", Port: intstr.FromInt32(80), Backend: v1alpha1.BackendPodIP, Weight: clb.Ptr(int64(80))},
		{Name: "svc-b", Port: intstr.FromInt32(80), Backend: v1alpha1.BackendPodIP, Weight: clb.Ptr(int64(20))},
	}})
	createTS(t, ts)
	waitReady(t, ts)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.3.1:8080": 80, "10.9.3.2:8080": 80, "10.9.3.11:8080": 20})

	reg, dereg, weight := callsOf("BatchRegisterTargets"), callsOf("BatchDeregisterTargets"), callsOf("BatchModifyTargetWeight")
	updateTS(t, ts, func() { ts.Spec.ForProvider.Source.Services[1].Weight = clb.Ptr(int64(50)) })
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.3.1:8080": 80, "10.9.3.2:8080": 80, "10.9.3.11:8080": 50})
	waitReady(t, ts)
	if n := callsOf("BatchModifyTargetWeight") - weight; n < 1 {
		t.Errorf("a weight change sent %d BatchModifyTargetWeight calls, want at least 1", n)
	}
	// Other tests run in parallel on other load balancers only if marked
	// parallel; none of this package's are, so the counters are ours.
	if r, d := callsOf("BatchRegisterTargets")-reg, callsOf("BatchDeregisterTargets")-dereg; r != 0 || d != 0 {
		t.Errorf("a weight change sent %d register and %d deregister calls, want 0", r, d)
	}
	deleteTS(t, ts, lbID, lisID)
}

// TestTargetSetServiceSubsets is scenario 8: Pods labelled v1 weigh 10 and
// v2 20; a Pod relabelled moves to its new subset's weight.
func TestTargetSetServiceSubsets(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 38080)
	newService(t, ns, "test-svc", "", 80, 8080)
	w := &workload{ns: ns, svc: "test-svc", targetPort: 8080}
	w.addPod(t, "v1-1", "10.9.4.1", "n1", 0, true, "version", "v1")
	v := w.addPod(t, "v1-2", "10.9.4.2", "n1", 0, true, "version", "v1")
	w.addPod(t, "v2-1", "10.9.4.11", "n1", 0, true, "version", "v2")
	w.addPod(t, "other", "10.9.4.21", "n1", 0, true)

	ts := serviceTargetSet(ns, "test8", lbID, lisID, v1alpha1.TargetSource{Services: []v1alpha1.ServiceBackend{{
		Name: "test-svc", Port: intstr.FromInt32(80), Backend: v1alpha1.BackendPodIP, Weight: clb.Ptr(int64(5)),
		Subsets: []v1alpha1.WeightedSubset{
			{LabelSelector: map[string]string{"version": "v1"}, Weight: 10},
			{LabelSelector: map[string]string{"version": "v2"}, Weight: 20},
		},
	}}})
	createTS(t, ts)
	waitReady(t, ts)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.4.1:8080": 10, "10.9.4.2:8080": 10, "10.9.4.11:8080": 20, "10.9.4.21:8080": 5})

	// A label change alone (no EndpointSlice change) is followed.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(v), v); err != nil {
		t.Fatal(err)
	}
	v.Labels["version"] = "v2"
	if err := kube.Update(ctx, v); err != nil {
		t.Fatal(err)
	}
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.4.1:8080": 10, "10.9.4.2:8080": 20, "10.9.4.11:8080": 20, "10.9.4.21:8080": 5})
	deleteTS(t, ts, lbID, lisID)
}

// TestTargetSetNamedPods is the building block of scenario 5's port
// mappings: Pods named one by one, by IP or by hostPort. A Pod recreated
// with a new IP moves its target; a Pod gone has none.
func TestTargetSetNamedPods(t *testing.T) {
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "UDP", 30000)
	newNode(t, ns+"-a", "qcloud:///800002/ins-sts0000a")
	w := &workload{ns: ns, svc: "gameserver", targetPort: 7777}
	w.addPod(t, "gameserver-0", "10.9.5.1", ns+"-a", 0, true)
	w.addPod(t, "gameserver-1", "10.9.5.2", ns+"-a", 27777, true)

	ts := serviceTargetSet(ns, "test5", lbID, lisID, v1alpha1.TargetSource{Pods: []v1alpha1.PodBackend{
		{Name: "gameserver-0", Port: 7777},
		{Name: "gameserver-1", Port: 7777, Backend: v1alpha1.BackendHostPort, Weight: clb.Ptr(int64(30))},
	}})
	createTS(t, ts)
	waitReady(t, ts)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.5.1:7777": 10, "ins-sts0000a:27777": 30})

	w.removePod(t, "gameserver-0")
	waitCloudTargets(t, lbID, lisID, map[string]int{"ins-sts0000a:27777": 30})
	w.addPod(t, "gameserver-0", "10.9.5.9", ns+"-a", 0, true)
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.5.9:7777": 10, "ins-sts0000a:27777": 30})
	deleteTS(t, ts, lbID, lisID)
}

// TestTargetSetServiceMissingKeepsTargets checks that a Service that does
// not exist (deleted, or not in the cache) changes nothing: the targets
// stay and Synced says why, until the Service is back.
func TestTargetSetServiceMissingKeepsTargets(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 38080)
	newService(t, ns, "test-svc", "", 80, 8080)
	w := &workload{ns: ns, svc: "test-svc", targetPort: 8080}
	w.addPod(t, "web-1", "10.9.6.1", "n1", 0, true)
	ts := serviceTargetSet(ns, "missing", lbID, lisID, v1alpha1.TargetSource{Services: []v1alpha1.ServiceBackend{{
		Name: "test-svc", Port: intstr.FromInt32(80), Backend: v1alpha1.BackendPodIP}}})
	createTS(t, ts)
	waitReady(t, ts)
	want := map[string]int{"10.9.6.1:8080": 10}
	waitCloudTargets(t, lbID, lisID, want)

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-svc"}}
	if err := kube.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ts, func() error {
		if s := ts.GetCondition(xpv2.TypeSynced); s.Status != "False" || !strings.Contains(s.Message, "does not exist") {
			return errors.Errorf("Synced %s: %q, want False saying the Service does not exist", s.Status, s.Message)
		}
		return nil
	})
	if got := cloudTargets(lbID, lisID); !maps.Equal(got, want) {
		t.Errorf("targets %v after the Service went, want them kept: %v", got, want)
	}
	newService(t, ns, "test-svc", "", 80, 8080)
	waitReady(t, ts)
	deleteTS(t, ts, lbID, lisID)
}

// TestTargetSetServiceBurstCoalesces changes the endpoints of 20 Services
// at once, each followed by its own TargetSet on its own listener of one
// load balancer: the shared client sends the registrations together, far
// fewer calls than TargetSets.
func TestTargetSetServiceBurstCoalesces(t *testing.T) {
	const n = 20
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	ws := make([]*workload, n)
	lis := make([]string, n)
	for i := range n {
		lis[i] = fixtureListener(t, lbID, "TCP", int64(40000+i))
		svc := fmt.Sprintf("svc-%02d", i)
		newService(t, ns, svc, "", 80, 8080)
		ws[i] = &workload{ns: ns, svc: svc, targetPort: 8080}
		ws[i].addPod(t, svc+"-0", fmt.Sprintf("10.9.7.%d", i+1), "n1", 0, true)
		createTS(t, serviceTargetSet(ns, svc, lbID, lis[i], v1alpha1.TargetSource{Services: []v1alpha1.ServiceBackend{{
			Name: svc, Port: intstr.FromInt32(80), Backend: v1alpha1.BackendPodIP}}}))
	}
	for i := range n {
		waitCloudTargets(t, lbID, lis[i], map[string]int{fmt.Sprintf("10.9.7.%d:8080", i+1): 10})
	}

	// The burst: a second Pod per Service, its slice written in one go.
	reg := callsOf("BatchRegisterTargets")
	for i, w := range ws {
		ip := fmt.Sprintf("10.9.8.%d", i+1)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.svc + "-1", Labels: map[string]string{"app": w.svc}}}
		p.Status.PodIP = ip
		p.Spec.NodeName = "n1"
		setReady(p, true)
		w.pods = append(w.pods, p) // the slice only; no Pod object is needed for PodIP without subsets
	}
	for _, w := range ws {
		if err := w.write(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		waitCloudTargets(t, lbID, lis[i], map[string]int{fmt.Sprintf("10.9.7.%d:8080", i+1): 10, fmt.Sprintf("10.9.8.%d:8080", i+1): 10})
	}
	calls := callsOf("BatchRegisterTargets") - reg
	t.Logf("%d TargetSets' endpoint changes on one load balancer: %d BatchRegisterTargets calls", n, calls)
	if calls > n/4 {
		t.Errorf("%d BatchRegisterTargets calls for %d TargetSets' changes, want at most %d", calls, n, n/4)
	}
}

// TestTargetSetServiceDataPlane sends traffic through the load balancer's
// VIP to a Service's Pod: the Pod has VPC address 10.250.0.7, and its
// server listens on 127.250.0.7, where the emulator's VPCLoopbackCIDR
// reaches that address. The cloud and the TargetSet show 10.250.0.7.
func TestTargetSetServiceDataPlane(t *testing.T) {
	const ip, served = "10.250.0.7", "127.250.0.7"
	srv := testenv.StartEcho(t, "echo-0", net.JoinHostPort(served, "0"))
	port := srv.Port()

	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 38080)
	newService(t, ns, "echo", "", 80, port)
	w := &workload{ns: ns, svc: "echo", targetPort: port}
	w.addPod(t, "echo-0", ip, "n1", 0, true)
	ts := serviceTargetSet(ns, "echo", lbID, lisID, v1alpha1.TargetSource{Services: []v1alpha1.ServiceBackend{{
		Name: "echo", Port: intstr.FromInt32(80), Backend: v1alpha1.BackendPodIP}}})
	createTS(t, ts)
	waitReady(t, ts)
	waitCloudTargets(t, lbID, lisID, map[string]int{fmt.Sprintf("%s:%d", ip, port): 10})
	// The health check probes the Pod at its mapped address too.
	waitHealth(t, ts, map[string]string{fmt.Sprintf("%s:%d", ip, port): "Healthy"})

	lb, _ := inventoryLB(lbID)
	eventually(t, "a round trip through "+lb.VIP+":38080", func() error {
		got, err := testenv.RoundTrip(net.JoinHostPort(lb.VIP, "38080"), "hello")
		if err != nil {
			return err
		}
		if got != srv.Name {
			return errors.Errorf("answered by %s, want %s", got, srv.Name)
		}
		return nil
	})
	deleteTS(t, ts, lbID, lisID)
}

// TestTargetSetServiceExample applies examples/clb/targetset-service.yaml,
// publishes two ready endpoints of its Service as the EndpointSlice
// controller would, and checks they become the listener's targets; then
// deletes it all without leaving anything in the cloud.
func TestTargetSetServiceExample(t *testing.T) {
	objs, names := applyExampleReady(t, "clb/targetset-service.yaml")
	lbID, lisID := names[0], names[1]
	waitCloudTargets(t, lbID, lisID, map[string]int{})
	w := &workload{ns: "examples", svc: "web", portName: "http", targetPort: 8080}
	w.addPod(t, "web-0", "10.9.9.1", "n1", 0, true)
	w.addPod(t, "web-1", "10.9.9.2", "n1", 0, true, "track", "canary")
	t.Cleanup(func() {
		for _, p := range []string{"web-0", "web-1"} {
			w.removePod(t, p)
		}
		_ = kube.Delete(context.Background(), w.slice())
	})
	waitCloudTargets(t, lbID, lisID, map[string]int{"10.9.9.1:8080": 10, "10.9.9.2:8080": 2})
	deleteExample(t, objs, names)
}
