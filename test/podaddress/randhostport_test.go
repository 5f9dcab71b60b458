package podaddress

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/randhostport"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	pwebhook "github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

// These tests run the random hostPort webhook on the provider's webhook
// server, next to the per-Pod address one, as cmd/provider does, with the
// package's webhook configuration installed. Each uses a host port range of
// its own, so that the Pods of one do not count in another's.

// startRandHostPort runs a provider serving both webhooks, the random
// hostPort one picking from r.
func startRandHostPort(t *testing.T, r randhostport.Range) (*randhostport.Webhook, func()) {
	t.Helper()
	w := randhostport.New(r, logging.NewNopLogger())
	stop := startWebhooks(t, pwebhook.Options{
		Admission:    pwebhook.NewAdmission(pwebhook.DefaultAdmissionGrace, logging.NewNopLogger()),
		RandHostPort: w,
	})
	return w, stop
}

// randHostPortExample applies examples/network/randhostport.yaml in a new
// namespace and returns the namespace and the Deployment.
func randHostPortExample(t *testing.T) (string, *appsv1.Deployment) {
	t.Helper()
	ns := namespace(t)
	objs, err := testenv.Apply(context.Background(), kube, filepath.Join(testenv.RepoRoot(), "examples", "network", "randhostport.yaml"),
		func(u *unstructured.Unstructured) { u.SetNamespace(ns) })
	if err != nil || len(objs) != 1 {
		t.Fatalf("randhostport example: %d objects, %v", len(objs), err)
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, d); err != nil {
		t.Fatal(err)
	}
	// Pods are deleted at once (there is no kubelet): the ports they held
	// are not counted in a later test of the same run.
	t.Cleanup(func() {
		_ = kube.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	})
	return ns, d
}

// templatePod is a Pod of d as its ReplicaSet would create it (the local
// control plane runs no controller manager).
func templatePod(ns string, d *appsv1.Deployment) *corev1.Pod {
	tmpl := d.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: d.Name + "-", Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec:       tmpl.Spec,
	}
}

// hostPortsOf returns the host ports of p's container ports, by container
// port, after checking that the labels, the environment and the
// anti-affinity say the same.
func hostPortsOf(t *testing.T, p *corev1.Pod) map[int32]int32 {
	t.Helper()
	got := map[int32]int32{}
	c := p.Spec.Containers[0]
	for _, cp := range c.Ports {
		if cp.HostPort == 0 {
			continue
		}
		got[cp.ContainerPort] = cp.HostPort
		hp := strconv.Itoa(int(cp.HostPort))
		if v, _ := envOf(c, randhostport.EnvPortPrefix+strconv.Itoa(int(cp.ContainerPort))); v != hp {
			t.Errorf("Pod %s: container port %d has hostPort %s, env says %q", p.Name, cp.ContainerPort, hp, v)
		}
		if v := p.Labels[randhostport.Label(cp.HostPort)]; v != hp {
			t.Errorf("Pod %s: label %s=%q, want %q", p.Name, randhostport.Label(cp.HostPort), v, hp)
		}
	}
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil || len(p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != len(got) {
		t.Errorf("Pod %s: affinity %+v, want a required anti-affinity term per host port", p.Name, p.Spec.Affinity)
	}
	return got
}

// waitServed waits until the API server calls the webhook of a freshly
// installed configuration: a dry run of p comes back with host ports.
func waitServed(t *testing.T, p *corev1.Pod) {
	t.Helper()
	eventually(t, "the random hostPort webhook called", func() error {
		dry := p.DeepCopy()
		if err := kube.Create(context.Background(), dry, client.DryRunAll); err != nil {
			return err
		}
		if dry.Spec.Containers[0].Ports[0].HostPort == 0 {
			return errors.New("dry run not mutated yet")
		}
		return nil
	})
}

// injected is what testdata/injected-pod.yaml is compared on.
func injected(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}}
	for _, c := range p.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image, Ports: c.Ports, Env: c.Env})
	}
	out.Spec.Affinity = p.Spec.Affinity
	return out
}

// TestRandHostPortGolden: the seed's Deployment (examples/network/randhostport.yaml)
// gives Pods mutated as the seed's injected Pod
// (internal/randhostport/testdata/injected-pod.yaml) with the real
// kube-apiserver calling the webhook; the next replicas get the next least
// used ports; a dry run counts nothing.
func TestRandHostPortGolden(t *testing.T) {
	startRandHostPort(t, randhostport.Range{Min: 29001, Max: 29323})
	ns, d := randHostPortExample(t)
	ctx := context.Background()
	waitServed(t, templatePod(ns, d))

	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "internal", "randhostport", "testdata", "injected-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	golden := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(raw, golden); err != nil {
		t.Fatal(err)
	}

	var pods []*corev1.Pod
	for range *d.Spec.Replicas {
		p := templatePod(ns, d)
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	// Read back as stored.
	first := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(pods[0]), first); err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(injected(golden), injected(first)); diff != "" {
		t.Errorf("the first Pod differs from the golden injected Pod (-want +got):\n%s", diff)
	}
	for i, p := range pods[1:] {
		want := map[int32]int32{8080: int32(29003 + 2*i), 8081: int32(29004 + 2*i)}
		if got := hostPortsOf(t, p); !gocmp.Equal(got, want) {
			t.Errorf("replica %d: host ports %v, want %v", i+2, got, want)
		}
	}
}

// TestRandHostPortBalanced: 1000 Pods (two ports each, created five at a
// time through the real kube-apiserver calling the webhook) on a range of
// 100 ports: every port holds 20 Pods. Pods going away free their ports:
// once the webhook has seen them go, the next Pod gets the freed port.
func TestRandHostPortBalanced(t *testing.T) {
	r := randhostport.Range{Min: 40000, Max: 40099}
	w, _ := startRandHostPort(t, r)
	ns, d := randHostPortExample(t)
	ctx := context.Background()
	waitServed(t, templatePod(ns, d))

	var mu sync.Mutex
	var pods []*corev1.Pod
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			for range 200 {
				p := templatePod(ns, d)
				if err := kube.Create(ctx, p); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				pods = append(pods, p)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	counts := map[int32]int{}
	byPort := map[int32][]*corev1.Pod{}
	for _, p := range pods {
		hps := hostPortsOf(t, p)
		if len(hps) != 2 || hps[8080] == hps[8081] {
			t.Fatalf("Pod %s: host ports %v, want two distinct", p.Name, hps)
		}
		for _, hp := range hps {
			counts[hp]++
			byPort[hp] = append(byPort[hp], p)
		}
	}
	for port := r.Min; port <= r.Max; port++ {
		if counts[port] != 20 {
			t.Errorf("port %d holds %d Pods, want 20 (counts %v)", port, counts[port], counts)
		}
	}

	// The Pods of port 40007 go away, freeing their other port too: the
	// next Pod gets the two least used ports, 40007 one of them.
	for _, p := range byPort[40007] {
		if err := kube.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		for _, hp := range hostPortsOf(t, p) {
			counts[hp]--
		}
	}
	eventually(t, "the deletions counted", func() error {
		for port, c := range counts {
			if got := w.Allocator().Count(port); got != c {
				return fmt.Errorf("port %d counts %d Pods, want %d", port, got, c)
			}
		}
		return nil
	})
	least := slices.SortedFunc(maps.Keys(counts), func(a, b int32) int {
		return cmp.Or(counts[a]-counts[b], int(a-b))
	})[:2]
	p := templatePod(ns, d)
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if hps := hostPortsOf(t, p); hps[8080] != least[0] || hps[8081] != least[1] || !slices.Contains(least, 40007) {
		t.Errorf("after the deletions (counts %v): host ports %v, want the least used %v", counts, hps, least)
	}
}

// TestRandHostPortRestart: a restarted provider rebuilds the counts from
// the existing Pods and gives the next Pod the next least used port, not
// the first of the range. While no provider serves the webhook, a Pod that
// asks is refused (fail-closed).
func TestRandHostPortRestart(t *testing.T) {
	_, stop := startRandHostPort(t, randhostport.Range{Min: 41000, Max: 41004})
	ns, d := randHostPortExample(t)
	d.Spec.Template.Annotations[randhostport.AnnotationPorts] = "8080"
	ctx := context.Background()
	waitServed(t, templatePod(ns, d))
	create := func() int32 {
		t.Helper()
		p := templatePod(ns, d)
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return hostPortsOf(t, p)[8080]
	}
	for want := int32(41000); want <= 41002; want++ {
		if got := create(); got != want {
			t.Errorf("before the restart: hostPort %d, want %d", got, want)
		}
	}

	stop()
	err := kube.Create(ctx, templatePod(ns, d))
	if err == nil || !strings.Contains(err.Error(), randhostport.WebhookPath) {
		t.Errorf("a Pod created while the webhook is down: %v, want refused by the webhook", err)
	}

	_, _ = startRandHostPort(t, randhostport.Range{Min: 41000, Max: 41004})
	waitServed(t, templatePod(ns, d))
	for _, want := range []int32{41003, 41004, 41000} {
		if got := create(); got != want {
			t.Errorf("after the restart: hostPort %d, want %d", got, want)
		}
	}
}

// TestRandHostPortMalformed: a Pod whose ports annotation names no port is
// refused with the reason; one whose randhostport annotation is not "true"
// is not sent to the webhook and is created as it is.
func TestRandHostPortMalformed(t *testing.T) {
	startRandHostPort(t, randhostport.Range{Min: 42000, Max: 42009})
	ns, d := randHostPortExample(t)
	ctx := context.Background()
	waitServed(t, templatePod(ns, d))

	bad := templatePod(ns, d)
	bad.Annotations[randhostport.AnnotationPorts] = "8080,web"
	err := kube.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), `no container declares a port named "web"`) || !strings.Contains(err.Error(), randhostport.AnnotationPorts) {
		t.Errorf("a Pod naming an unknown port: %v, want refused with the reason", err)
	}
	off := templatePod(ns, d)
	off.Annotations[randhostport.AnnotationEnabled] = "false"
	if err := kube.Create(ctx, off); err != nil {
		t.Fatal(err)
	}
	if hps := off.Spec.Containers[0].Ports; hps[0].HostPort != 0 || len(off.Spec.Containers[0].Env) != 0 {
		t.Errorf("a Pod not asking was mutated: ports %+v env %+v", hps, off.Spec.Containers[0].Env)
	}
}

// TestRandHostPortWithPool: a Pod of a bcs-injected namespace asks for a
// random hostPort and for a port-pool address with the HostPort backend
// (the seed's "hostPort: true" with random host ports). The random hostPort
// webhook runs first, so the address webhook allocates at admission with
// the host port known, and the public address forwards to node:hostPort.
func TestRandHostPortWithPool(t *testing.T) {
	startRandHostPort(t, randhostport.Range{Min: 43000, Max: 43009})
	ns := labelledNamespace(t, map[string]string{podannotation.BCSNamespaceLabelInject: "true"})
	t.Cleanup(func() {
		_ = kube.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	})
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool1", []string{"lb"}, 31000, 31009)
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "room", Annotations: map[string]string{
			randhostport.AnnotationEnabled: "true", randhostport.AnnotationPorts: "game",
			bcsEnabled: "true", bcsPorts: "pool1 TCP 7777/hostport",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server",
			Ports: []corev1.ContainerPort{{Name: "game", ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}}}},
	}
	waitServed(t, p)
	if err := testenv.RunPod(ctx, kube, p, "10.43.0.1", wait); err != nil {
		t.Fatal(err)
	}
	hp := hostPortsOf(t, p)[7777]
	if hp != 43000 {
		t.Fatalf("hostPort %d, want 43000", hp)
	}
	envName := podannotation.EnvVarName("TCP", 7777)
	admitted, ok := envOf(p.Spec.Containers[0], envName)
	if !ok {
		t.Errorf("not allocated at admission: env %v lacks %s", p.Spec.Containers[0].Env, envName)
	}
	pa := bound(t, ns, "room")
	b := pa.Status.Bindings[0]
	if want := fmt.Sprintf("%s:%d", b.VIPs[0], b.Port); ok && admitted != want {
		t.Errorf("admitted with %s=%s, bound to %s", envName, admitted, want)
	}
	if got, want := cloudTargets(lbID(l), b.ListenerIDs["TCP"]), fmt.Sprintf("%s:%d", testenv.NodeIP, hp); len(got) != 1 || got[0] != want {
		t.Errorf("cloud targets %v, want [%s], the node and the random hostPort", got, want)
	}
}
