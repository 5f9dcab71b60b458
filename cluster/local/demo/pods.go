package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

// podIP is the "Pod IP" of the demo's battle server: a loopback address,
// so a local process can play the Pod and the emulated VIP can reach it.
const podIP = "127.0.2.1"

// podDemo applies the port pool example, runs a battle server as a Pod
// (there is no kubelet: the demo creates the Pod and sets its IP, and a
// local process listens on that IP), waits for the Pod's public address
// and plays a round trip through it. It returns the objects to delete.
func podDemo(ctx context.Context, kube client.Client, timeout time.Duration) ([]client.Object, error) {
	step("applying examples/clb/portpool.yaml: port pools whose listeners are created ahead of time")
	pools, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "clb", "portpool.yaml"))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for _, o := range pools {
		if err := waitReady(ctx, kube, o, timeout); err != nil {
			return nil, err
		}
	}
	fmt.Printf("    %d objects Ready in %s\n", len(pools), time.Since(start).Round(time.Millisecond))
	objs := make([]client.Object, 0, len(pools)+1)
	for _, o := range pools {
		objs = append(objs, o)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(podIP, "7777"))
	if err != nil {
		return objs, fmt.Errorf("cannot play the battle server on %s:7777: %w", podIP, err)
	}
	defer func() { _ = ln.Close() }()
	serveEcho(ln)

	step("creating Pod examples/battle-0 that asks for a public TCP address for its port \"game\" (Pod IP %s)", podIP)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "examples", Name: "battle-0", Annotations: map[string]string{
			podannotation.AnnotationPorts: "game/TCP rooms-tcp",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "server", Image: "example/battle-server:1.0",
			Ports: []corev1.ContainerPort{{Name: "game", ContainerPort: 7777, Protocol: corev1.ProtocolTCP}},
		}}},
	}
	created := time.Now()
	if err := kube.Create(ctx, pod); err != nil {
		return objs, err
	}
	objs = append([]client.Object{pod}, objs...)
	pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, podIP
	if err := kube.Status().Update(ctx, pod); err != nil {
		return objs, err
	}

	var addr string
	err = testenv.Eventually(ctx, timeout, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		as, err := podannotation.ParseAddresses(pod.Annotations[podannotation.AnnotationAddresses])
		if err != nil || len(as) == 0 || pod.Annotations[podannotation.AnnotationStatus] != podannotation.StatusReady {
			return fmt.Errorf("the Pod is not told its address yet: %w", err)
		}
		addr = as[0].Address
		return nil
	})
	if err != nil {
		return objs, err
	}
	pa := &v1alpha1.PodAddress{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pa); err != nil {
		return objs, err
	}
	fmt.Printf("    PodAddress %s: %s, %s after the Pod was created\n", pa.Name, pa.Status.State, time.Since(created).Round(time.Millisecond))
	fmt.Printf("    the Pod's annotation %s = %s\n", podannotation.AnnotationAddresses, pod.Annotations[podannotation.AnnotationAddresses])

	step("a player connects to the Pod's public address %s", addr)
	reply, err := roundTrip(ctx, addr, "join room 42")
	if err != nil {
		return objs, fmt.Errorf("round trip through %s: %w", addr, err)
	}
	fmt.Printf("    sent %q, the battle server answered %q\n", "join room 42", reply)
	return objs, nil
}

// deleteAll deletes objects in order, waiting for each to be gone, so that
// Pods go before the pools they bind and pools before their load balancers.
func deleteAll(ctx context.Context, kube client.Client, objs []client.Object, timeout time.Duration) error {
	for _, o := range objs {
		if err := client.IgnoreNotFound(kube.Delete(ctx, o)); err != nil {
			return err
		}
		if _, isPod := o.(*corev1.Pod); !isPod {
			continue
		}
		// The Pod's binding must be gone before its pool may go.
		err := testenv.Eventually(ctx, timeout, func() error {
			err := kube.Get(ctx, client.ObjectKeyFromObject(o), &v1alpha1.PodAddress{})
			if client.IgnoreNotFound(err) == nil && err != nil {
				return nil
			}
			return fmt.Errorf("PodAddress %s still exists", o.GetName())
		})
		if err != nil {
			return err
		}
	}
	return nil
}
