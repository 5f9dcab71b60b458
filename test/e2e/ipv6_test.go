package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
)

// TestIPv6FullChainOnNode: on the dual-stack node, a real game server
// Pod gets an IPv6 address on the bridge; a PortPool over an
// IPv6FullChain LoadBalancer binds it, the deployed provider registers
// the Pod's IPv6 address (not its IPv4 one) as the target, the Pod is
// told [VIP]:port, and a TCP line and a UDP datagram sent from the host
// to [VIP]:port are answered by that Pod's container over IPv6. The
// emulator's VIP (a unique local address) is put on lo, and the data
// plane dials the Pod because its address is routed to the node's bridge.
func TestIPv6FullChainOnNode(t *testing.T) {
	const ns = "ipv6"
	ctx := context.Background()
	began := time.Now()
	image := gameServer(t, ns)

	lb := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rooms-v6"}}
	lb.Spec.ForProvider.Type, lb.Spec.ForProvider.AddressIPVersion = ptr.To("OPEN"), ptr.To("IPv6FullChain")
	lb.Spec.ForProvider.SubnetID = ptr.To("subnet-v6") // the cloud wants one for IPv6FullChain
	pool := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rooms-v6"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "room-v6"}}
	if err := kube.Create(ctx, lb); err != nil {
		t.Fatal(err)
	}
	var id string // the load balancer's, once known
	t.Cleanup(func() { deleteIPv6(t, id, pod, pool, lb) })
	var vip netip.Addr
	eventually(t, "the IPv6FullChain LoadBalancer Ready with its IPv6 address", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(lb), lb); err != nil {
			return err
		}
		if c := lb.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("not Ready: %s %s", c.Reason, c.Message)
		}
		var err error
		id = lb.Status.AtProvider.ID
		vip, err = netip.ParseAddr(lb.Status.AtProvider.AddressIPv6)
		return err
	})
	// Before any listener exists, so the data plane binds the VIP as soon
	// as it has a route on it.
	emulatortest.OnLoopback(t, vip)

	pool.Spec.ForProvider = clbv1alpha1.PortPoolParameters{
		LoadBalancerIDRefs: []xpv2.NamespacedReference{{Name: lb.Name}},
		StartPort:          7600, EndPort: 7604, Protocols: []string{"TCP", "UDP"},
	}
	if err := kube.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{podannotation.AnnotationPorts: fmt.Sprintf("%d/TCP_UDP %s", deployed.GamePort, pool.Name)}
	pod.Spec = *deployed.GameStatefulSet(ns, "room", image, 1).Spec.Template.Spec.DeepCopy()
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}

	var ip4, ip6 netip.Addr
	var b networkv1alpha1.PortBinding
	eventually(t, pod.Name+" dual-stack, bound and Ready", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		ip4, ip6 = netip.Addr{}, netip.Addr{}
		for _, p := range pod.Status.PodIPs {
			switch a, _ := netip.ParseAddr(p.IP); {
			case a.Is4():
				ip4 = a
			case a.Is6():
				ip6 = a
			}
		}
		if !node.NodePodCIDR().Contains(ip4) || !node.NodePodCIDR6().Contains(ip6) {
			return fmt.Errorf("pod IPs %v, want one in %s and one in %s", pod.Status.PodIPs, node.NodePodCIDR(), node.NodePodCIDR6())
		}
		pa := &networkv1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pa); err != nil {
			return err
		}
		if pa.Status.State != networkv1alpha1.StateBound || len(pa.Status.Bindings) != 1 {
			return fmt.Errorf("PodAddress: %s %s", pa.Status.State, pa.Status.Message)
		}
		b = pa.Status.Bindings[0]
		if !isReady(pod) {
			return fmt.Errorf("not Ready: %+v", pod.Status.Conditions)
		}
		return nil
	})
	addr := net.JoinHostPort(vip.String(), strconv.Itoa(int(b.Port)))
	if b.TargetIP != ip6.String() || b.Address != addr {
		t.Fatalf("binding: target %s, address %s; want the Pod's IPv6 %s and %s", b.TargetIP, b.Address, ip6, addr)
	}
	// In the cloud: one target per listener, the Pod's IPv6 address.
	cloud, ok := cluster.Cloud.Inventory().LoadBalancer(b.LoadBalancerID)
	if !ok {
		t.Fatalf("load balancer %s not in the cloud", b.LoadBalancerID)
	}
	protocols := 0
	for _, l := range cloud.Listeners {
		if l.Port != int(b.Port) {
			continue
		}
		protocols++
		if len(l.Targets) != 1 || l.Targets[0].IP != ip6.String() || l.Targets[0].Port != deployed.GamePort {
			t.Errorf("%s %d: targets %+v, want only [%s]:%d", l.Protocol, l.Port, l.Targets, ip6, deployed.GamePort)
		}
	}
	if protocols != 2 {
		t.Errorf("%d listeners on port %d, want TCP and UDP", protocols, b.Port)
	}
	bound := time.Since(began)
	tcp, udp := roundTrip(t, addr, pod.Name)
	t.Logf("%s (IPv4 %s, IPv6 %s) bound in %s to %s, target its IPv6; TCP round trip %s, UDP %s; %s in all",
		pod.Name, ip4, ip6, bound.Round(time.Millisecond), addr, tcp, udp, time.Since(began).Round(time.Millisecond))
}

// deleteIPv6 deletes what TestIPv6FullChainOnNode made (some may not
// exist yet) and waits for the load balancer id to leave the cloud.
func deleteIPv6(t *testing.T, id string, pod *corev1.Pod, pool *clbv1alpha1.PortPool, lb *clbv1alpha1.LoadBalancer) {
	t.Helper()
	ctx := context.Background()
	for _, o := range []client.Object{pod, pool, lb} {
		if err := kube.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	eventually(t, "the IPv6 load balancer deleted", func() error {
		switch err := kube.Get(ctx, client.ObjectKeyFromObject(lb), lb); {
		case err == nil:
			return fmt.Errorf("LoadBalancer %s still there", lb.Name)
		case !kerrors.IsNotFound(err):
			return err
		}
		if _, ok := cluster.Cloud.Inventory().LoadBalancer(id); ok {
			return fmt.Errorf("load balancer %s still in the cloud", id)
		}
		return nil
	})
}
