package podaddress

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// The tests of this file play the agent of a workload cluster: they write
// RemotePod specs as it would, and read back the statuses it would apply
// to its Pods. No Pod of these names exists in the (management) cluster.

// remotePod creates the RemotePod of Pod podName of namespace "game" in a
// workload cluster, with one container port 7777 unless mod changes it.
func remotePod(t testing.TB, ns, podName, ip string, annotations map[string]string, mod ...func(*v1alpha1.RemotePod)) *v1alpha1.RemotePod {
	t.Helper()
	rp := &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "game." + podName}}
	rp.Spec = v1alpha1.RemotePodSpec{
		Cluster: "idc-1", PodNamespace: "game", PodName: podName, PodUID: string(uuid.NewUUID()),
		Labels:      map[string]string{"app": "battle"},
		Annotations: annotations,
		Containers:  []v1alpha1.RemoteContainer{{Name: "server", Ports: []corev1.ContainerPort{{Name: "game", ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}}},
		Node:        &v1alpha1.RemoteNode{Name: "idc-node-1", InternalIP: "10.200.0.1", InstanceID: "ins-idc00001"},
		PodIP:       ip,
		Ready:       ip != "",
	}
	if ip != "" {
		rp.Spec.PodIPs = []string{ip}
	}
	for _, m := range mod {
		m(rp)
	}
	workloadCluster(t, ns)
	if err := kube.Create(context.Background(), rp); err != nil {
		t.Fatal(err)
	}
	return rp
}

// workloadCluster creates, once per namespace, the WorkloadCluster idc-1
// whose bounds hold the addresses these tests' RemotePods use.
func workloadCluster(t testing.TB, ns string) {
	t.Helper()
	wc := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idc-1"},
		Spec: v1alpha1.WorkloadClusterSpec{PodCIDRs: []string{"10.0.0.0/8", "127.0.0.0/8"}, NodeCIDRs: []string{"10.200.0.0/16"}}}
	if err := kube.Create(context.Background(), wc); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// updateRemote changes a RemotePod's spec as the agent would.
func updateRemote(t testing.TB, rp *v1alpha1.RemotePod, mod func(*v1alpha1.RemotePod)) {
	t.Helper()
	eventually(t, "update RemotePod "+rp.Name, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(rp), rp); err != nil {
			return err
		}
		mod(rp)
		return kube.Update(context.Background(), rp)
	})
}

// remoteTold waits until the RemotePod's status satisfies ok and returns it.
func remoteTold(t testing.TB, rp *v1alpha1.RemotePod, what string, ok func(v1alpha1.RemotePodStatus) error) v1alpha1.RemotePodStatus {
	t.Helper()
	got := &v1alpha1.RemotePod{}
	eventually(t, rp.Name+" told "+what, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(rp), got); err != nil {
			return err
		}
		if err := ok(got.Status); err != nil {
			return errors.Wrapf(err, "status %+v", got.Status)
		}
		return nil
	})
	return got.Status
}

func remoteCond(st v1alpha1.RemotePodStatus) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == condition {
			return &st.Conditions[i]
		}
	}
	return nil
}

// noPodEvents fails if any Event of ns is about a Pod: no Pod exists here.
func noPodEvents(t *testing.T, ns string) {
	t.Helper()
	l := &corev1.EventList{}
	if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == "Pod" {
			t.Errorf("an Event about a Pod that does not exist here: %s %s %q on %s", e.Type, e.Reason, e.Message, e.InvolvedObject.Name)
		}
	}
}

func gone(t testing.TB, obj client.Object) {
	t.Helper()
	eventually(t, obj.GetName()+" gone", func() error {
		err := kube.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})
}

// TestRemotePodBound runs the provider with the RBAC it is installed with
// and gives a Pod of another cluster, asking by our annotation with a
// readiness gate, a pool port: its PodAddress (named like the RemotePod)
// is Bound, the emulator has the Pod IP as the target, and the RemotePod's
// status carries the annotations and the condition the Pod is to get.
// Once the agent says the Pod is deleting, the target and the PodAddress
// go. No Event is written about the Pod.
func TestRemotePodBound(t *testing.T) {
	sa, err := env.AsProvider(context.Background(), testenv.FeaturePodAddresses, testenv.FeatureNATClusters)
	if err != nil {
		t.Fatal(err)
	}
	startProvider(t, suite.As(sa), suite.PodAddress(podaddress.Options{PodEvents: podaddress.PodEventsAll}))
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 45000, 45004)

	rp := remotePod(t, ns, "gs-0", "10.45.0.1", map[string]string{ourPorts: "7777 pool"}, func(rp *v1alpha1.RemotePod) {
		rp.Spec.ReadinessGates = []string{string(condition)}
	})
	pa := bound(t, ns, rp.Name)
	if pa.Spec.PodUID != rp.Spec.PodUID {
		t.Errorf("PodAddress podUID %q, want the remote Pod's %q", pa.Spec.PodUID, rp.Spec.PodUID)
	}
	b := pa.Status.Bindings[0]
	if got := cloudTargets(lbID(l), b.ListenerIDs["TCP"]); !slices.Equal(got, []string{"10.45.0.1:7777"}) {
		t.Errorf("targets %v, want the remote Pod IP 10.45.0.1:7777", got)
	}
	remoteTold(t, rp, "its address", func(st v1alpha1.RemotePodStatus) error {
		if !strings.Contains(st.Annotations[ourResult], fmt.Sprintf(":%d", b.Port)) || st.Annotations[ourStatus] == "" {
			return errors.Errorf("annotations %v, want the address with port %d", st.Annotations, b.Port)
		}
		if c := remoteCond(st); c == nil || c.Status != corev1.ConditionTrue {
			return errors.Errorf("condition %+v, want True", c)
		}
		return nil
	})
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: rp.Name}, &corev1.Pod{}); !kerrors.IsNotFound(err) {
		t.Fatalf("a Pod %s exists in the management cluster (%v)", rp.Name, err)
	}

	updateRemote(t, rp, func(rp *v1alpha1.RemotePod) { rp.Spec.Deleting = true })
	gone(t, pa)
	if got := cloudTargets(lbID(l), b.ListenerIDs["TCP"]); len(got) != 0 {
		t.Errorf("targets %v after the remote Pod was deleted, want none", got)
	}
	noPodEvents(t, ns)
}

// TestRemotePodDataPlane carries a TCP round trip from the load balancer's
// VIP:port to a process playing the remote Pod on its (loopback) Pod IP.
func TestRemotePodDataPlane(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	plane := dataplane.New(t.Logf)
	t.Cleanup(func() { _ = plane.Close() })
	_, ref := ownCloud(t, ns, func(c *emulator.Config) {
		c.DataPlane = dataplane.ForEmulator(plane)
		c.VIPBase = "127.61.0.1"
	})
	lbsOn(t, ns, 1, ref)
	pool(t, ns, "pool", []string{"lb-0"}, 46000, 46004, func(pp *clbv1alpha1.PortPool) { pp.Spec.ProviderConfigReference = ref })

	const podIP = "127.62.0.5"
	srv := testenv.StartEcho(t, "dp-0", podIP+":0")
	port := srv.Port()

	rp := remotePod(t, ns, "dp-0", podIP, map[string]string{ourPorts: fmt.Sprintf("%d pool", port)}, func(rp *v1alpha1.RemotePod) {
		rp.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, Protocol: corev1.ProtocolTCP}}
	})
	b := bound(t, ns, rp.Name).Status.Bindings[0]
	addr := net.JoinHostPort(b.VIPs[0], strconv.Itoa(int(b.Port)))
	eventually(t, "a round trip through "+addr, func() error {
		got, err := testenv.RoundTrip(addr, "ping")
		if err != nil {
			return err
		}
		if got != srv.Name {
			return errors.Errorf("answered by %s, want %s", got, srv.Name)
		}
		return nil
	})
}

// TestRemotePodPolicy: a policy in the cluster's namespace selects
// RemotePods by their Pods' labels, as it selects Pods, and counts them.
func TestRemotePodPolicy(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 47000, 47004)
	pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rooms"}}
	pol.Spec.Selector.MatchLabels = map[string]string{"app": "room"}
	pol.Spec.Ports = []v1alpha1.PortRequest{{Port: intstr.FromInt32(7777), Pools: []v1alpha1.PoolRef{{Name: "pool"}}}}
	if err := kube.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	room := func(rp *v1alpha1.RemotePod) { rp.Spec.Labels = map[string]string{"app": "room"} }
	a := remotePod(t, ns, "room-a", "10.47.0.1", nil, room)
	remotePod(t, ns, "room-b", "10.47.0.2", nil, room)
	other := remotePod(t, ns, "lobby", "10.47.0.3", nil)

	for _, n := range []string{"game.room-a", "game.room-b"} {
		pa := bound(t, ns, n)
		if pa.Spec.Source != v1alpha1.PolicySource("rooms") {
			t.Errorf("%s: source %q, want the policy", n, pa.Spec.Source)
		}
	}
	policyStatus(t, pol, 2, 2, corev1.ConditionTrue)
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(other), &v1alpha1.PodAddress{}); !kerrors.IsNotFound(err) {
		t.Errorf("a PodAddress for the unselected RemotePod (%v)", err)
	}

	// The agent says room-a's Pod lost the label: the policy lets it go.
	pa := bound(t, ns, a.Name)
	updateRemote(t, a, func(rp *v1alpha1.RemotePod) { rp.Spec.Labels = map[string]string{"app": "idle"} })
	gone(t, pa)
	if got := cloudTargets(lbID(l), pa.Status.Bindings[0].ListenerIDs["TCP"]); len(got) != 0 {
		t.Errorf("targets %v, want none", got)
	}
	policyStatus(t, pol, 1, 1, corev1.ConditionTrue)
}

// TestRemotePodNodeBackends: backends that forward to the node take it
// from the RemotePod's spec.node: HostPort its internal IP, NodePort its
// CVM instance (there is no Node object of a workload cluster here).
func TestRemotePodNodeBackends(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 49000, 49009)

	hp := remotePod(t, ns, "hp", "10.49.0.1", map[string]string{bcsEnabled: "true", bcsPorts: "pool TCP 7777/hostport"}, func(rp *v1alpha1.RemotePod) {
		rp.Spec.Containers[0].Ports[0].HostPort = 17777
	})
	b := bound(t, ns, hp.Name).Status.Bindings[0]
	if got := cloudTargets(lbID(l), b.ListenerIDs["TCP"]); !slices.Equal(got, []string{"10.200.0.1:17777"}) {
		t.Errorf("HostPort targets %v, want the remote node's IP and hostPort 10.200.0.1:17777", got)
	}

	nodePort := int32(30779)
	pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np"}}
	pol.Spec.Selector.MatchLabels = map[string]string{"app": "np"}
	pol.Spec.Backend = v1alpha1.BackendNodePort
	pol.Spec.Ports = []v1alpha1.PortRequest{{Port: intstr.FromInt32(7777), Pools: []v1alpha1.PoolRef{{Name: "pool"}}, NodePort: &nodePort}}
	if err := kube.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	np := remotePod(t, ns, "np", "10.49.0.2", nil, func(rp *v1alpha1.RemotePod) { rp.Spec.Labels = map[string]string{"app": "np"} })
	b = bound(t, ns, np.Name).Status.Bindings[0]
	li, _ := listener(lbID(l), b.ListenerIDs["TCP"])
	if len(li.Targets) != 1 || li.Targets[0].InstanceID != "ins-idc00001" || li.Targets[0].Port != int(nodePort) {
		t.Errorf("NodePort targets %+v, want the remote node's instance ins-idc00001 on port %d", li.Targets, nodePort)
	}
}

// TestRemotePodStatusWrites: a RemotePod's status is written once per
// change of what its Pod is told (once each, for Bound, for Pods that
// have their IP from the start), from the provider's cache (no list of
// RemotePods), and not again for an agent update that changes nothing
// the Pod is told.
func TestRemotePodStatusWrites(t *testing.T) {
	const n = 10
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 52000, 52000+n-1)
	gated := func(rp *v1alpha1.RemotePod) { rp.Spec.ReadinessGates = []string{string(condition)} }
	statusWrites := testenv.APIRequest{Verb: "PATCH", Resource: "remotepods", Subresource: "status"}

	before := scrape(t)
	rps := make([]*v1alpha1.RemotePod, n)
	for i := range rps {
		rps[i] = remotePod(t, ns, fmt.Sprintf("gs-%02d", i), fmt.Sprintf("10.52.0.%d", i+1), map[string]string{ourPorts: "7777 pool"}, gated)
	}
	for _, rp := range rps {
		bound(t, ns, rp.Name)
		remoteTold(t, rp, "Bound", func(st v1alpha1.RemotePodStatus) error {
			if c := remoteCond(st); c == nil || c.Status != corev1.ConditionTrue {
				return errors.Errorf("condition %+v, want True", c)
			}
			return nil
		})
	}
	got := remoteSettled(t, before)
	t.Logf("binding %d remote Pods: requests to the API server:\n%s", n, got)
	if w := got[statusWrites]; w != n {
		t.Errorf("%g RemotePod status writes for %d Pods, want one each", w, n)
	}
	if l := got[testenv.APIRequest{Verb: "LIST", Resource: "remotepods"}]; l != 0 {
		t.Errorf("%g lists of RemotePods, want them read from the cache", l)
	}

	// The agent reports each Pod not ready (a change the provider does not
	// tell anything about): no status write.
	before = scrape(t)
	for _, rp := range rps {
		updateRemote(t, rp, func(rp *v1alpha1.RemotePod) { rp.Spec.Ready = false })
	}
	if w := remoteSettled(t, before)[statusWrites]; w != 0 {
		t.Errorf("%g RemotePod status writes after updates that change nothing told, want none", w)
	}
}

// remoteSettled waits until the provider stops writing RemotePods and
// PodAddresses (ten polls in a row count the same writes) and returns
// every request since before.
func remoteSettled(t *testing.T, before testenv.APIRequests) testenv.APIRequests {
	t.Helper()
	var last testenv.APIRequests
	stable := 0
	w := func(r testenv.APIRequest) bool {
		return r.Write() && (r.Resource == "remotepods" && r.Subresource == "status" || r.Resource == "podaddresses")
	}
	eventually(t, "the provider's writes settle", func() error {
		now := scrape(t).Sub(before)
		if last != nil && now.Count(w) == last.Count(w) {
			stable++
		} else {
			stable = 0
		}
		last = now
		if stable < 10 {
			return errors.Errorf("still writing: %g writes", now.Count(w))
		}
		return nil
	})
	return last
}
