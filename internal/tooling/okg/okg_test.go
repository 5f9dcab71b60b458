package okg

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestStatefulSetWebhooks reads kruise's generated webhook manifests from
// the module and keeps exactly the Advanced StatefulSet's webhooks, under
// the names kruise-manager fills in.
func TestStatefulSetWebhooks(t *testing.T) {
	dir, err := ModuleDir(context.Background(), KruiseModule, KruiseVersion)
	if err != nil {
		t.Skipf("kruise module not available: %v", err)
	}
	objs, err := testenv.ReadYAML(filepath.Join(dir, "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := StatefulSetWebhooks(objs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"kruise-mutating-webhook-configuration":   {"mstatefulset.kb.io"},
		"kruise-validating-webhook-configuration": {"vstatefulset.kb.io"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d configurations, want %d", len(got), len(want))
	}
	for _, o := range got {
		u := o.(*unstructured.Unstructured)
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		var names []string
		for _, h := range hooks {
			names = append(names, h.(map[string]any)["name"].(string))
		}
		if !slices.Equal(names, want[u.GetName()]) {
			t.Errorf("%s %s: webhooks %v, want %v", u.GetKind(), u.GetName(), names, want[u.GetName()])
		}
	}
}

func TestStatefulSetWebhooksMissing(t *testing.T) {
	other := &unstructured.Unstructured{Object: map[string]any{
		"kind": "MutatingWebhookConfiguration", "metadata": map[string]any{"name": "x"},
		"webhooks": []any{map[string]any{"name": "mpod.kb.io", "rules": []any{map[string]any{
			"apiGroups": []any{""}, "resources": []any{"pods"},
		}}}},
	}}
	_, err := StatefulSetWebhooks([]*unstructured.Unstructured{other})
	if err == nil || !strings.Contains(err.Error(), "no webhook for apps.kruise.io statefulsets") {
		t.Fatalf("error %v, want one naming the missing statefulset webhook", err)
	}
}

func TestCacheDir(t *testing.T) {
	t.Setenv("PTN_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/x")
	if d, _ := CacheDir(); d != "/x/provider-tencentcloud-network" {
		t.Errorf("CacheDir() = %s with XDG_CACHE_HOME=/x", d)
	}
	t.Setenv("PTN_CACHE", "/c")
	if d, _ := CacheDir(); d != "/c" {
		t.Errorf("CacheDir() = %s with PTN_CACHE=/c", d)
	}
}
