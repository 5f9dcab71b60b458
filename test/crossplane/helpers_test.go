package crossplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal/xplocaltest"
)

// wait bounds every poll.
const wait = xplocaltest.Wait

// eventually polls for at most wait.
var eventually = xplocaltest.Eventually

// example reads one object of an example file, with edits applied to its
// YAML text first (ids a user would replace with theirs).
func example(t testing.TB, file string, edits ...string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(edits...).Replace(string(b))
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// pod creates a Pod and sets its IP and phase as a kubelet would.
func pod(t testing.TB, ns, name, ip string, labels map[string]string, ports ...corev1.ContainerPort) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server", Ports: ports}}},
	}
	if err := testenv.RunPod(context.Background(), kube, p, ip, wait); err != nil {
		t.Fatalf("run Pod %s: %v", name, err)
	}
	return p
}

// get reads an object of any kind.
func get(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
}

// condition returns status, reason and message of a condition type.
func condition(u *unstructured.Unstructured, typ string) (string, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return "", "no " + typ + " condition"
}

// waitReady waits for the Ready condition of an object.
func waitReady(t testing.TB, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	eventually(t, gvk.Kind+" "+name+" Ready", func() error {
		var err error
		if u, err = get(gvk, ns, name); err != nil {
			return err
		}
		if s, why := condition(u, "Ready"); s != "True" {
			_, synced := condition(u, "Synced")
			return fmt.Errorf("Ready=%s %s (Synced: %s)", s, why, synced)
		}
		return nil
	})
	return u
}

// int64At reads an integer field.
func int64At(u *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, fields...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}
