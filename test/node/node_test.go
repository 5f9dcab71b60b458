// Package node_test runs the real node of internal/tooling/node: a Pod really
// runs, gets an address of each family on the bridge and answers on both, and a stopped node
// leaves the machine as it found it.
package node_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/images"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

func TestNodeRunsPodsAndLeavesNothing(t *testing.T) {
	if err := node.Supported(); err != nil {
		t.Fatalf("this suite needs the real node: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The machine's state is read under the node lock: no other node may
	// change it in between.
	lock, err := node.AcquireLock(ctx, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	before, err := node.ReadHostState(node.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := node.ControlPlane(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()

	start := time.Now()
	n, err := node.Start(ctx, node.Options{Env: env, Lock: lock})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node Ready in %s: %v", time.Since(start).Round(time.Millisecond), n.Timings)
	stopped := false
	defer func() {
		if !stopped {
			_ = n.Stop()
		}
	}()
	if err := node.CheckRoutes(); err != nil {
		t.Fatalf("a Pod or Service address can leave the machine: %v", err)
	}
	img, err := images.GameServer(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	game := n.Registry() + "/ptn/gameserver:test"
	if err := xpkgbuild.Push(ctx, img, game); err != nil {
		t.Fatal(err)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "game", Image: game,
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			}},
		},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	var ip netip.Addr
	err = testenv.Eventually(ctx, 2*time.Minute, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
			return fmt.Errorf("pod %s, IP %q: %+v", pod.Status.Phase, pod.Status.PodIP, pod.Status.Conditions)
		}
		ip, err = netip.ParseAddr(pod.Status.PodIP)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !node.NodePodCIDR().Contains(ip) {
		t.Fatalf("Pod IP %s is not in the node's Pod subnet %s", ip, node.NodePodCIDR())
	}
	// Dual-stack: the Pod's second address is an IPv6 one on the bridge.
	var ip6 netip.Addr
	for _, p := range pod.Status.PodIPs {
		if a, err := netip.ParseAddr(p.IP); err == nil && a.Is6() {
			ip6 = a
		}
	}
	if !node.NodePodCIDR6().Contains(ip6) {
		t.Fatalf("Pod IPs %v: none in the node's IPv6 Pod subnet %s", pod.Status.PodIPs, node.NodePodCIDR6())
	}
	for _, a := range []netip.Addr{ip, ip6} {
		var reply string
		err = testenv.Eventually(ctx, time.Minute, func() error {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(a.String(), "7777"), 2*time.Second)
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := fmt.Fprintln(c, "ping"); err != nil {
				return err
			}
			reply, err = bufio.NewReader(c).ReadString('\n')
			return err
		})
		if err != nil {
			t.Fatalf("no answer from the Pod at %s: %v", a, err)
		}
		if !strings.Contains(reply, "ping") || !strings.Contains(reply, "echo") {
			t.Fatalf("reply %q from %s does not echo ping from Pod echo", reply, a)
		}
	}

	stopped = true
	if err := n.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	after, err := node.ReadHostState(node.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("the stopped node left the machine changed (-before +after):\n%s", d)
	}
	if _, err := os.Stat(node.DefaultDir); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", node.DefaultDir, err)
	}
}
