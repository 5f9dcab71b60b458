package podaddress

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
	pwebhook "github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

// These tests install the package's MutatingWebhookConfiguration pointed
// at the provider's webhook server on loopback, with a self-signed
// certificate, so that the real kube-apiserver calls the webhook for every
// Pod they create.

// startWebhookProvider runs a provider that serves the Pod webhook, whose
// admitted PodAddresses wait grace for their Pod, and installs the
// webhook configuration for it.
func startWebhookProvider(t *testing.T, grace time.Duration) (stop func()) {
	t.Helper()
	return startWebhooks(t, pwebhook.Options{Admission: pwebhook.NewAdmission(grace, logging.NewNopLogger())})
}

// startWebhooks runs a provider that serves the webhooks wo sets on one
// webhook server, and installs the package's webhook configuration for it.
func startWebhooks(t *testing.T, wo pwebhook.Options) (stop func()) {
	t.Helper()
	dir := t.TempDir()
	ca, err := testenv.ServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	ws := webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: dir})
	stop = startProvider(t, suite.Webhooks(ws, wo))
	eventually(t, "webhook server up", func() error {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only waits for the listener
		if err != nil {
			return err
		}
		return c.Close()
	})
	ctx := context.Background()
	// A provider started again in the same test replaces the configuration.
	name := "pod-address-" + strings.ToLower(t.Name())
	if err := kube.Delete(ctx, &admv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !kerrors.IsNotFound(err) {
		t.Fatal(err)
	}
	cfg, err := testenv.InstallPodWebhook(ctx, kube, name, "https://"+addr, ca)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, cfg) })
	return stop
}

// admissionExample reads examples/network/admission.yaml: its Namespace
// and its Deployment.
func admissionExample(t *testing.T) (*corev1.Namespace, *appsv1.Deployment) {
	t.Helper()
	objs, err := testenv.ReadYAML(filepath.Join(testenv.RepoRoot(), "examples", "network", "admission.yaml"))
	if err != nil || len(objs) != 2 {
		t.Fatalf("admission example: %d objects, %v", len(objs), err)
	}
	ns, deploy := &corev1.Namespace{}, &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, ns); err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[1].Object, deploy); err != nil {
		t.Fatal(err)
	}
	return ns, deploy
}

// labelledNamespace is namespace with labels.
func labelledNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pa-", Labels: labels}}
	if err := kube.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	clearAtEnd(t, ns.Name)
	return ns.Name
}

func envOf(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func hasGate(p *corev1.Pod) bool {
	for _, g := range p.Spec.ReadinessGates {
		if g.ConditionType == condition {
			return true
		}
	}
	return false
}

// TestWebhookAllocatesAtAdmission: a bcs Pod of a namespace with bcs's
// inject label is admitted with the readiness gate and the env var bcs
// wrote, whose address is the one it is then bound to in the cloud. A dry
// run is mutated alike but allocates nothing.
func TestWebhookAllocatesAtAdmission(t *testing.T) {
	startWebhookProvider(t, time.Minute)
	// The namespace label and the Pod are those of the example, with the
	// example's pool replaced by this test's.
	exNS, deploy := admissionExample(t)
	ns := labelledNamespace(t, exNS.Labels)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool1", []string{"lb"}, 31000, 31009)
	ctx := context.Background()
	tmpl := deploy.Spec.Template
	tmpl.Annotations[bcsPorts] = strings.Replace(tmpl.Annotations[bcsPorts], "rooms-tcp.examples", "pool1", 1)
	tmpl.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "example/init"}}
	newPod := func() *corev1.Pod {
		return &corev1.Pod{
			// generateName, as a Deployment's Pods: the webhook names it.
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: deploy.Name + "-", Annotations: tmpl.Annotations, Labels: tmpl.Labels},
			Spec:       *tmpl.Spec.DeepCopy(),
		}
	}
	port := tmpl.Spec.Containers[0].Ports[0].ContainerPort
	envName := podannotation.EnvVarName("TCP", port)

	dry := newPod()
	if err := kube.Create(ctx, dry, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if !hasGate(dry) {
		t.Errorf("dry run: readiness gates %v, want %s", dry.Spec.ReadinessGates, condition)
	}
	if v, ok := envOf(dry.Spec.Containers[0], envName); ok {
		t.Errorf("dry run: %s=%s, want no allocation", envName, v)
	}
	pas := &v1alpha1.PodAddressList{}
	if err := kube.List(ctx, pas, client.InNamespace(ns)); err != nil || len(pas.Items) != 0 {
		t.Fatalf("dry run: %d PodAddresses (err %v), want none", len(pas.Items), err)
	}

	p := newPod()
	if err := testenv.RunPod(ctx, kube, p, "10.1.0.1", wait); err != nil {
		t.Fatal(err)
	}
	if !hasGate(p) {
		t.Errorf("readiness gates %v, want %s", p.Spec.ReadinessGates, condition)
	}
	admitted, ok := envOf(p.Spec.Containers[0], envName)
	if !ok {
		t.Fatalf("container env %v lacks %s", p.Spec.Containers[0].Env, envName)
	}
	if v, _ := envOf(p.Spec.InitContainers[0], envName); v != admitted {
		t.Errorf("init container %s=%q, want %q as the container's", envName, v, admitted)
	}

	pa := bound(t, ns, p.Name)
	b := pa.Status.Bindings[0]
	if want := fmt.Sprintf("%s:%d", b.VIPs[0], b.Port); len(pa.Status.Bindings) != 1 || admitted != want {
		t.Errorf("admitted with %s=%s; bound to %+v (%s)", envName, admitted, pa.Status.Bindings, want)
	}
	if pa.Spec.PodUID != string(p.UID) || pa.Annotations[podaddress.AnnotationAdmittedUntil] != "" {
		t.Errorf("PodAddress not taken over by its Pod: podUID %q (Pod %s), annotations %v", pa.Spec.PodUID, p.UID, pa.Annotations)
	}
	if got, want := cloudTargets(lbID(l), b.ListenerIDs["TCP"]), fmt.Sprintf("10.1.0.1:%d", port); len(got) != 1 || got[0] != want {
		t.Errorf("cloud targets %v, want [%s]", got, want)
	}
	eventually(t, "address condition True", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if c := podCond(p); c == nil || c.Status != corev1.ConditionTrue {
			return errors.Errorf("condition %+v", c)
		}
		return nil
	})
}

// TestWebhookNeverCreated: a Pod admitted (and allocated) but refused
// after the webhook never exists; its port comes back after the grace, and
// a pool of one port serves the next Pod.
func TestWebhookNeverCreated(t *testing.T) {
	startWebhookProvider(t, 2*time.Second)
	ns := labelledNamespace(t, map[string]string{podannotation.NamespaceLabelAdmission: "enabled"})
	lb(t, ns, "lb", "BGP")
	pool(t, ns, "one", []string{"lb"}, 31000, 31000)
	ctx := context.Background()
	annotations := map[string]string{ourPorts: "7777 one", podannotation.AnnotationAllocateAtAdmission: "true"}

	// Valid to the webhook, refused by the API server's validation, which
	// runs after mutating admission.
	annotations[podannotation.AnnotationAllocateAtAdmission] = "true"
	bad := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "refused", Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy: "Sometimes",
			Containers:    []corev1.Container{{Name: "server", Image: "example/server"}},
		},
	}
	if err := kube.Create(ctx, bad); !kerrors.IsInvalid(err) {
		t.Fatalf("creating the refused Pod: %v, want Invalid", err)
	}
	pa := &v1alpha1.PodAddress{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "refused"}, pa); err != nil {
		t.Fatalf("no PodAddress from the admission of the refused Pod: %v", err)
	}
	if len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].Port != 31000 {
		t.Fatalf("admission bindings %+v, want port 31000 recorded", pa.Status.Bindings)
	}
	until, err := time.Parse(time.RFC3339, pa.Annotations[podaddress.AnnotationAdmittedUntil])
	if err != nil {
		t.Fatalf("admitted-until annotation: %v", err)
	}
	eventually(t, "the refused Pod's PodAddress released", func() error {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "refused"}, &v1alpha1.PodAddress{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("still there (%v)", err)
	})
	// Not before the grace: a Pod being created must find its PodAddress.
	if now := time.Now(); now.Before(until) {
		t.Errorf("released at %s, before the end of the grace %s", now.Format(time.RFC3339Nano), until.Format(time.RFC3339))
	}

	p := pod(t, ns, "next", "10.1.0.2", annotations)
	if v, _ := envOf(p.Spec.Containers[0], podannotation.EnvVarName("TCP", 7777)); v == "" || bound(t, ns, "next").Status.Bindings[0].Port != 31000 {
		t.Errorf("the next Pod: env %q, want the freed port 31000", v)
	}
}

// TestWebhookGateOptInAndFailOpen: Pods of a namespace without the label
// are not sent to the webhook; with the webhook down, Pods of a labelled
// namespace are admitted unchanged (failurePolicy Ignore) and bound by the
// controller.
func TestWebhookGateOptInAndFailOpen(t *testing.T) {
	stop := startWebhookProvider(t, time.Minute)
	plain := namespace(t)
	opted := labelledNamespace(t, map[string]string{podannotation.NamespaceLabelAdmission: "enabled"})
	for _, ns := range []string{plain, opted} {
		lb(t, ns, "lb", "BGP")
		pool(t, ns, "pool1", []string{"lb"}, 31000, 31009)
	}
	annotations := map[string]string{
		ourPorts: "7777 pool1", podannotation.AnnotationReadinessGate: "true", podannotation.AnnotationAllocateAtAdmission: "true",
	}
	envName := podannotation.EnvVarName("TCP", 7777)

	// Opted in: our syntax gets the gate and the address.
	p := pod(t, opted, "in", "10.1.0.1", annotations)
	if v, ok := envOf(p.Spec.Containers[0], envName); !hasGate(p) || !ok {
		t.Errorf("opted-in Pod: gate %v, %s=%q; want both", hasGate(p), envName, v)
	}
	// Not opted in: untouched, bound after creation.
	p = pod(t, plain, "out", "10.1.0.2", annotations)
	if _, ok := envOf(p.Spec.Containers[0], envName); hasGate(p) || ok {
		t.Errorf("Pod of an unlabelled namespace mutated: gates %v env %v", p.Spec.ReadinessGates, p.Spec.Containers[0].Env)
	}
	bound(t, plain, "out")

	// The webhook is down: the Pod is created as it is.
	stop()
	p = pod(t, opted, "down", "10.1.0.3", annotations)
	if _, ok := envOf(p.Spec.Containers[0], envName); hasGate(p) || ok {
		t.Errorf("Pod admitted while the webhook was down was mutated: gates %v env %v", p.Spec.ReadinessGates, p.Spec.Containers[0].Env)
	}
	startProvider(t)
	bound(t, opted, "down")
}

// TestWebhookEIP: a Pod asking for an EIP and its readiness gate gets
// only the gate from the webhook, nothing in its environment; once it
// runs, the controller binds an EIP to its IP and the gate turns True.
// Even asked to allocate at admission, the webhook makes no PodAddress: a
// Pod refused after the webhook leaves none.
func TestWebhookEIP(t *testing.T) {
	startWebhookProvider(t, time.Minute)
	ns := labelledNamespace(t, map[string]string{podannotation.NamespaceLabelAdmission: "enabled"})
	emu, ips := eipCloud(t, ns, 10, 1, 2)
	ctx := context.Background()
	// No allocate-at-admission: the EIP annotation alone brings the Pod to
	// the webhook.
	annotations := map[string]string{
		podannotation.AnnotationEIP:           "bandwidth=5 providerConfig=team-a",
		podannotation.AnnotationReadinessGate: "true",
	}

	p := pod(t, ns, "room", ips[0], annotations)
	if !hasGate(p) {
		t.Errorf("readiness gates %v, want %s", p.Spec.ReadinessGates, condition)
	}
	for _, e := range p.Spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, podannotation.EnvVarPrefix) {
			t.Errorf("admitted with %s=%s, want no port variables for an EIP", e.Name, e.Value)
		}
	}
	pa := bound(t, ns, p.Name)
	checkAssociated(t, emu, pa, ips[0])
	if len(pa.Status.Bindings) != 0 || pa.Status.EIP.Bandwidth != 5 {
		t.Errorf("bindings %+v, EIP %+v: want the EIP of 5 Mbps and no ports", pa.Status.Bindings, pa.Status.EIP)
	}
	eventually(t, "address condition True", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == condition && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.Errorf("conditions %+v", p.Status.Conditions)
	})
	// Admitted (by a webhook that now surely runs as the leader), then
	// refused by validation: nothing was made for it.
	annotations[podannotation.AnnotationAllocateAtAdmission] = "true"
	bad := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "refused", Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy: "Sometimes",
			Containers:    []corev1.Container{{Name: "server", Image: "example/server"}},
		},
	}
	if err := kube.Create(ctx, bad); !kerrors.IsInvalid(err) {
		t.Fatalf("creating the refused Pod: %v, want Invalid", err)
	}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "refused"}, &v1alpha1.PodAddress{}); !kerrors.IsNotFound(err) {
		t.Errorf("a PodAddress was made at the admission of an EIP Pod (get: %v)", err)
	}

	if n := emu.CallCount("AllocateAddresses"); n != 1 {
		t.Errorf("%d AllocateAddresses calls, want 1", n)
	}
	deletePod(t, p)
	noEIPsLeft(t, emu)
}
