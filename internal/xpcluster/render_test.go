package xpcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

const testImage = "127.0.0.1:5999/crossplane/crossplane@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func render(t *testing.T, o Options) []*unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	objs, err := Render(ctx, testImage, o)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func deployments(t *testing.T, objs []*unstructured.Unstructured) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			t.Fatal(err)
		}
		out[d.Name] = d
	}
	return out
}

func env(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			out[e.Name] = e.Value
		}
	}
	return out
}

// boundPorts is what a container of Crossplane v2.4.0 listens on, read from
// its arguments and environment the way the binary does:
// cmd/crossplane/core/core.go:122-126 (ENABLE_WEBHOOKS default true,
// WEBHOOK_PORT 9443, METRICS_PORT 8080, HEALTH_PROBE_PORT 8081) and
// controller-runtime's metrics default ":8080" for `rbac start`. Init
// containers serve nothing.
func boundPorts(t *testing.T, c corev1.Container) []int {
	t.Helper()
	e := env(c)
	port := func(name string, def int) int {
		v, ok := e[name]
		if !ok {
			return def
		}
		p, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %s=%q", c.Name, name, v)
		}
		return p
	}
	switch strings.Join(c.Args[:2], " ") {
	case "core start":
		ps := []int{port("METRICS_PORT", 8080), port("HEALTH_PROBE_PORT", 8081)}
		if e["ENABLE_WEBHOOKS"] != "false" {
			ps = append(ps, port("WEBHOOK_PORT", 9443))
		}
		return ps
	case "rbac start":
		return []int{8080}
	}
	t.Fatalf("%s: unknown command %v", c.Name, c.Args)
	return nil
}

// TestRenderForTheNode renders the real chart through the cached renderer
// and checks what the node needs: both Pods on the host network with
// in-cluster config at the loopback API server, our image in every
// container, and no host port bound twice, 9443 left to the provider, and
// every bound port declared so the scheduler sees it.
func TestRenderForTheNode(t *testing.T) {
	o := Options{APIServerHost: "127.0.0.1", APIServerPort: 6443}
	objs := render(t, o)
	ds := deployments(t, objs)
	if len(ds) != 2 || ds["crossplane"] == nil || ds["crossplane-rbac-manager"] == nil {
		t.Fatalf("deployments: %v", slices.Collect(maps.Keys(ds)))
	}
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" && ns != Namespace {
			t.Errorf("%s %s in namespace %s", u.GetKind(), u.GetName(), ns)
		}
	}

	owner := map[int]string{}
	for _, d := range ds {
		spec := d.Spec.Template.Spec
		if !spec.HostNetwork {
			t.Errorf("%s: hostNetwork is false", d.Name)
		}
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("%s: strategy %s", d.Name, d.Spec.Strategy.Type)
		}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			who := d.Name + "/" + c.Name
			if c.Image != testImage || c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("%s: image %s, pull %s", who, c.Image, c.ImagePullPolicy)
			}
			if e := env(c); e["KUBERNETES_SERVICE_HOST"] != "127.0.0.1" || e["KUBERNETES_SERVICE_PORT"] != "6443" {
				t.Errorf("%s: in-cluster env %v", who, e)
			}
		}
		for _, c := range spec.Containers {
			who := d.Name + "/" + c.Name
			var declared []int
			for _, p := range c.Ports {
				declared = append(declared, int(p.ContainerPort))
			}
			bound := boundPorts(t, c)
			slices.Sort(declared)
			slices.Sort(bound)
			if !slices.Equal(declared, bound) {
				t.Errorf("%s: binds %v but declares %v", who, bound, declared)
			}
			for _, p := range bound {
				if p == 9443 {
					t.Errorf("%s binds 9443, the provider's webhook port", who)
				}
				if other, ok := owner[p]; ok {
					t.Errorf("host port %d bound by %s and %s", p, other, who)
				}
				owner[p] = who
			}
		}
	}
	want, err := HostPorts(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(owner) {
		t.Errorf("HostPorts says %v, the rendered Pods bind %v", want, owner)
	}
	for p := range want {
		if _, ok := owner[p]; !ok {
			t.Errorf("HostPorts lists %d, which no rendered container binds", p)
		}
	}

	core := ds["crossplane"].Spec.Template.Spec
	if got := core.InitContainers[0].Args[:2]; !slices.Equal(got, []string{"core", "init"}) {
		t.Errorf("init args %v", got)
	}
	if e := env(core.Containers[0]); e["WEBHOOK_PORT"] != "9444" || e["METRICS_PORT"] != "8088" || e["HEALTH_PROBE_PORT"] != "8089" {
		t.Errorf("core ports env %v", e)
	}
	svc := find(objs, "Service", "crossplane-webhooks")
	if svc == nil {
		t.Fatal("no webhook Service")
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["targetPort"]) != "9444" {
		t.Errorf("webhook Service ports %v", ports)
	}
}

// TestRenderWithoutWebhooks: core binds no webhook port, the chart renders
// no webhook Service, and the other ports stay where Options put them.
func TestRenderWithoutWebhooks(t *testing.T) {
	o := Options{APIServerHost: "127.0.0.1", APIServerPort: 6443, NoWebhooks: true, Ports: Ports{Metrics: 9100}, Activations: []string{"*.example.org"}}
	objs := render(t, o)
	core := deployments(t, objs)["crossplane"].Spec.Template.Spec
	e := env(core.Containers[0])
	if e["ENABLE_WEBHOOKS"] != "false" || e["METRICS_PORT"] != "9100" || e["HEALTH_PROBE_PORT"] != "8089" {
		t.Errorf("core env %v", e)
	}
	bound := boundPorts(t, core.Containers[0])
	slices.Sort(bound)
	if !slices.Equal(bound, []int{8089, 9100}) {
		t.Errorf("core binds %v", bound)
	}
	if find(objs, "Service", "crossplane-webhooks") != nil {
		t.Error("webhook Service rendered with webhooks off")
	}
	if !slices.Equal(core.InitContainers[0].Args, []string{"core", "init", "--activation", "*.example.org"}) {
		t.Errorf("init args %v", core.InitContainers[0].Args)
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

func TestValuesRefused(t *testing.T) {
	for name, o := range map[string]Options{
		"no API server":            {APIServerPort: 6443},
		"metrics on the RBAC port": {APIServerHost: "127.0.0.1", APIServerPort: 6443, Ports: Ports{Metrics: 8080}},
		"health on the webhook":    {APIServerHost: "127.0.0.1", APIServerPort: 6443, Ports: Ports{Health: 9444}},
	} {
		if _, err := Values(testImage, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Without webhooks the webhook port is free for the health probes.
	if _, err := Values(testImage, Options{APIServerHost: "127.0.0.1", APIServerPort: 6443, NoWebhooks: true, Ports: Ports{Health: 9444}}); err != nil {
		t.Error(err)
	}
}

// TestOnHostNetworkReplacesEnv: a variable the chart already set is
// replaced, not duplicated, and other entries are kept.
func TestOnHostNetworkReplacesEnv(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "c", "env": []any{
				map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": "10.0.0.1"},
				map[string]any{"name": "OTHER", "value": "x"},
			}}},
		}}},
	}}
	if err := onHostNetwork([]*unstructured.Unstructured{u}, Options{APIServerHost: "127.0.0.1", APIServerPort: 1}.Env()); err != nil {
		t.Fatal(err)
	}
	d := deployments(t, []*unstructured.Unstructured{u})["d"]
	c := d.Spec.Template.Spec.Containers[0]
	if !d.Spec.Template.Spec.HostNetwork || len(c.Env) != 3 || env(c)["KUBERNETES_SERVICE_HOST"] != "127.0.0.1" || env(c)["OTHER"] != "x" {
		t.Errorf("hostNetwork %v, env %v", d.Spec.Template.Spec.HostNetwork, c.Env)
	}
}
