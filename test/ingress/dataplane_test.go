package ingress

import (
	"fmt"
	"net"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestScenario2DataPlane: scenario 2 (CLB straight to the Pods) with
// traffic. Each Pod has a VPC address of vpcLoopbackCIDR and its server
// listens on that address's loopback image, where the emulator's data
// plane and health probes reach it. The test reads the VIP:port and the
// backends' health from the Ingress's status, as a kubectl user would.
func TestScenario2DataPlane(t *testing.T) {
	t.Parallel()
	ns, lb := "s2dp", existingLB(t, "s2dp")
	suite.Namespace(t, ns)
	node(t, "s2dp-a", "ins-s2dpa")
	pods := map[string]string{"test-svc-0": "10.250.12.10", "test-svc-1": "10.250.12.11"}
	servers := echoServers(t, map[string]string{"test-svc-0": "127.250.12.10", "test-svc-1": "127.250.12.11"})
	port := servers["test-svc-0"].Port()
	svc := newService(t, ns, "test-svc", 28080, port)
	for _, p := range []string{"test-svc-0", "test-svc-1"} {
		svc.add(t, p, pods[p], "s2dp-a", 0)
	}
	in := seed(t, "s2-direct.yaml", "lb-xxxxxxx", lb, "default", ns)
	apply(t, in)
	target := func(pod string) string { return fmt.Sprintf("%s:%d", pods[pod], port) }

	waitHealth(t, "both backends Healthy", ns, in.GetName(),
		map[string]string{target("test-svc-0"): "Healthy", target("test-svc-1"): "Healthy"})
	vip := listenerAddress(t, ns, in.GetName())

	// Round robin over the two targets: both Pods answer.
	seen := map[string]bool{}
	eventually(t, "both Pods answer through "+vip, func() error {
		got, err := testenv.RoundTrip(vip, "hello")
		if err != nil {
			return err
		}
		seen[got] = true
		if !seen["test-svc-0"] || !seen["test-svc-1"] {
			return fmt.Errorf("answered so far: %v", seen)
		}
		return nil
	})

	// A Pod whose server stops fails the load balancer's check.
	servers["test-svc-1"].Stop()
	waitHealth(t, "the stopped server's backend Unhealthy", ns, in.GetName(),
		map[string]string{target("test-svc-0"): "Healthy", target("test-svc-1"): "Unhealthy"})

	// Scaled down: the deleted Pod's target leaves the cloud and the
	// status, and every connection reaches the remaining Pod. The data
	// plane alternates between registered targets without retrying, so
	// consecutive answers from test-svc-0 show test-svc-1 is gone.
	svc.drop(t, "test-svc-1")
	waitView(t, "the deleted Pod's target leaves", lb, cloudView{"TCP 38080": {target("test-svc-0"): 10}})
	waitHealth(t, "one backend left", ns, in.GetName(), map[string]string{target("test-svc-0"): "Healthy"})
	eventually(t, "every round trip reaches test-svc-0", func() error {
		for range 4 {
			got, err := testenv.RoundTrip(vip, "hello")
			if err != nil {
				return err
			}
			if got != "test-svc-0" {
				return fmt.Errorf("answered by %q", got)
			}
		}
		return nil
	})
	remove(t, in, lb)
}

// echoServers starts one server per Pod, each on its address (Pod → its
// loopback image), all on one port as a Service's target port is.
func echoServers(t testing.TB, addrs map[string]string) map[string]*testenv.EchoServer {
	t.Helper()
	out := map[string]*testenv.EchoServer{}
	port := "0"
	for pod, addr := range addrs {
		out[pod] = testenv.StartEcho(t, pod, net.JoinHostPort(addr, port))
		port = strconv.Itoa(int(out[pod].Port()))
	}
	return out
}

// ruleListener returns the first rule's only listener in the Ingress's
// status, and the status.
func ruleListener(t testing.TB, ns, name string) (map[string]any, map[string]any, error) {
	st := ingressStatus(t, xrIngress, ns, name)
	rules, _, _ := unstructured.NestedSlice(st, "rules")
	if len(rules) != 1 {
		return nil, st, fmt.Errorf("status %v", st)
	}
	ls, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "listeners")
	if len(ls) != 1 {
		return nil, st, fmt.Errorf("status %v", st)
	}
	return ls[0].(map[string]any), st, nil
}

// listenerAddress returns the rule's VIP:port from the status.
func listenerAddress(t testing.TB, ns, name string) string {
	t.Helper()
	var addr string
	eventually(t, "the listener's address in the status", func() error {
		l, _, err := ruleListener(t, ns, name)
		if err != nil {
			return err
		}
		as, _, _ := unstructured.NestedStringSlice(l, "addresses")
		if len(as) != 1 {
			return fmt.Errorf("listener %v", l)
		}
		addr = as[0]
		return nil
	})
	return addr
}

// waitHealth waits until the status shows exactly these backends
// ("ip:port") with these verdicts, and counts them in BACKENDS and
// HEALTHY.
func waitHealth(t testing.TB, what, ns, name string, want map[string]string) {
	t.Helper()
	healthy := int64(0)
	for _, h := range want {
		if h == "Healthy" {
			healthy++
		}
	}
	eventually(t, what, func() error {
		l, st, err := ruleListener(t, ns, name)
		if err != nil {
			return err
		}
		bs, _, _ := unstructured.NestedSlice(l, "backends")
		got := map[string]string{}
		for _, b := range bs {
			b := b.(map[string]any)
			h, _ := b["health"].(string)
			got[fmt.Sprintf("%v:%v", b["ip"], b["port"])] = h
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || st["backends"] != int64(len(want)) || st["healthyBackends"] != healthy {
			return fmt.Errorf("backends %v, BACKENDS %v, HEALTHY %v; want %v", got, st["backends"], st["healthyBackends"], want)
		}
		return nil
	})
}
