package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// everyProtocol is one pool per protocol a Pod can ask for, 10 ports each
// on one load balancer; TCP_SSL and QUIC listeners carry a certificate.
var everyProtocol = []struct {
	pool, protocol string
	protocols      []string // of the pool's listeners
	port           int32    // container port
	cert           string
}{
	{"tcp", "TCP", []string{"TCP"}, 7000, ""},
	{"udp", "UDP", []string{"UDP"}, 7001, ""},
	{"tcpudp", "TCP_UDP", []string{"TCP", "UDP"}, 7002, ""},
	{"ssl", "TCP_SSL", []string{"TCP_SSL"}, 7003, "cert-ssl"},
	{"quic", "QUIC", []string{"QUIC"}, 7004, "cert-quic"},
}

const portsPerProtocolPool = 10

// protocolPod creates a Pod with one port from every pool of
// everyProtocol and gives it an IP.
func protocolPod(ctx context.Context, ns string, i int) error {
	ann := ""
	var ports []corev1.ContainerPort
	for _, p := range everyProtocol {
		ann += fmt.Sprintf("%d/%s %s;", p.port, p.protocol, p.pool)
		switch p.protocol {
		case "UDP", "QUIC":
			ports = append(ports, corev1.ContainerPort{ContainerPort: p.port, Protocol: corev1.ProtocolUDP})
		case "TCP_UDP":
			ports = append(ports, corev1.ContainerPort{ContainerPort: p.port, Protocol: corev1.ProtocolTCP},
				corev1.ContainerPort{ContainerPort: p.port, Protocol: corev1.ProtocolUDP})
		default:
			ports = append(ports, corev1.ContainerPort{ContainerPort: p.port, Protocol: corev1.ProtocolTCP})
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gs-%d", i), Annotations: map[string]string{portsAnnotation: ann}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server", Ports: ports}}},
	}
	return testenv.RunPod(ctx, kube, pod, fmt.Sprintf("10.71.0.%d", i+1), wait)
}

// TestRestartEveryProtocol binds Pods with a TCP, UDP, TCP_UDP, TCP_SSL
// and QUIC port each, SIGKILLs the provider while two more are binding,
// and fills every pool with a fresh provider. No port may be handed out
// twice, no Pod bound before the kill may have moved, and the cloud must
// hold exactly one target per bound listener.
func TestRestartEveryProtocol(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	emu, ref := startCloud(t, ns, 100)
	p := startProvider(t, "first")
	names, _ := lbs(t, ns, 1, ref)
	for i, pp := range everyProtocol {
		start := int64(43000 + 100*i)
		pool(t, ns, pp.pool, ref, names, start, start+portsPerProtocolPool-1, pp.protocols, func(p *clbv1alpha1.PortPool) {
			if pp.cert != "" {
				p.Spec.ForProvider.Listener = &clbv1alpha1.PoolListenerSettings{Certificate: &clbv1alpha1.Certificate{CertID: pp.cert}}
			}
		})
	}
	base := shapeOf(emu)

	const before = 5
	for i := range before {
		if err := protocolPod(ctx, ns, i); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the first Pods Bound", func() error { return allBound(ns, before) })
	pas, err := podAddresses(ns)
	if err != nil {
		t.Fatal(err)
	}
	was := bindingsOf(pas)
	for name, pa := range pas {
		if len(pa.Status.Bindings) != len(everyProtocol) {
			t.Errorf("%s has %d bindings, want one per protocol: %s", name, len(pa.Status.Bindings), was[name])
		}
	}

	// Two more Pods, and the provider killed while they bind.
	var wg sync.WaitGroup
	for i := before; i < before+2; i++ {
		wg.Go(func() {
			if err := protocolPod(ctx, ns, i); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The moment of the kill is the test's input, not a wait for a
	// condition.
	time.Sleep(time.Duration(rand.Int64N(int64(300 * time.Millisecond)))) //nolint:gosec // a test's schedule
	bound := countBound(ns)
	p.Kill()
	t.Logf("provider SIGKILLed with %d of %d Pods Bound", bound, before+2)
	startProvider(t, "second")
	for i := before + 2; i < portsPerProtocolPool; i++ {
		if err := protocolPod(ctx, ns, i); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every pool full, every Pod Bound", func() error { return allBound(ns, portsPerProtocolPool) })

	if pas, err = podAddresses(ns); err != nil {
		t.Fatal(err)
	}
	moved, dups := kept(t, was, pas, "the restart")
	leaks := matches(t, ns, emu, base)
	t.Logf("SUMMARY restart with every protocol: protocols=%d pods=%d kills=1 rebound=%d duplicates=%d leaks=%d targets=%d",
		len(everyProtocol), portsPerProtocolPool, moved, len(dups), len(leaks), len(shapeOf(emu).targets))
}
