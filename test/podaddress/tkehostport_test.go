package podaddress

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestTKEHostPortScheme: tke-extend's HostPort + segment guide
// (examples/tke-extend/hostport.yaml: a CLBPortPool of 1001-port segments,
// a Node annotated "7000 TCPUDP pool-test", a game server Pod with
// enable-clb-hostport-mapping and hostPort 7106) applied as it is, with
// only names, the load balancer, autoCreate and endPort changed: the Node gets a
// segment per protocol forwarding to its IP and port 7000 (its PodAddress
// tke-port-pools/node.<node>), its CLBNodeBinding and result in
// tke-extend's terms; the running Pod is told its hostPort's public port,
// 106 into the segment; a Pod that does not run is told nothing. The Node
// that stops asking gives its segment back: targets deregistered,
// PodAddress and CLBNodeBinding gone.
func TestTKEHostPortScheme(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	poolName, nodeName := "pool-test-"+ns, "worker-"+ns
	const nodeIP = "10.27.0.1"
	objs, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "tke-extend", "hostport.yaml"), func(u *unstructured.Unstructured) {
		switch u.GetKind() {
		case "CLBPortPool":
			u.SetName(poolName)
			_ = unstructured.SetNestedStringSlice(u.Object, []string{lbID(l)}, "spec", "exsistedLoadBalancerIDs")
			unstructured.RemoveNestedField(u.Object, "spec", "autoCreate")
			// Two segments, not the 25 the quota holds: fewer listeners to make.
			_ = unstructured.SetNestedField(u.Object, int64(32001), "spec", "endPort")
		case "Node":
			u.SetName(nodeName)
			a := u.GetAnnotations()
			a[podannotation.TKEAnnotationPortMapping] = "7000 TCPUDP " + poolName
			u.SetAnnotations(a)
		case "Pod":
			u.SetNamespace(ns)
			_ = unstructured.SetNestedField(u.Object, nodeName, "spec", "nodeName")
		}
	})
	if err != nil || len(objs) != 3 {
		t.Fatalf("apply the example: %d objects, %v", len(objs), err)
	}
	node := &corev1.Node{}
	t.Cleanup(func() {
		_ = kube.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
	})
	eventually(t, "the Node's address", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return err
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}}
		return kube.Status().Update(ctx, node)
	})
	gs := &corev1.Pod{}
	eventually(t, "the game server runs on the Node", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "simple-game-server"}, gs); err != nil {
			return err
		}
		gs.Status.Phase, gs.Status.HostIP, gs.Status.PodIP = corev1.PodRunning, nodeIP, "10.27.1.5"
		return kube.Status().Update(ctx, gs)
	})
	// Scheduled there too, not running (e.g. refused by the kubelet).
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-running", Annotations: gs.Annotations},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "gs", Image: "example/server",
			Ports: []corev1.ContainerPort{{ContainerPort: 7654, HostPort: 7107, Protocol: corev1.ProtocolUDP}}}}}}
	if err := kube.Create(ctx, pending); err != nil {
		t.Fatal(err)
	}

	// The Node's segment: one TCP_UDP binding, to the node's IP and 7000.
	key := podannotation.TKENodeAddressName(nodeName)
	pa := bound(t, key.Namespace, key.Name)
	if len(pa.Status.Bindings) != 1 {
		t.Fatalf("the Node's bindings %+v, want one", pa.Status.Bindings)
	}
	b := pa.Status.Bindings[0]
	if b.Protocol != v1alpha1.ProtocolTCPUDP || b.TargetIP != nodeIP || b.TargetPort != 7000 || b.EndPort != b.Port+1000 || (b.Port-30000)%1001 != 0 {
		t.Fatalf("the Node's binding %+v: want a 1001-port segment of TCP and UDP to %s:7000", b, nodeIP)
	}
	for _, proto := range []string{"TCP", "UDP"} {
		if got := cloudTargets(lbID(l), b.ListenerIDs[proto]); !slices.Equal(got, []string{nodeIP + ":7000"}) {
			t.Errorf("%s listener %s targets %v, want the node's %s:7000 alone", proto, b.ListenerIDs[proto], got, nodeIP)
		}
	}

	// tke-extend's CLBNodeBinding of the Node.
	cnb := &tkev1alpha1.CLBNodeBinding{}
	eventually(t, "CLBNodeBinding "+nodeName+" Bound", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: nodeName}, cnb); err != nil {
			return err
		}
		if cnb.Status.State != tkev1alpha1.BindingStateBound || len(cnb.Status.PortBindings) != 2 {
			return errors.Errorf("state %q, %d bindings", cnb.Status.State, len(cnb.Status.PortBindings))
		}
		return nil
	})
	if d := cnb.Spec.Ports; len(d) != 1 || d[0].Port != 7000 || d[0].Protocol != "TCPUDP" || !slices.Equal(d[0].Pools, []string{poolName}) {
		t.Errorf("CLBNodeBinding spec %+v, want 7000 TCPUDP %s", cnb.Spec, poolName)
	}
	for _, s := range cnb.Status.PortBindings {
		if s.Port != 7000 || s.Pool != poolName || s.LoadbalancerID != lbID(l) || s.LoadbalancerPort != b.Port ||
			s.LoadbalancerEndPort == nil || *s.LoadbalancerEndPort != b.EndPort || s.ListenerID != b.ListenerIDs[s.Protocol] {
			t.Errorf("CLBNodeBinding entry %+v, want port 7000 on %s %d-%d", s, lbID(l), b.Port, b.EndPort)
		}
	}

	// The Node's own result, as tke-extend writes it there.
	eventually(t, "the Node told", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return err
		}
		res, ok, err := podannotation.TKEResult(node.Annotations)
		if err != nil || !ok || len(res) != 2 || res[0].EndPort != 8000 {
			return errors.Errorf("result %+v (%v, %v)", res, ok, err)
		}
		return nil
	})

	// The game server: hostPort 7106 is public port first + 106, on both protocols.
	var told []podannotation.TKEHostPortMapping
	eventually(t, "the game server told its hostPort's address", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gs), gs); err != nil {
			return err
		}
		if gs.Annotations[podannotation.TKEAnnotationHostPortMappingStatus] != podannotation.StatusReady {
			return errors.Errorf("annotations %v", gs.Annotations)
		}
		return json.Unmarshal([]byte(gs.Annotations[podannotation.TKEAnnotationHostPortMappingResult]), &told)
	})
	want := []podannotation.TKEHostPortMapping{}
	for _, proto := range []string{"UDP", "TCP"} { // as the Pod declares them, as tke-extend lists them
		want = append(want, podannotation.TKEHostPortMapping{ContainerPort: 7654, HostPort: 7106, Protocol: proto, Pool: poolName,
			Region: b.Region, LoadbalancerID: lbID(l), LoadbalancerPort: b.Port + 106, ListenerID: b.ListenerIDs[proto],
			Address: fmt.Sprintf("%s:%d", b.VIPs[0], b.Port+106), IPs: b.VIPs})
	}
	if !equalJSON(want, told) {
		t.Errorf("the game server is told %+v\nwant %+v", told, want)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(pending), pending); err != nil {
		t.Fatal(err)
	}
	if _, ok := pending.Annotations[podannotation.TKEAnnotationHostPortMappingResult]; ok {
		t.Errorf("a Pod that does not run was told: %v", pending.Annotations)
	}

	// The Node stops asking: its segment goes back.
	eventually(t, "remove the Node's annotations", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return err
		}
		delete(node.Annotations, podannotation.TKEAnnotationEnableMapping)
		delete(node.Annotations, podannotation.TKEAnnotationPortMapping)
		return kube.Update(ctx, node)
	})
	eventually(t, "the Node's PodAddress and CLBNodeBinding gone, targets deregistered", func() error {
		if err := kube.Get(ctx, key, &v1alpha1.PodAddress{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("PodAddress: %v", err)
		}
		if err := kube.Get(ctx, types.NamespacedName{Name: nodeName}, &tkev1alpha1.CLBNodeBinding{}); !kerrors.IsNotFound(err) {
			return errors.Errorf("CLBNodeBinding: %v", err)
		}
		for _, proto := range []string{"TCP", "UDP"} {
			if got := cloudTargets(lbID(l), b.ListenerIDs[proto]); len(got) != 0 {
				return errors.Errorf("%s targets %v", proto, got)
			}
		}
		return nil
	})
	// The pool is left to the suite's cleanup of the namespace's load
	// balancer; the CLBPortPool goes now.
	if err := kube.Delete(ctx, &tkev1alpha1.CLBPortPool{ObjectMeta: metav1.ObjectMeta{Name: poolName}}); client.IgnoreNotFound(err) != nil {
		t.Error(err)
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
