package podaddress

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const (
	tkeNodeName = "worker-1"
	tkeNodeIP   = "10.1.0.7"
)

var nodeKey = podannotation.TKENodeAddressName(tkeNodeName)

// tkeNodePool is portPool as the PortPool web of tke-port-pools, the pool a
// Node's line "80 TCP web" names.
func tkeNodePool() *clbv1alpha1.PortPool {
	pp := portPool()
	pp.Namespace = podannotation.TKEPoolNamespace
	return pp
}

// tkeNode is Node worker-1 at tkeNodeIP with annotations.
func tkeNode(annotations map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tkeNodeName, UID: "uid-node", Annotations: annotations,
		CreationTimestamp: metav1.NewTime(now.Add(-24 * time.Hour))}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: tkeNodeName}, {Type: corev1.NodeInternalIP, Address: tkeNodeIP}}
	return n
}

func nodeAsks(lines string) map[string]string {
	return map[string]string{podannotation.TKEAnnotationEnableMapping: "true", podannotation.TKEAnnotationPortMapping: lines,
		"other.example/keep": "x", podannotation.AnnotationPorts: "81 web"}
}

func TestStandIn(t *testing.T) {
	n := tkeNode(nodeAsks("80 TCP web"))
	n.Status.Addresses = append([]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "fd00::7"}}, n.Status.Addresses...)
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.7"})
	p := standIn(n)
	if p.Namespace != nodeKey.Namespace || p.Name != nodeKey.Name || p.UID != n.UID || p.Spec.NodeName != tkeNodeName {
		t.Errorf("stand-in %s/%s uid %s on %q: want %v of the Node", p.Namespace, p.Name, p.UID, p.Spec.NodeName, nodeKey)
	}
	// Only the mapping annotations: our ports annotation on a Node asks for nothing.
	want := map[string]string{podannotation.TKEAnnotationEnableMapping: "true", podannotation.TKEAnnotationPortMapping: "80 TCP web"}
	if diff := cmp.Diff(want, p.Annotations); diff != "" {
		t.Errorf("annotations -want +got:\n%s", diff)
	}
	// InternalIPs only, IPv4 first.
	if p.Status.PodIP != tkeNodeIP || p.Status.HostIP != tkeNodeIP || len(p.Status.PodIPs) != 2 || p.Status.PodIPs[1].IP != "fd00::7" || p.Status.Phase != corev1.PodRunning {
		t.Errorf("stand-in status %+v: want the node's InternalIPs, IPv4 first, running", p.Status)
	}
}

// TestReconcileNode: a Node annotated as tke-extend's HostPort scheme
// gets a slot of the pool forwarded to its IP and the line's port,
// recorded in its PodAddress and told on the Node; a Pod of the reserved
// name is not served; the Node that stops asking gives it back.
func TestReconcileNode(t *testing.T) {
	ctx := context.Background()
	impostor := pod(podIP) // a Pod of the Node's reserved name, asking for port 81
	impostor.Namespace, impostor.Name = nodeKey.Namespace, nodeKey.Name
	impostor.Annotations = map[string]string{podannotation.AnnotationPorts: "81 web"}
	w := newWorld(t, nil, tkeNodePool(), tkeNode(nodeAsks("80 TCP web")), impostor)
	if _, err := w.reconcileKey(t, nodeKey); err != nil {
		t.Fatal(err)
	}
	pa := &v1alpha1.PodAddress{}
	if err := w.kube.Get(ctx, nodeKey, pa); err != nil {
		t.Fatal(err)
	}
	if pa.Status.State != v1alpha1.StateBound || len(pa.Status.Bindings) != 1 {
		t.Fatalf("the Node's PodAddress: %s %q, %d bindings; want Bound with one", pa.Status.State, pa.Status.Message, len(pa.Status.Bindings))
	}
	b := pa.Status.Bindings[0]
	if b.TargetIP != tkeNodeIP || b.TargetPort != 80 || b.ContainerPort != 80 || pa.Spec.PodUID != "uid-node" {
		t.Errorf("binding %+v of %s: want the node's %s:80", b, pa.Spec.PodUID, tkeNodeIP)
	}
	if got := w.bound(t); len(got) != 1 || !strings.HasSuffix(got[0], " "+tkeNodeIP+":80") {
		t.Errorf("targets %v: want the node's IP and port 80 only (not the impostor Pod's %s)", got, podIP)
	}
	n := &corev1.Node{}
	if err := w.kube.Get(ctx, client.ObjectKey{Name: tkeNodeName}, n); err != nil {
		t.Fatal(err)
	}
	res, ok, err := podannotation.TKEResult(n.Annotations)
	if err != nil || !ok || len(res) != 1 || res[0].Port != 80 || res[0].LoadbalancerPort != b.Port || res[0].Address != vip+":"+strconv.Itoa(int(b.Port)) {
		t.Errorf("the Node is told %v (%v, %v): want its binding in clb-port-mapping-result, status Ready", res, ok, err)
	}
	if n.Annotations["other.example/keep"] != "x" {
		t.Errorf("the Node's other annotations changed: %v", n.Annotations)
	}
	imp := &corev1.Pod{}
	if err := w.kube.Get(ctx, nodeKey, imp); err != nil {
		t.Fatal(err)
	}
	if _, told := imp.Annotations[podannotation.AnnotationStatus]; told {
		t.Errorf("the Pod of the Node's reserved name was told: %v", imp.Annotations)
	}

	// Stops asking: targets off, slot back, PodAddress gone.
	delete(n.Annotations, podannotation.TKEAnnotationEnableMapping)
	if err := w.kube.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.reconcileKey(t, nodeKey); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.kube.Get(ctx, nodeKey, pa); err == nil {
		t.Errorf("the PodAddress of a Node that stopped asking is still there: %s", pa.Status.State)
	}
	if got := w.bound(t); len(got) != 0 {
		t.Errorf("targets left: %v", got)
	}
}

// TestReconcileNodeInvalid: a Node's bad line is a Warning on the Node,
// and nothing is held.
func TestReconcileNodeInvalid(t *testing.T) {
	w := newWorld(t, nil, tkeNodePool(), tkeNode(nodeAsks("eighty TCP web")))
	if _, err := w.reconcileKey(t, nodeKey); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(w.events.take(), "Warning InvalidAddressRequest *v1.Node/"+tkeNodeName) {
		t.Error("no InvalidAddressRequest Warning on the Node")
	}
	if err := w.kube.Get(context.Background(), nodeKey, &v1alpha1.PodAddress{}); err == nil {
		t.Error("a PodAddress was made for an invalid Node")
	}
}

// TestReconcileNodeDeleted: a deleted Node's slot goes back as a deleted
// Pod's does: target deregistered, PodAddress gone.
func TestReconcileNodeDeleted(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil, tkeNodePool(), tkeNode(nodeAsks("80 TCP web")))
	if _, err := w.reconcileKey(t, nodeKey); err != nil {
		t.Fatal(err)
	}
	if got := w.bound(t); len(got) != 1 {
		t.Fatalf("setup: targets %v, want the node's", got)
	}
	if err := w.kube.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tkeNodeName}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.reconcileKey(t, nodeKey); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.kube.Get(ctx, nodeKey, &v1alpha1.PodAddress{}); err == nil {
		t.Error("the PodAddress of a deleted Node is still there")
	}
	if got := w.bound(t); len(got) != 0 {
		t.Errorf("targets left: %v", got)
	}
}

// TestKeepTKENodeAddress: a Node tke-extend bound (its result on the Node)
// keeps its slot and listener as a Pod does, the claim checked against
// what the pool found: the listener's only target must be the Node's
// InternalIP and the line's port. Kept: recorded in the Node's
// PodAddress, no registration, the Node's result unchanged. A listener
// that forwards elsewhere: a new port and a Warning on the Node. In a dry
// run nothing is written, and the Event is the Node's.
func TestKeepTKENodeAddress(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reason   string
		target   string // the only target the pool found on lbl-100
		pool     map[string]string
		port     int32
		register bool
		event    string
		dryRun   bool
	}{
		"Kept": {
			reason: "The Node's result names tke-extend's listener whose only target is the Node's IP and port.",
			target: tkeNodeIP + ":80", port: 100, event: "Normal TKEExtendAddressKept *v1.Node/" + tkeNodeName,
		},
		"OtherTarget": {
			reason: "The listener the result names forwards to another node: refused, a new port.",
			target: "10.1.0.8:80", port: 101, register: true, event: "Warning TKEExtendAddressNotKept *v1.Node/" + tkeNodeName,
		},
		"OtherPort": {
			reason: "The listener forwards to the Node's IP on another port than the line's: refused.",
			target: tkeNodeIP + ":81", port: 101, register: true, event: "Warning TKEExtendAddressNotKept *v1.Node/" + tkeNodeName,
		},
		"DryRun": {
			reason: "In a dry run the Node is told what would be kept and nothing is written.",
			target: tkeNodeIP + ":80", pool: map[string]string{clbv1alpha1.AnnotationTKESwitch: clbv1alpha1.TKESwitchDryRun},
			event: "Normal TKEExtendSwitchDryRun *v1.Node/" + tkeNodeName, dryRun: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pp := tkeSwitchPool(tc.pool)
			lb := &pp.Status.AtProvider.LoadBalancers[0]
			for _, l := range [][]clbv1alpha1.TKEListener{lb.Inherited, lb.TKEListeners} {
				for i := range l {
					l[i].Targets = []string{tc.target}
				}
			}
			a := nodeAsks("80 TCP pool-a")
			bound := tkeBoundPod(t, "")
			for i := 0; i+1 < len(bound); i += 2 {
				a[bound[i]] = bound[i+1]
			}
			w := newWorld(t, nil, pp, tkeNode(a))
			before := &corev1.Node{}
			if err := w.kube.Get(ctx, client.ObjectKey{Name: tkeNodeName}, before); err != nil {
				t.Fatal(err)
			}
			if _, err := w.reconcileKey(t, nodeKey); err != nil {
				t.Fatal(err)
			}
			if events := strings.Join(w.events.take(), "; "); !strings.Contains(events, tc.event) {
				t.Errorf("%s\nevents %q, want %s", tc.reason, events, tc.event)
			}
			n := &corev1.Node{}
			if err := w.kube.Get(ctx, client.ObjectKey{Name: tkeNodeName}, n); err != nil {
				t.Fatal(err)
			}
			pa := &v1alpha1.PodAddress{}
			perr := w.kube.Get(ctx, nodeKey, pa)
			if tc.dryRun {
				if perr == nil || len(w.cloud.Log()) > 0 || n.ResourceVersion != before.ResourceVersion {
					t.Errorf("%s\nthe dry run wrote a PodAddress %v, to the cloud %v, or the Node %v", tc.reason, perr == nil, w.cloud.Log(), n.ResourceVersion != before.ResourceVersion)
				}
				return
			}
			if perr != nil || pa.Status.State != v1alpha1.StateBound || len(pa.Status.Bindings) != 1 {
				t.Fatalf("%s\nthe Node's PodAddress (%v): %s, %d bindings; want Bound with one", tc.reason, perr, pa.Status.State, len(pa.Status.Bindings))
			}
			b := pa.Status.Bindings[0]
			if b.LoadBalancerID != lb1 || b.Port != tc.port || b.ListenerIDs["TCP"] != listenerOf(tc.port) || b.TargetIP != tkeNodeIP || b.TargetPort != 80 {
				t.Errorf("%s\nbinding %+v, want %s:%d on %s to %s:80", tc.reason, b, lb1, tc.port, listenerOf(tc.port), tkeNodeIP)
			}
			registered := slices.ContainsFunc(w.cloud.Log(), func(s string) bool { return strings.Contains(s, "Register") })
			if registered != tc.register {
				t.Errorf("%s\ncloud writes %v, want a registration: %v", tc.reason, w.cloud.Log(), tc.register)
			}
			got, want := n.Annotations[podannotation.TKEAnnotationMappingResult], before.Annotations[podannotation.TKEAnnotationMappingResult]
			if kept := got == want; kept == tc.register {
				t.Errorf("%s\nthe Node's result\n%s\nwas\n%s", tc.reason, got, want)
			}
		})
	}
}
