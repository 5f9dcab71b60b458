package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpcluster"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// runOnNode is the demo on the real node (internal/tooling/deployed): Crossplane
// from its chart runs the packages as Pods, the game server is a real
// StatefulSet, and the real garbage collector collects the claim.
func runOnNode(ctx context.Context, say narrator, wait time.Duration) (err error) {
	work, err := os.MkdirTemp("", "ptn-demo-")
	if err != nil {
		return err
	}
	say.step("starting the product on a real node (Linux, root): control plane, node, CoreDNS, emulated cloud, Crossplane from its chart, our packages")
	c, err := deployed.Start(ctx, deployed.Options{Dir: work, Version: version, Wait: wait,
		Say: func(f string, a ...any) { fmt.Printf("    "+f+"\n", a...) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: logs are in", work)
		return err
	}
	defer func() {
		say.step("stopping everything; the node leaves the machine as it found it")
		err = errors.Join(err, c.Stop())
		if err == nil {
			_ = os.RemoveAll(work)
		} else {
			fmt.Fprintln(os.Stderr, "demo: logs are in", work)
		}
	}()
	for _, t := range c.Timings {
		fmt.Printf("    %-62s %s\n", t.Step, t.Took.Round(100*time.Millisecond))
	}
	if err := printPackages(ctx, c.Kube); err != nil {
		return err
	}
	for _, label := range []string{"pkg.crossplane.io/provider=" + xplocal.ProviderPackage, "pkg.crossplane.io/function=" + xplocal.FunctionPackage} {
		k, v, _ := strings.Cut(label, "=")
		pods, err := deployed.PodsOf(ctx, c.Kube, xpcluster.Namespace, k, v)
		if err != nil {
			return err
		}
		for _, p := range pods {
			fmt.Printf("    Pod %-58s image %s, node %s, Pod IP %s\n", p.Name, p.Spec.Containers[0].Image, p.Spec.NodeName, p.Status.PodIP)
		}
	}

	image, err := c.PushGameServer(ctx)
	if err != nil {
		return err
	}
	say.step("creating the game server's PodPublicAddress (cluster/local/demo/gameserver.yaml)")
	xr := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(gameServerYAML, &xr.Object); err != nil {
		return err
	}
	if err := c.Kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gameNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	if err := c.Kube.Create(ctx, xr); err != nil {
		return err
	}
	g := &game{say: say, kube: c.Kube, cloud: c.Cloud, wait: wait}
	if err := g.waitComposite(ctx, xr); err != nil {
		return err
	}
	printComposite(xr)

	say.step("running the game server as a StatefulSet of %s (each Pod waits for its address through a readiness gate)", image)
	sts := deployed.GameStatefulSet(gameNamespace, gameName, image, 0)
	if err := c.Kube.Create(ctx, sts); err != nil {
		return err
	}
	for _, n := range []int32{3, 5, 2, 0} {
		say.step("scaling the StatefulSet to %d Pods", n)
		began := time.Now()
		if err := c.Kube.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			return err
		}
		sts.Spec.Replicas = ptr.To(n)
		if err := c.Kube.Update(ctx, sts); err != nil {
			return err
		}
		if err := showPods(ctx, c, int(n), wait, began); err != nil {
			return err
		}
	}

	say.step("deleting the PodPublicAddress; Kubernetes' garbage collector deletes what it composed")
	began := time.Now()
	if err := c.Kube.Delete(ctx, xr); err != nil {
		return err
	}
	err = testenv.Eventually(ctx, wait, func() error {
		inv := c.Cloud.Inventory()
		if len(inv.LoadBalancers) != 0 || inv.RunningTasks != 0 {
			return fmt.Errorf("%d load balancers (%d listeners) and %d running tasks left in the cloud", len(inv.LoadBalancers), inv.Listeners(), inv.RunningTasks)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("    collected in %s: 0 load balancers, 0 listeners, 0 running tasks: nothing leaked\n", since(began))
	return c.Kube.Delete(ctx, sts)
}

// showPods waits until the n Pods are bound and Ready and the others'
// addresses released, and prints each Pod with a round trip through its
// address.
func showPods(ctx context.Context, c *deployed.Cluster, n int, wait time.Duration, began time.Time) error {
	pods := map[int]*corev1.Pod{}
	bound := map[int]networkv1alpha1.PortBinding{}
	err := testenv.Eventually(ctx, wait, func() error {
		var l networkv1alpha1.PodAddressList
		if err := c.Kube.List(ctx, &l, client.InNamespace(gameNamespace)); err != nil {
			return err
		}
		if len(l.Items) != n {
			return fmt.Errorf("%d PodAddresses for %d Pods", len(l.Items), n)
		}
		for i := range n {
			p := &corev1.Pod{}
			if err := c.Kube.Get(ctx, client.ObjectKey{Namespace: gameNamespace, Name: podName(i)}, p); err != nil {
				return err
			}
			pa := &networkv1alpha1.PodAddress{}
			if err := c.Kube.Get(ctx, client.ObjectKeyFromObject(p), pa); err != nil {
				return err
			}
			if pa.Status.State != networkv1alpha1.StateBound || len(pa.Status.Bindings) != 1 || !ready(p) {
				return fmt.Errorf("%s: %s, Ready %v", p.Name, pa.Status.State, ready(p))
			}
			pods[i], bound[i] = p, pa.Status.Bindings[0]
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		fmt.Printf("    every address released in %s\n", since(began))
		return nil
	}
	fmt.Printf("    %d Pods Ready with their public address %s after the change\n", n, since(began))
	fmt.Printf("    %-14s %-12s %-32s %-17s %-15s %s\n", "POD", "POD IP", "READY (ADDRESS CONDITION)", "PUBLIC ADDRESS", "TCP ROUND TRIP", "UDP ROUND TRIP")
	for i := range n {
		b := bound[i]
		tcp, udp, err := deployed.RoundTrip(ctx, b.Address, podName(i), wait)
		if err != nil {
			return fmt.Errorf("round trip through %s to %s: %w", b.Address, podName(i), err)
		}
		fmt.Printf("    %-14s %-12s %-32s %-17s %-15s %s\n", podName(i), pods[i].Status.PodIP, readiness(pods[i]), b.Address, rtt(tcp), rtt(udp))
	}
	return nil
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readiness says when the kubelet made the Pod Ready and when its address
// condition turned True.
func readiness(p *corev1.Pod) string {
	var r, a time.Time
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case corev1.PodReady:
			r = c.LastTransitionTime.Time
		case podannotation.ConditionAddressReady:
			a = c.LastTransitionTime.Time
		}
	}
	return fmt.Sprintf("%s (%s)", r.Format("15:04:05"), a.Format("15:04:05"))
}
