package podaddress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestIPv6FullChainDataPlane: a LoadBalancer MR creates an IPv6FullChain
// load balancer, a PortPool over it gives a dual-stack Pod a port, the
// Pod's IPv6 address is registered as the target, the Pod is told
// [VIP]:port, and a TCP round trip through [VIP]:port reaches the process
// standing in for the Pod on its IPv6 address. The VIP and the Pod's
// address are unique local addresses the test puts on lo.
func TestIPv6FullChainDataPlane(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	addrs := emulatortest.LocalIPv6(t, 2) // the VIP pool (one address) and the Pod's IPv6
	vip, podIP6 := addrs[0].String(), addrs[1].String()
	plane := dataplane.New(t.Logf)
	t.Cleanup(func() { _ = plane.Close() })
	_, ref := ownCloud(t, ns, func(c *emulator.Config) {
		c.DataPlane = dataplane.ForEmulator(plane)
		c.VIPBase, c.VIP6Base, c.VIP6PoolSize = "127.64.0.1", vip, 1
	})
	cr := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lb6"}}
	cr.Spec.ForProvider.Type, cr.Spec.ForProvider.AddressIPVersion = clb.Ptr("OPEN"), clb.Ptr("IPv6FullChain")
	cr.Spec.ForProvider.SubnetID = clb.Ptr("subnet-v6")
	cr.Spec.ProviderConfigReference = ref
	if err := kube.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	if o := cr.Status.AtProvider; o.AddressIPv6 != vip || len(o.VIPs) != 1 || o.VIPs[0] != vip {
		t.Errorf("LoadBalancer status: addressIPv6 %q, vips %v, want %s", o.AddressIPv6, o.VIPs, vip)
	}

	pp := pool(t, ns, "pool6", []string{"lb6"}, 53000, 53004, func(pp *clbv1alpha1.PortPool) { pp.Spec.ProviderConfigReference = ref })
	if l := pp.Status.AtProvider.LoadBalancers[0]; len(l.VIPs) != 1 || l.VIPs[0] != vip || l.AddressIPVersion != "ipv6" || l.IPv6Mode != clb.IPv6ModeFullChain {
		t.Errorf("PortPool status of the load balancer: %+v", l)
	}

	srv := testenv.StartEcho(t, "pod6", net.JoinHostPort(podIP6, "0"))
	port := srv.Port()
	p := pod(t, ns, "gs6", "", map[string]string{ourPorts: fmt.Sprintf("%d pool6", port)},
		corev1.ContainerPort{ContainerPort: port, Protocol: corev1.ProtocolTCP})
	eventually(t, "the Pod's dual-stack IPs", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase, p.Status.PodIP, p.Status.HostIP = corev1.PodRunning, "10.64.0.5", "10.0.0.1"
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.64.0.5"}, {IP: podIP6}}
		return kube.Status().Update(context.Background(), p)
	})

	b := bound(t, ns, p.Name).Status.Bindings[0]
	addr := net.JoinHostPort(vip, strconv.Itoa(int(b.Port)))
	if b.TargetIP != podIP6 || b.Address != addr {
		t.Errorf("binding: target %s, address %s; want %s and %s", b.TargetIP, b.Address, podIP6, addr)
	}
	eventually(t, "the Pod told "+addr, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if got := p.Annotations[podannotation.AnnotationAddresses]; !strings.Contains(got, `"address":"`+addr+`"`) {
			return errors.Errorf("%s: %s", podannotation.AnnotationAddresses, got)
		}
		return nil
	})
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

// TestIPv6Example applies examples/clb/portpool-ipv6.yaml: the
// IPv6FullChain LoadBalancer and its pool come up with the load balancer's
// IPv6 address as their VIP, the NAT64 pool creates an IPV6 load balancer,
// and the example's Pod, given a dual-stack address, is bound to its IPv6
// address and told [VIP]:port.
func TestIPv6Example(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "clb", "portpool-ipv6.yaml")); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]string{"rooms-v6": clb.IPv6ModeFullChain, "rooms-nat64": clb.IPv6ModeNAT64} {
		pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "examples", Name: name}}
		waitReady(t, pp)
		l := pp.Status.AtProvider.LoadBalancers[0]
		if a, err := netip.ParseAddr(firstOf(l.VIPs)); err != nil || !a.Is6() || l.AddressIPVersion != "ipv6" || l.IPv6Mode != mode {
			t.Errorf("%s: load balancer %+v, want an IPv6 VIP and mode %s", name, l, mode)
		}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "examples", Name: "room-v6"}}
	eventually(t, "the Pod's dual-stack IPs", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase, p.Status.PodIP, p.Status.HostIP = corev1.PodRunning, "10.65.0.5", "10.0.0.1"
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.65.0.5"}, {IP: "fd00:65::5"}}
		return kube.Status().Update(ctx, p)
	})
	b := bound(t, "examples", p.Name).Status.Bindings[0]
	if want := net.JoinHostPort(firstOf(b.VIPs), strconv.Itoa(int(b.Port))); b.TargetIP != "fd00:65::5" || b.Address != want || b.Protocol != "UDP" {
		t.Errorf("binding %+v, want target fd00:65::5 and address %s", b, want)
	}
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
