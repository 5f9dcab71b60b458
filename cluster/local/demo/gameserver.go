package main

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// gameServerYAML is the PodPublicAddress the demo applies, printed as it
// is so that users see what they would write.
//
//go:embed gameserver.yaml
var gameServerYAML []byte

// The game server of gameserver.yaml: StatefulSet-style Pods
// gameserver-N labelled app=gameserver in namespace games, serving on port
// 7777 over TCP and UDP.
const (
	gameNamespace = "games"
	gameName      = "gameserver"
	gamePort      = 7777
)

// podIP is the Pod IP of gameserver-n: a loopback address, so that a
// server in this process can play the Pod and the emulated load balancer
// can reach it.
func podIP(n int) string { return "127.0.2." + strconv.Itoa(n+1) }

func podName(n int) string { return gameName + "-" + strconv.Itoa(n) }

// game is the game server workload: its running Pods by ordinal. There is
// no kubelet or StatefulSet controller, so the demo creates and deletes
// the Pods and runs each Pod's server itself.
type game struct {
	say   narrator
	kube  client.Client
	cloud *emulator.Emulator
	wait  time.Duration
	pods  map[int]*server
}

// consumerLabel is the label the example ClusterProviderConfig's
// spec.consumers selects namespaces by.
const consumerLabel = "tencentcloud.crossplane.io/provider-config"

func gameServerDemo(ctx context.Context, say narrator, local *xplocal.Local, cloud *emulator.Emulator, wait time.Duration) error {
	g := &game{say: say, kube: local.Kube, cloud: cloud, wait: wait, pods: map[int]*server{}}
	defer g.stopServers()

	g.say.step("creating the game server's PodPublicAddress (cluster/local/demo/gameserver.yaml):")
	for _, l := range strings.Split(strings.TrimSpace(string(gameServerYAML)), "\n") {
		fmt.Println("    | " + l)
	}
	xr := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(gameServerYAML, &xr.Object); err != nil {
		return err
	}
	// The platform team lets the namespace use the ClusterProviderConfig
	// (examples/providerconfig/clusterproviderconfig.yaml serves the
	// namespaces so labelled, and no other).
	g.say.step("letting namespace " + gameNamespace + " use ClusterProviderConfig default: label " + consumerLabel + "=default")
	err := g.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gameNamespace, Labels: map[string]string{consumerLabel: "default"}}})
	if err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	began := time.Now()
	if err := g.kube.Create(ctx, xr); err != nil {
		return err
	}
	if err := g.waitComposite(ctx, xr); err != nil {
		return err
	}
	fmt.Printf("    Ready in %s; the function composed:\n", since(began))
	for _, c := range xplocal.Composed(xr) {
		fmt.Printf("      %-16s %s\n", c.GetKind(), client.ObjectKeyFromObject(c))
	}
	printComposite(xr)

	// Up, further up, down, and at the end of the game to none.
	for _, n := range []int{3, 5, 2, 0} {
		if err := g.scale(ctx, n); err != nil {
			return err
		}
	}

	g.say.step("deleting the PodPublicAddress, then what it composed as Kubernetes' garbage collector would (the local control plane runs none)")
	began = time.Now()
	deleted, err := local.DeleteComposite(ctx, xr.GroupVersionKind(), xr.GetNamespace(), xr.GetName(), wait)
	if err != nil {
		return err
	}
	for _, d := range deleted {
		fmt.Printf("    deleted %-16s %s\n", d.GetKind(), client.ObjectKeyFromObject(d))
	}
	fmt.Printf("    all gone in %s\n", since(began))

	g.say.step("checking the emulated cloud for leftovers")
	err = testenv.Eventually(ctx, wait, func() error {
		inv := cloud.Inventory()
		if len(inv.LoadBalancers) != 0 || inv.RunningTasks != 0 {
			return fmt.Errorf("%d load balancers (%d listeners) and %d running tasks left in the cloud",
				len(inv.LoadBalancers), inv.Listeners(), inv.RunningTasks)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Println("    0 load balancers, 0 listeners, 0 running tasks: nothing leaked")
	return nil
}

// scale runs the game server with n Pods, waits until each has its public
// address, and plays a round trip through every address.
func (g *game) scale(ctx context.Context, n int) error {
	if n == 0 {
		g.say.step("the game is over: scaling the game server to 0 Pods")
	} else {
		g.say.step("scaling the game server to %d Pods", n)
	}
	before := g.bindings(ctx)
	began := time.Now()
	if err := g.scaleTo(ctx, n); err != nil {
		return err
	}
	bound := map[int]networkv1alpha1.PortBinding{}
	err := testenv.Eventually(ctx, g.wait, func() error {
		for i := range n {
			b, err := g.binding(ctx, i)
			if err != nil {
				return err
			}
			bound[i] = b
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Printf("    %d Pods have their public address, %s after the change\n", n, since(began))
	}

	// Released: the Pods that went, once the provider deregistered their
	// targets (their PodAddress goes only after that).
	for _, i := range slices.Sorted(maps.Keys(before)) {
		b := before[i]
		if i < n {
			continue
		}
		err := testenv.Eventually(ctx, g.wait, func() error {
			err := g.kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, &networkv1alpha1.PodAddress{})
			if err == nil {
				return fmt.Errorf("PodAddress %s still there", podName(i))
			}
			return client.IgnoreNotFound(err)
		})
		if err != nil {
			return err
		}
		if t := g.targets(b); t != 0 {
			return fmt.Errorf("%s: %d targets left on %s after %s was deleted", b.Address, t, b.LoadBalancerID, podName(i))
		}
		fmt.Printf("    %s released %s: no target behind it in the cloud\n", podName(i), b.Address)
	}

	if n > 0 {
		fmt.Printf("    %-14s %-11s %-20s %-15s %s\n", "POD", "POD IP", "PUBLIC ADDRESS", "TCP ROUND TRIP", "UDP ROUND TRIP")
	}
	for i := range n {
		b := bound[i]
		tcp, udp, err := deployed.RoundTrip(ctx, b.Address, podName(i), 15*time.Second)
		if err != nil {
			return fmt.Errorf("round trip through %s to %s: %w", b.Address, podName(i), err)
		}
		fmt.Printf("    %-14s %-11s %-20s %-15s %s\n", podName(i), podIP(i), b.Address, rtt(tcp), rtt(udp))
	}
	return g.waitPolicy(ctx, int64(n))
}

// scaleTo creates the missing Pods below ordinal n, with their servers,
// and deletes those from n up, highest first, as a StatefulSet does.
func (g *game) scaleTo(ctx context.Context, n int) error {
	for i := range n {
		if _, ok := g.pods[i]; ok {
			continue
		}
		s, err := startServer(podName(i), podIP(i))
		if err != nil {
			return err
		}
		g.pods[i] = s
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: gameNamespace, Name: podName(i), Labels: map[string]string{"app": gameName}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "server", Image: "example/gameserver:1.0",
				Ports: []corev1.ContainerPort{
					{Name: "game", ContainerPort: gamePort, Protocol: corev1.ProtocolTCP},
					{Name: "game-udp", ContainerPort: gamePort, Protocol: corev1.ProtocolUDP},
				},
			}}},
		}
		if err := testenv.RunPod(ctx, g.kube, p, podIP(i), g.wait); err != nil {
			return err
		}
	}
	for i := len(g.pods) - 1; i >= n; i-- {
		s, ok := g.pods[i]
		if !ok {
			continue
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: gameNamespace, Name: podName(i)}}
		if err := client.IgnoreNotFound(g.kube.Delete(ctx, p)); err != nil {
			return err
		}
		s.Close()
		delete(g.pods, i)
	}
	return nil
}

func (g *game) stopServers() {
	for _, s := range g.pods {
		s.Close()
	}
}

// binding returns the public address of gameserver-i once it is bound.
func (g *game) binding(ctx context.Context, i int) (networkv1alpha1.PortBinding, error) {
	pa := &networkv1alpha1.PodAddress{}
	if err := g.kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, pa); err != nil {
		return networkv1alpha1.PortBinding{}, err
	}
	if pa.Status.State != networkv1alpha1.StateBound || len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].Address == "" {
		return networkv1alpha1.PortBinding{}, fmt.Errorf("%s: %s %s", podName(i), pa.Status.State, pa.Status.Message)
	}
	return pa.Status.Bindings[0], nil
}

// bindings returns the addresses of the running Pods.
func (g *game) bindings(ctx context.Context) map[int]networkv1alpha1.PortBinding {
	out := map[int]networkv1alpha1.PortBinding{}
	for i := range g.pods {
		if b, err := g.binding(ctx, i); err == nil {
			out[i] = b
		}
	}
	return out
}

// targets counts the targets the cloud holds behind a binding's port.
func (g *game) targets(b networkv1alpha1.PortBinding) int {
	lb, ok := g.cloud.Inventory().LoadBalancer(b.LoadBalancerID)
	if !ok {
		return 0
	}
	n := 0
	for _, l := range lb.Listeners {
		if l.Port == int(b.Port) {
			n += len(l.Targets)
		}
	}
	return n
}

// waitComposite waits until the composite is Ready, which it is once its
// load balancer is up with the pool's listeners and the policy is in place.
func (g *game) waitComposite(ctx context.Context, xr *unstructured.Unstructured) error {
	return testenv.Eventually(ctx, g.wait, func() error {
		if err := g.kube.Get(ctx, client.ObjectKeyFromObject(xr), xr); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(xr.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("PodPublicAddress %s is not Ready: %v", xr.GetName(), conds)
	})
}

// waitPolicy waits until the composed PodAddressPolicy counts n Pods, all
// bound, and prints its status. (The composite copies these counts into
// its own status when Crossplane next reconciles it: Crossplane's circuit
// breaker, which the many status updates of a new composite trip, can
// hold that back for up to a minute.)
func (g *game) waitPolicy(ctx context.Context, n int64) error {
	pol := &networkv1alpha1.PodAddressPolicy{}
	err := testenv.Eventually(ctx, g.wait, func() error {
		if err := g.kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: gameName}, pol); err != nil {
			return err
		}
		if s := pol.Status; s.MatchedPods != n || s.BoundPods != n {
			return fmt.Errorf("PodAddressPolicy %s: %d Pods matched, %d bound, want %d", gameName, s.MatchedPods, s.BoundPods, n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("    PodAddressPolicy %s/%s status: %d Pods matched, %d bound\n", gameNamespace, gameName, pol.Status.MatchedPods, pol.Status.BoundPods)
	return nil
}

func printComposite(xr *unstructured.Unstructured) {
	vips, _, _ := unstructured.NestedStringSlice(xr.Object, "status", "vips")
	free, _, _ := unstructured.NestedInt64(xr.Object, "status", "freePorts")
	fmt.Printf("    PodPublicAddress %s/%s status: VIPs %v, %d ports free\n", xr.GetNamespace(), xr.GetName(), vips, free)
}

// A server plays one Pod's game server on the Pod IP: it answers every
// TCP line and every UDP datagram with the Pod's name and what it got.
type server struct {
	name string
	tcp  net.Listener
	udp  net.PacketConn
}

func startServer(name, ip string) (*server, error) {
	addr := net.JoinHostPort(ip, strconv.Itoa(gamePort))
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot play %s on %s: %w", name, addr, err)
	}
	udp, err := net.ListenPacket("udp", addr)
	if err != nil {
		_ = tcp.Close()
		return nil, fmt.Errorf("cannot play %s on %s: %w", name, addr, err)
	}
	s := &server{name: name, tcp: tcp, udp: udp}
	go s.serveTCP()
	go s.serveUDP()
	return s, nil
}

func (s *server) serveTCP() {
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			r := bufio.NewScanner(c)
			for r.Scan() {
				if _, err := fmt.Fprintf(c, "%s: %s\n", s.name, r.Text()); err != nil {
					return
				}
			}
		}()
	}
}

func (s *server) serveUDP() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = s.udp.WriteTo(append([]byte(s.name+": "), buf[:n]...), from)
	}
}

// Close stops the server, as the Pod's container ends.
func (s *server) Close() {
	_ = s.tcp.Close()
	_ = s.udp.Close()
}

func rtt(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + " ms"
}
