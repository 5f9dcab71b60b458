package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/images"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/xpkgbuild"
)

const (
	gameNamespace = "games"
	gameName      = "gameserver"
	gamePort      = 7777
)

// TestGameServerStatefulSet runs the game server as a StatefulSet of real
// Pods: each gets its public address, the kubelet holds it NotReady until
// the address is published (readiness gate), a TCP and a UDP packet through
// every address reach its container, scaling adds and releases addresses,
// and deleting the PodPublicAddress, collected by the real garbage
// collector, leaves nothing in the cloud.
func TestGameServerStatefulSet(t *testing.T) {
	ctx := context.Background()
	image := pushGameServer(t)
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gameNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
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

	sts := gameStatefulSet(image, 3)
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

	// The real garbage collector deletes what the composite composed, all
	// at once, while two Pods still hold addresses.
	began := time.Now()
	if err := kube.Delete(ctx, xr); err != nil {
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

// pushGameServer builds cmd/gameserver's image into the node's registry.
func pushGameServer(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	img, err := images.GameServer(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ref := cluster.Node.Registry() + "/ptn/gameserver:e2e"
	if err := xpkgbuild.Push(ctx, img, ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// gameStatefulSet runs the game server's Pods, each waiting for its address
// through the readiness gate.
func gameStatefulSet(image string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": gameName}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: gameNamespace, Name: gameName},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         gameName,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}},
					Containers: []corev1.Container{{
						Name:  "game",
						Image: image,
						Args:  []string{"--tcp", strconv.Itoa(gamePort), "--udp", strconv.Itoa(gamePort)},
						Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
						}}},
						Ports: []corev1.ContainerPort{
							{Name: "game-tcp", ContainerPort: gamePort, Protocol: corev1.ProtocolTCP},
							{Name: "game-udp", ContainerPort: gamePort, Protocol: corev1.ProtocolUDP},
						},
					}},
				},
			},
		},
	}
}

// checkGamePod waits until Pod i runs on the node's bridge, is bound and
// Ready, and checks the kubelet made it Ready only once the address was
// published. It returns the Pod's binding and IP.
func checkGamePod(t *testing.T, i int) (networkv1alpha1.PortBinding, netip.Addr) {
	t.Helper()
	ctx := context.Background()
	var b networkv1alpha1.PortBinding
	pod := &corev1.Pod{}
	eventually(t, podName(i)+" bound and Ready", func() error {
		pa := &networkv1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, pa); err != nil {
			return err
		}
		if pa.Status.State != networkv1alpha1.StateBound || len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].Address == "" {
			return fmt.Errorf("PodAddress %s: %s %s", pa.Name, pa.Status.State, pa.Status.Message)
		}
		b = pa.Status.Bindings[0]
		if err := kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, pod); err != nil {
			return err
		}
		if !isReady(pod) {
			return fmt.Errorf("pod %s not Ready: %+v", pod.Name, pod.Status.Conditions)
		}
		return nil
	})
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
	eventually(t, "round trip through "+addr+" to "+want, func() error {
		var err error
		if tcp, err = exchange("tcp", addr, want); err != nil {
			return err
		}
		udp, err = exchange("udp", addr, want)
		return err
	})
	return tcp, udp
}

func exchange(network, addr, want string) (time.Duration, error) {
	const msg = "join room 42"
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return 0, err
	}
	began := time.Now()
	var answer string
	if network == "tcp" {
		if _, err = fmt.Fprintln(c, msg); err == nil {
			answer, err = bufio.NewReader(c).ReadString('\n')
		}
	} else if _, err = c.Write([]byte(msg)); err == nil {
		buf := make([]byte, 1500)
		var n int
		n, err = c.Read(buf)
		answer = string(buf[:n])
	}
	took := time.Since(began)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", network, addr, err)
	}
	if answer = strings.TrimSpace(answer); answer != want+": "+msg {
		return 0, fmt.Errorf("%s %s: answer %q, want %q", network, addr, answer, want+": "+msg)
	}
	return took, nil
}
