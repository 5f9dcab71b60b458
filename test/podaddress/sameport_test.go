package podaddress

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// TestTKESamePortAcrossPools: tke-extend's multi-ISP line with
// useSamePortAcrossPools, with the default Dynamic strategy, binds the
// port on one public port in both pools, the lowest free in both (45600 is
// taken in cmcc). When the ctcc load balancer it is on is drained and its
// port is taken on the pool's other one, both bindings move to a new port
// free in both pools (a move to the same port on another load balancer is
// TestSamePortMoves' and TestAllocateSamePort's, in the allocation
// package).
func TestTKESamePortAcrossPools(t *testing.T) {
	startProvider(t, suite.PodAddress(podaddress.Options{PodEvents: podaddress.PodEventsAll}))
	ns := namespace(t)
	c1, c2, m1 := lbID(lb(t, ns, "c1", "CTCC")), lbID(lb(t, ns, "c2", "CTCC")), lbID(lb(t, ns, "m1", "CMCC"))
	udp := func(pp *clbv1alpha1.PortPool) { pp.Spec.ForProvider.Protocols = []string{"UDP"} }
	ctcc := pool(t, ns, "ctcc", []string{"c1", "c2"}, 45600, 45604, udp)
	pool(t, ns, "cmcc", []string{"m1"}, 45600, 45604, udp)
	port := corev1.ContainerPort{ContainerPort: 8000, Protocol: corev1.ProtocolUDP}
	tke := func(line string) map[string]string {
		return map[string]string{podannotation.TKEAnnotationEnableMapping: "true", podannotation.TKEAnnotationPortMapping: line}
	}
	pod(t, ns, "other", "10.46.0.9", tke("8000 UDP "+ns+"/cmcc"), port)
	bound(t, ns, "other")

	// boundAt waits until gs-0 holds one public port in both pools, its
	// ctcc binding on ctccLB, registered and told, and returns the port.
	boundAt := func(ctccLB string, not int32) int32 {
		t.Helper()
		var at int32
		eventually(t, "gs-0 bound on one port, ctcc on "+ctccLB, func() error {
			pa := &v1alpha1.PodAddress{}
			if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "gs-0"}, pa); err != nil {
				return err
			}
			if pa.Status.State != v1alpha1.StateBound || len(pa.Status.Bindings) != 2 {
				return errors.Errorf("state %q, %d bindings: %s", pa.Status.State, len(pa.Status.Bindings), pa.Status.Message)
			}
			at = pa.Status.Bindings[0].Port
			for _, b := range pa.Status.Bindings {
				if b.Port != at || b.Port == not {
					return errors.Errorf("ports %d and %d (not %d wanted)", pa.Status.Bindings[0].Port, pa.Status.Bindings[1].Port, not)
				}
				if want := map[string]string{ns + "/ctcc": ctccLB, ns + "/cmcc": m1}[b.Pool]; b.LoadBalancerID != want {
					return errors.Errorf("%s bound on %s, want %s", b.Pool, b.LoadBalancerID, want)
				}
				if ts := cloudTargets(b.LoadBalancerID, b.ListenerIDs["UDP"]); !slices.Equal(ts, []string{"10.46.0.1:8000"}) {
					return errors.Errorf("%s port %d forwards to %v", b.LoadBalancerID, b.Port, ts)
				}
			}
			p := &corev1.Pod{}
			if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "gs-0"}, p); err != nil {
				return err
			}
			for _, lbID := range []string{ctccLB, m1} {
				if res := p.Annotations[podannotation.TKEAnnotationMappingResult]; !strings.Contains(res, fmt.Sprintf(`"loadbalancerId":"%s","loadbalancerPort":%d`, lbID, at)) {
					return errors.Errorf("the Pod is told %s", res)
				}
			}
			return nil
		})
		return at
	}

	pod(t, ns, "gs-0", "10.46.0.1", tke(fmt.Sprintf("8000 UDP %s/ctcc,%s/cmcc useSamePortAcrossPools", ns, ns)), port)
	if at := boundAt(c1, 0); at != 45601 {
		t.Errorf("gs-0 bound on %d, want 45601: the lowest port free in both pools", at)
	}

	// Three more Pods in ctcc alone fill c2's 45600 and 45601 (and c1's
	// 45600), so that 45601 is free on no other ctcc load balancer.
	for i := range 3 {
		name := fmt.Sprintf("ctcc-%d", i)
		pod(t, ns, name, fmt.Sprintf("10.46.1.%d", i+1), tke("8000 UDP "+ns+"/ctcc"), port)
		bound(t, ns, name)
	}
	updatePool(t, ctcc, func(pp *clbv1alpha1.PortPool) { pp.Spec.ForProvider.Drain = []string{c1} })
	if at := boundAt(c2, 45601); at < 45602 {
		t.Errorf("gs-0 moved to %d in both pools, want a port above 45601 (45600 and 45601 are taken on c2)", at)
	} else {
		t.Logf("gs-0 moved from 45601 to %d in both pools", at)
	}
	podEvent(t, ns, "gs-0", "AddressMoved")
}
