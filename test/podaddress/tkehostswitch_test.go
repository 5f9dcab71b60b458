package podaddress

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/tkestandin"
)

// TestSwitchNodeFromTKEExtend: tke-extend's HostPort scheme
// (examples/tke-extend/hostport.yaml, its CLBPortPool marked for a dry
// run) as tke-extend leaves it: the stand-in gave the Node the segment
// 30000-31000 per protocol (TKE-LISTENER, the node's IP and 7000
// registered, the result on the Node) and told the running game server
// its hostPort 7106's public port 30106. The dry run writes nothing to
// the cloud, the Node, the Pod or PodAddresses, and tells the Node (an
// Event on it) that the segment would be kept. The switch keeps it: the
// Node's PodAddress records tke-extend's listeners and target with no
// registration, no deregistration and no listener deleted, each listener
// forwarding to the node alone at every look; the Node's result and the
// game server's are unchanged, and the game server's is what the
// provider tells from the Node's bindings; a game server started after
// the switch is told its hostPort on the kept segment. Through it all a
// player sends a UDP packet every 10 ms through the segment's public port
// 30106 (the emulator's data plane, on loopback) to the game server on
// the node's loopback IP and hostPort 7106: every packet is answered, by
// that server.
func TestSwitchNodeFromTKEExtend(t *testing.T) {
	ctx := context.Background()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	poolName, nodeName := "hostswitch-"+ns, "worker-"+ns
	const nodeIP = "127.32.0.1" // loopback: the game server answers there, behind the emulator's data plane
	lbID := emulatortest.ExistingLB(t, cloud, emulator.DefaultRegion, "hostswitch-"+ns, wait)
	s := newTKEStandIn(t, lbID)
	objs, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "tke-extend", "hostport.yaml"), func(u *unstructured.Unstructured) {
		switch u.GetKind() {
		case "CLBPortPool":
			u.SetName(poolName)
			u.SetAnnotations(map[string]string{clbv1alpha1.AnnotationTKESwitch: clbv1alpha1.TKESwitchDryRun})
			_ = unstructured.SetNestedStringSlice(u.Object, []string{lbID}, "spec", "exsistedLoadBalancerIDs")
			unstructured.RemoveNestedField(u.Object, "spec", "autoCreate")
			_ = unstructured.SetNestedField(u.Object, int64(32001), "spec", "endPort") // two segments
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
	cpp := &tkev1alpha1.CLBPortPool{ObjectMeta: metav1.ObjectMeta{Name: poolName}}
	node := &corev1.Node{}
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
		gs.Status.Phase, gs.Status.HostIP, gs.Status.PodIP = corev1.PodRunning, nodeIP, "10.28.1.5"
		return kube.Status().Update(ctx, gs)
	})

	// tke-extend at work: the Node's segment, then the game server told.
	result, err := s.BindNode(ctx, node, poolName, 7000, 30000, 31000)
	if err != nil {
		t.Fatal(err)
	}
	told, err := s.TellHostPorts(ctx, gs, result)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(told, `"loadbalancerPort":30106`) {
		t.Fatalf("the stand-in told the game server %s, want hostPort 7106 at 30106", told)
	}
	nodeBefore, gsBefore := &corev1.Node{}, &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nodeName}, nodeBefore); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gs), gsBefore); err != nil {
		t.Fatal(err)
	}

	// A player plays through the Node's segment (public 30106 to the
	// node's hostPort 7106) from before the provider starts until the
	// switch is done.
	udpEcho(t, gs.Name, nodeIP+":7106")
	carryTraffic(t, s.VIP())
	player := startStream(t, gs.Name, s.VIP()+":30106")
	cloud.ResetCounters()
	startProvider(t)
	clearAtEnd(t, ns) // before the provider stops
	t.Cleanup(func() {
		_ = kube.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
		_ = kube.Delete(context.Background(), cpp)
	})

	// The dry run.
	key := podannotation.TKENodeAddressName(nodeName)
	nodeEventSaying(t, nodeName, "TKEExtendSwitchDryRun",
		fmt.Sprintf("would keep: 7000/TCP_UDP in tke-port-pools/%s keeps port 30000 on %s", poolName, lbID))
	pp := &clbv1alpha1.PortPool{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: podannotation.TKEPoolNamespace, Name: poolName}, pp); err != nil {
		t.Fatal(err)
	}
	if st := pp.Status.AtProvider.LoadBalancers; len(st) != 1 || len(st[0].TKEListeners) != 2 || len(st[0].Adopted) != 0 {
		t.Errorf("the dry run's pool status %+v, want tke-extend's two listeners listed, none taken over", st)
	}
	for _, a := range tkestandin.SwitchWrites() {
		if n := cloud.CallCount(a); n > 0 {
			t.Errorf("the dry run called %s %d times", a, n)
		}
	}
	if err := kube.Get(ctx, key, &v1alpha1.PodAddress{}); !kerrors.IsNotFound(err) {
		t.Errorf("the dry run made the Node's PodAddress (%v)", err)
	}
	nodeNow, gsNow := &corev1.Node{}, &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nodeName}, nodeNow); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gs), gsNow); err != nil {
		t.Fatal(err)
	}
	if nodeNow.ResourceVersion != nodeBefore.ResourceVersion || gsNow.ResourceVersion != gsBefore.ResourceVersion {
		t.Errorf("the dry run wrote the Node (%v) or the game server (%v)", nodeNow.Annotations, gsNow.Annotations)
	}
	// The Node asks and its pool is in a dry run: its hostport Pods wait,
	// with no Warning that the Node has no listeners.
	evs := &corev1.EventList{}
	if err := kube.List(ctx, evs, client.InNamespace(gs.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == gs.Name && e.Type == corev1.EventTypeWarning {
			t.Errorf("in the dry run the game server got the Warning %s: %s", e.Reason, e.Message)
		}
	}

	// Each of the Node's listeners keeps the node alone at every moment.
	stop := make(chan struct{})
	var lost []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for _, e := range result {
				if got := cloudTargets(lbID, e.ListenerID); len(got) != 1 || got[0] != nodeIP+":7000" {
					lost = append(lost, fmt.Sprintf("%s: %v", e.Protocol, got))
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	// The switch.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(cpp), cpp); err != nil {
		t.Fatal(err)
	}
	delete(cpp.Annotations, clbv1alpha1.AnnotationTKESwitch)
	if err := kube.Update(ctx, cpp); err != nil {
		t.Fatal(err)
	}
	pa := bound(t, key.Namespace, key.Name)
	if len(pa.Status.Bindings) != 1 {
		t.Fatalf("the Node's bindings %+v, want one", pa.Status.Bindings)
	}
	b := pa.Status.Bindings[0]
	if b.LoadBalancerID != lbID || b.Port != 30000 || b.EndPort != 31000 || b.TargetIP != nodeIP || b.TargetPort != 7000 ||
		b.ListenerIDs["TCP"] != result[0].ListenerID || b.ListenerIDs["UDP"] != result[1].ListenerID {
		t.Errorf("the Node's binding %+v, want tke-extend's segment 30000-31000 on %s (listeners %s, %s) to %s:7000",
			b, lbID, result[0].ListenerID, result[1].ListenerID, nodeIP)
	}
	// What the provider tells the game server from the kept segment is
	// what tke-extend told it.
	if got := podannotation.TKENodeHostPortAnnotations(podannotation.TKENodeHostPortResult(gs, pa.Status.Bindings)); got[podannotation.TKEAnnotationHostPortMappingResult] != told {
		t.Errorf("the game server would be told\n%s\ntke-extend told it\n%s", got[podannotation.TKEAnnotationHostPortMappingResult], told)
	}
	// A game server started after the switch, told on the kept segment:
	// the hostport controller has seen the Node's PodAddress Bound.
	late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late", Annotations: map[string]string{podannotation.TKEAnnotationEnableHostPortMapping: "true"}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "gs", Image: "example/server",
			Ports: []corev1.ContainerPort{{ContainerPort: 7654, HostPort: 7107, Protocol: corev1.ProtocolUDP}}}}}}
	if err := kube.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the late game server runs", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(late), late); err != nil {
			return err
		}
		late.Status.Phase, late.Status.HostIP, late.Status.PodIP = corev1.PodRunning, nodeIP, "10.28.1.6"
		return kube.Status().Update(ctx, late)
	})
	podAnnotation(t, late, podannotation.TKEAnnotationHostPortMappingResult, fmt.Sprintf(`[{"containerPort":7654,"hostPort":7107,"protocol":"UDP","pool":%q,"region":%q,"loadbalancerId":%q,"loadbalancerPort":30107,"listenerId":%q,"address":"%s:30107","ips":[%q]}]`,
		poolName, result[1].Region, lbID, result[1].ListenerID, s.VIP(), s.VIP()))
	eventually(t, "the pool takes the Node's listeners over, none left inherited", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		st := pp.Status.AtProvider.LoadBalancers
		if len(st) != 1 || st[0].Adopted["TCP/30000"] != result[0].ListenerID || st[0].Adopted["UDP/30000"] != result[1].ListenerID ||
			len(st[0].TKEListeners) != 0 || len(st[0].Inherited) != 0 {
			return errors.Errorf("load balancers %+v", st)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	sent, answered, wrong := player.Finish()
	t.Logf("%s: %d packets sent, %d answered, %d answered by another server", player, sent, answered, wrong)
	if answered != sent || wrong > 0 || sent < 100 {
		t.Errorf("%s: %d of %d packets lost, %d answered by another server", player, sent-answered, sent, wrong)
	}
	if len(lost) > 0 {
		t.Errorf("%d moments with a listener of the Node not forwarding to it alone, e.g. %s", len(lost), strings.Join(lost[:min(3, len(lost))], "; "))
	}
	for _, a := range append(tkestandin.Removals(), "RegisterTargets", "BatchRegisterTargets") {
		if n := cloud.CallCount(a); n > 0 {
			t.Errorf("the switch called %s %d times", a, n)
		}
	}
	eventually(t, "the provider tells the Node", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: nodeName}, nodeNow); err != nil {
			return err
		}
		if _, ok := nodeNow.Annotations[podannotation.AnnotationStatus]; !ok {
			return errors.Errorf("annotations %v", nodeNow.Annotations)
		}
		return nil
	})
	if nodeNow.Annotations[podannotation.TKEAnnotationMappingResult] != nodeBefore.Annotations[podannotation.TKEAnnotationMappingResult] ||
		nodeNow.Annotations[podannotation.TKEAnnotationMappingStatus] != podannotation.StatusReady {
		t.Errorf("the Node's result is now\n%s\ntke-extend wrote\n%s", nodeNow.Annotations[podannotation.TKEAnnotationMappingResult], nodeBefore.Annotations[podannotation.TKEAnnotationMappingResult])
	}
	podAnnotation(t, gs, podannotation.TKEAnnotationHostPortMappingResult, told)
	noTKEListenerUnowned(t, pp, lbID)
}

// nodeEventSaying waits for an Event of reason on Node nodeName whose
// message contains text.
func nodeEventSaying(t *testing.T, nodeName, reason, text string) {
	t.Helper()
	eventually(t, "a "+reason+" event on Node "+nodeName, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l); err != nil {
			return err
		}
		var seen []string
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == nodeName && e.Reason == reason {
				if strings.Contains(e.Message, text) {
					return nil
				}
				seen = append(seen, e.Message)
			}
		}
		return errors.Errorf("none among %q", seen)
	})
}
