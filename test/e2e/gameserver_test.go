package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpcluster"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

const (
	gameNamespace = "games"
	gameName      = "gameserver"
)

// TestGameServerStatefulSet runs the game server as a StatefulSet of real
// Pods: each gets its public address, the kubelet holds it NotReady until
// the address is published (readiness gate), a TCP and a UDP packet through
// every address reach its container, scaling adds and releases addresses,
// and deleting the PodPublicAddress, collected by the real garbage
// collector, leaves nothing in the cloud.
func TestGameServerStatefulSet(t *testing.T) {
	ctx := context.Background()
	image := gameServer(t, gameNamespace)
	// The demo's PodPublicAddress: Pods app=gameserver in namespace games
	// get public port 7000+N for their port 7777, TCP and UDP.
	gameServerYAML, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "cluster", "local", "demo", "gameserver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	xr := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(gameServerYAML, &xr.Object); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, xr); err != nil {
		t.Fatal(err)
	}
	eventually(t, "PodPublicAddress Ready", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(xr), xr); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(xr.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})

	sts := deployed.GameStatefulSet(gameNamespace, gameName, image, 3)
	if err := kube.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int32{3, 5, 2} {
		began := time.Now()
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			t.Fatal(err)
		}
		sts.Spec.Replicas = ptr.To(n)
		if err := kube.Update(ctx, sts); err != nil {
			t.Fatal(err)
		}
		for i := range int(n) {
			b, ip := checkGamePod(t, i)
			tcp, udp := roundTrip(t, b.Address, podName(i))
			t.Logf("%d Pods: %s (Pod IP %s, Ready) at %s: TCP round trip %s, UDP %s", n, podName(i), ip, b.Address, tcp, udp)
		}
		eventually(t, "Pods above the scale gone with their addresses", func() error {
			var l networkv1alpha1.PodAddressList
			if err := kube.List(ctx, &l, client.InNamespace(gameNamespace)); err != nil {
				return err
			}
			if len(l.Items) != int(n) {
				return fmt.Errorf("%d PodAddresses for %d Pods", len(l.Items), n)
			}
			return nil
		})
		t.Logf("scaled to %d in %s", n, time.Since(began).Round(time.Millisecond))
	}

	recreatedKeepsAddress(t, 1)
	providerFailover(t, 2)
	providerCrash(t, 2)

	// A Pod outside the composite's selector names its pool in its own
	// annotation: deleting the composite cannot release it.
	holdout := holdoutPod(sts)
	if err := kube.Create(ctx, holdout); err != nil {
		t.Fatal(err)
	}
	held := boundAddress(t, holdout.Name)
	roundTrip(t, held.Address, holdout.Name)

	// The real garbage collector deletes what the composite composed, all
	// at once, while four Pods still hold addresses. The pool waits for
	// the Pod that still uses it, and the load balancer for the pool: the
	// holdout's address keeps answering.
	began := time.Now()
	if err := kube.Delete(ctx, xr); err != nil {
		t.Fatal(err)
	}
	poolKey := client.ObjectKey{Namespace: gameNamespace, Name: xr.GetName()}
	lbKey := client.ObjectKey{Namespace: gameNamespace, Name: xr.GetName() + "-0"}
	eventually(t, "the pool and its load balancer waiting for the holdout Pod", func() error {
		pool := &clbv1alpha1.PortPool{}
		if err := kube.Get(ctx, poolKey, pool); err != nil {
			return err
		}
		if c := pool.GetCondition(xpv2.TypeSynced); pool.GetDeletionTimestamp() == nil || !strings.Contains(c.Message, "still has") {
			return fmt.Errorf("PortPool deleting %t, Synced %q", pool.GetDeletionTimestamp() != nil, c.Message)
		}
		lb := &clbv1alpha1.LoadBalancer{}
		if err := kube.Get(ctx, lbKey, lb); err != nil {
			return err
		}
		if c := lb.GetCondition(xpv2.TypeSynced); lb.GetDeletionTimestamp() == nil || !strings.Contains(c.Message, "still used by PortPool "+poolKey.String()) {
			return fmt.Errorf("LoadBalancer deleting %t, Synced %q", lb.GetDeletionTimestamp() != nil, c.Message)
		}
		return nil
	})
	if _, ok := cluster.Cloud.Inventory().LoadBalancer(held.LoadBalancerID); !ok {
		t.Fatalf("load balancer %s deleted while the holdout Pod is bound to it", held.LoadBalancerID)
	}
	roundTrip(t, held.Address, holdout.Name)
	t.Logf("composite deleted: the pool and its load balancer wait for the holdout Pod, whose address still answers (%s)", time.Since(began).Round(time.Millisecond))
	if err := kube.Delete(ctx, holdout); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cloud empty after the PodPublicAddress is deleted", func() error {
		inv := cluster.Cloud.Inventory()
		if len(inv.LoadBalancers) != 0 || inv.RunningTasks != 0 {
			return fmt.Errorf("%d load balancers (%d listeners) and %d running tasks left", len(inv.LoadBalancers), inv.Listeners(), inv.RunningTasks)
		}
		return nil
	})
	t.Logf("deleted and collected, nothing left in the cloud, in %s", time.Since(began).Round(time.Millisecond))
	if err := kube.Delete(ctx, sts); err != nil {
		t.Fatal(err)
	}
}

func podName(i int) string { return gameName + "-" + strconv.Itoa(i) }

// holdoutPod is a Pod of the game server outside the StatefulSet's
// selector that asks for the composite's pool by its own annotation.
func holdoutPod(sts *appsv1.StatefulSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: gameNamespace, Name: "holdout", Labels: map[string]string{"app": "holdout"},
		Annotations: map[string]string{podannotation.AnnotationPorts: fmt.Sprintf("%d/TCP_UDP %s", deployed.GamePort, gameName)},
	}}
	p.Spec = *sts.Spec.Template.Spec.DeepCopy()
	return p
}

// boundAddress waits until Pod name of the game namespace is bound (one
// binding) and Ready, and returns its binding.
func boundAddress(t *testing.T, name string) networkv1alpha1.PortBinding {
	t.Helper()
	ctx := context.Background()
	var b networkv1alpha1.PortBinding
	eventually(t, name+" bound and Ready", func() error {
		pa := &networkv1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: name}, pa); err != nil {
			return err
		}
		if pa.Status.State != networkv1alpha1.StateBound || len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].Address == "" {
			return fmt.Errorf("PodAddress %s: %s %s", pa.Name, pa.Status.State, pa.Status.Message)
		}
		b = pa.Status.Bindings[0]
		pod := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: name}, pod); err != nil {
			return err
		}
		if !isReady(pod) {
			return fmt.Errorf("pod %s not Ready: %+v", name, pod.Status.Conditions)
		}
		return nil
	})
	return b
}

// checkGamePod waits until Pod i runs on the node's bridge, is bound and
// Ready, and checks the kubelet made it Ready only once the address was
// published. It returns the Pod's binding and IP.
func checkGamePod(t *testing.T, i int) (networkv1alpha1.PortBinding, netip.Addr) {
	t.Helper()
	b := boundAddress(t, podName(i))
	pod := &corev1.Pod{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, pod); err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || !node.NodePodCIDR().Contains(ip) {
		t.Fatalf("%s: Pod IP %q is not on the node's bridge (%s)", pod.Name, pod.Status.PodIP, node.NodePodCIDR())
	}
	var ready, address *corev1.PodCondition
	for j := range pod.Status.Conditions {
		switch c := &pod.Status.Conditions[j]; c.Type {
		case corev1.PodReady:
			ready = c
		case podannotation.ConditionAddressReady:
			address = c
		}
	}
	if address == nil || address.Status != corev1.ConditionTrue {
		t.Fatalf("%s is Ready without a True %s condition: %+v", pod.Name, podannotation.ConditionAddressReady, pod.Status.Conditions)
	}
	if ready.LastTransitionTime.Before(&address.LastTransitionTime) {
		t.Errorf("%s: the kubelet made it Ready at %s, before its address was published at %s", pod.Name, ready.LastTransitionTime, address.LastTransitionTime)
	}
	return b, ip
}

// roundTrip sends a TCP line and a UDP datagram through addr and checks
// that Pod want's container answered; it returns the round-trip times.
func roundTrip(t *testing.T, addr, want string) (tcp, udp time.Duration) {
	t.Helper()
	tcp, udp, err := deployed.RoundTrip(context.Background(), addr, want, wait)
	if err != nil {
		t.Fatalf("round trip through %s to %s: %v", addr, want, err)
	}
	return tcp, udp
}

// recreatedKeepsAddress deletes StatefulSet Pod i: the StatefulSet
// controller recreates it, and the new Pod (another UID, maybe another IP)
// gets the same public address, which reaches it.
func recreatedKeepsAddress(t *testing.T, i int) {
	t.Helper()
	ctx := context.Background()
	before, _ := checkGamePod(t, i)
	old := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, old); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := kube.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, podName(i)+" recreated", func() error {
		p := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(old), p); err != nil {
			return err
		}
		if p.UID == old.UID {
			return errors.New("still the old Pod")
		}
		return nil
	})
	after, ip := checkGamePod(t, i)
	took := time.Since(began)
	if after.Address != before.Address || after.LoadBalancerID != before.LoadBalancerID {
		t.Fatalf("%s recreated with address %s on %s, had %s on %s", podName(i), after.Address, after.LoadBalancerID, before.Address, before.LoadBalancerID)
	}
	roundTrip(t, after.Address, podName(i))
	t.Logf("%s deleted, recreated by the StatefulSet controller (Pod IP %s) and Ready at the same address %s in %s", podName(i), ip, after.Address, took.Round(time.Millisecond))
	checkTargets(t, 2)
}

// providerFailover deletes the Pod of the provider replica that holds the
// leader Lease: the other replica takes over, the Deployment brings a new
// Pod, no address changes and no target moves, leaks or doubles.
func providerFailover(t *testing.T, pods int) {
	t.Helper()
	ctx := context.Background()
	bound := map[int]networkv1alpha1.PortBinding{}
	for i := range pods {
		bound[i], _ = checkGamePod(t, i)
	}
	lease := &coordinationv1.Lease{}
	key := leaseKey
	var leader string
	eventually(t, "the provider's leader Lease", func() error {
		if err := kube.Get(ctx, key, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return errors.New("no holder")
		}
		leader, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
		return nil
	})
	began := time.Now()
	if err := kube.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: xpcluster.Namespace, Name: leader}}); err != nil {
		t.Fatal(err)
	}
	var next string
	eventually(t, "another replica leads", func() error {
		if err := kube.Get(ctx, key, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil {
			return errors.New("no holder")
		}
		if next, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_"); next == leader || next == "" {
			return fmt.Errorf("still held by %s", leader)
		}
		return nil
	})
	t.Logf("leader %s deleted; %s took over in %s", leader, next, time.Since(began).Round(time.Millisecond))
	if err := deployed.WaitDeploymentsAvailableByLabel(ctx, kube, xpcluster.Namespace, "pkg.crossplane.io/provider", xplocal.ProviderPackage, wait); err != nil {
		t.Fatal(err)
	}
	// A new Pod that the new leader binds proves it reconciles.
	for i := range pods {
		b, _ := checkGamePod(t, i)
		if b.Address != bound[i].Address {
			t.Errorf("%s moved from %s to %s across the failover", podName(i), bound[i].Address, b.Address)
		}
		roundTrip(t, b.Address, podName(i))
	}
	checkTargets(t, pods)
}

// providerCrash kills the leader provider's container (SIGKILL through
// the node's CRI, as a crash): the lease is not released, so the other
// replica, or the restarted one, leads once it expires. A Pod added while
// no replica leads gets its address then; the n Pods before keep theirs,
// and every target is a bound Pod's. It leaves n+1 Pods.
func providerCrash(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	bound := map[int]networkv1alpha1.PortBinding{}
	for i := range n {
		bound[i], _ = checkGamePod(t, i)
	}
	key := leaseKey
	pod, holder, restarts := killLeader(t)
	leader := pod.Name
	began := time.Now()
	// A Pod that arrives while nobody leads.
	sts := &appsv1.StatefulSet{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: gameName}, sts); err != nil {
		t.Fatal(err)
	}
	sts.Spec.Replicas = ptr.To(int32(n + 1))
	if err := kube.Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the killed container restarted by the kubelet", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount <= restarts || !isReady(pod) {
			return fmt.Errorf("restarts %d (had %d), Ready %t", cs[0].RestartCount, restarts, isReady(pod))
		}
		return nil
	})
	lease := &coordinationv1.Lease{}
	var next string
	eventually(t, "a new leader after the crash", func() error {
		if err := kube.Get(ctx, key, lease); err != nil {
			return err
		}
		if next = ptr.Deref(lease.Spec.HolderIdentity, ""); next == "" || next == holder {
			return fmt.Errorf("still held by %s", holder)
		}
		return nil
	})
	t.Logf("leader container of %s killed (SIGKILL), restarted by the kubelet; %s leads %s after the kill", leader, next, time.Since(began).Round(time.Millisecond))
	for i := range n + 1 {
		b, _ := checkGamePod(t, i)
		if old, ok := bound[i]; ok && b.Address != old.Address {
			t.Errorf("%s moved from %s to %s across the crash", podName(i), old.Address, b.Address)
		}
		roundTrip(t, b.Address, podName(i))
	}
	t.Logf("%s, created while no replica led, bound and answering %s after the kill", podName(n), time.Since(began).Round(time.Millisecond))
	checkTargets(t, n+1)
}

// killLeader SIGKILLs the container of the provider Pod that leads, as
// a crash would, and returns that Pod, the Lease's holder and the
// container's restart count before the kill.
func killLeader(t *testing.T) (*corev1.Pod, string, int32) {
	t.Helper()
	ctx := context.Background()
	lease := &coordinationv1.Lease{}
	if err := kube.Get(ctx, leaseKey, lease); err != nil {
		t.Fatal(err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	leader, _, _ := strings.Cut(holder, "_")
	pod := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: xpcluster.Namespace, Name: leader}, pod); err != nil {
		t.Fatalf("the leader's Pod %q: %v", leader, err)
	}
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("leader Pod %s: container statuses %+v", pod.Name, pod.Status.ContainerStatuses)
	}
	restarts := pod.Status.ContainerStatuses[0].RestartCount
	if err := cluster.Node.KillContainer(ctx, pod.Status.ContainerStatuses[0].ContainerID); err != nil {
		t.Fatal(err)
	}
	return pod, holder, restarts
}

// checkTargets checks the cloud holds exactly one target per listener
// port for each of the n bound game server Pods, and it is the Pod's IP.
func checkTargets(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "one target per bound Pod and protocol", func() error {
		want := map[string]string{} // port -> Pod IP
		for i := range n {
			pa := &networkv1alpha1.PodAddress{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, pa); err != nil {
				return err
			}
			p := &corev1.Pod{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, p); err != nil {
				return err
			}
			for _, b := range pa.Status.Bindings {
				want[strconv.Itoa(int(b.Port))] = p.Status.PodIP
			}
		}
		for _, lb := range cluster.Cloud.Inventory().LoadBalancers {
			for _, l := range lb.Listeners {
				ip, bound := want[strconv.Itoa(l.Port)]
				switch {
				case !bound && len(l.Targets) != 0:
					return fmt.Errorf("%s %d: %d targets left behind no Pod", l.Protocol, l.Port, len(l.Targets))
				case bound && (len(l.Targets) != 1 || l.Targets[0].IP != ip):
					return fmt.Errorf("%s %d: targets %+v, want only %s", l.Protocol, l.Port, l.Targets, ip)
				}
			}
		}
		return nil
	})
}
