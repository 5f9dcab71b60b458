package xpcluster

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

const testImage = "10.245.0.1:5000/crossplane/crossplane@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

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

// TestRenderForTheNode renders the real chart through the cached renderer:
// core and its RBAC manager in crossplane-system, our image by digest in
// every container, on the Pod network (nothing of the host is shared), the
// webhook Service there, and the activations passed to core init.
func TestRenderForTheNode(t *testing.T) {
	objs := render(t, Options{Activations: []string{"*.example.org"}})
	ds := deployments(t, objs)
	if len(ds) != 2 || ds["crossplane"] == nil || ds["crossplane-rbac-manager"] == nil {
		t.Fatalf("deployments: %v", slices.Collect(maps.Keys(ds)))
	}
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" && ns != Namespace {
			t.Errorf("%s %s in namespace %s", u.GetKind(), u.GetName(), ns)
		}
	}
	for _, d := range ds {
		spec := d.Spec.Template.Spec
		if spec.HostNetwork {
			t.Errorf("%s: on the host network", d.Name)
		}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			if c.Image != testImage || c.ImagePullPolicy != corev1.PullIfNotPresent {
				t.Errorf("%s/%s: image %s, pull %s", d.Name, c.Name, c.Image, c.ImagePullPolicy)
			}
		}
	}
	core := ds["crossplane"].Spec.Template.Spec
	if !slices.Equal(core.InitContainers[0].Args, []string{"core", "init", "--activation", "*.example.org"}) {
		t.Errorf("init args %v", core.InitContainers[0].Args)
	}
	if find(objs, "Service", "crossplane-webhooks") == nil {
		t.Error("no webhook Service")
	}

	// No activations: core init installs no default policy (the chart's
	// default is "*").
	core = deployments(t, render(t, Options{Activations: []string{}}))["crossplane"].Spec.Template.Spec
	if !slices.Equal(core.InitContainers[0].Args, []string{"core", "init"}) {
		t.Errorf("init args without activations %v", core.InitContainers[0].Args)
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
