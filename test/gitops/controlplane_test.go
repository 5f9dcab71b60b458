package gitops

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// configMap is a ConfigMap of namespace default in sync wave wave.
func configMap(name, value string, wave int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: default
  annotations:
    argocd.argoproj.io/sync-wave: "%d"
data:
  value: %q
`, name, wave, value)
}

// TestArgoCDOnControlPlane checks the harness on the local control plane
// alone (no node, no Crossplane): Argo CD, started as processes, syncs the
// Application of examples/argocd/platform.yaml from the loopback Git
// repository, follows a commit, shows drift as OutOfSync and self-heals
// it, prunes what leaves Git, and deletes what it synced with the
// Application. Plain ConfigMaps: what is asserted is Argo CD's own status.
func TestArgoCDOnControlPlane(t *testing.T) {
	ctx := context.Background()
	dir := logDir(t, "argocd-controlplane")
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kube = env.Client
	startArgoCD(t, dir, env.KubeConfig, nil)

	began := time.Now()
	head = push(t, "two ConfigMaps", map[string][]byte{
		"gitops/a.yaml": []byte(configMap("a", "1", 0)), "gitops/b.yaml": []byte(configMap("b", "1", 1)),
	})
	// The control plane runs no garbage collector, which would finish
	// the foreground deletions Argo CD asks for by default: background
	// ones, for prunes and for the Application's deletion.
	createApplication(t, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringSlice(u.Object, []string{"PrunePropagationPolicy=background"}, "spec", "syncPolicy", "syncOptions")
		u.SetFinalizers([]string{"resources-finalizer.argocd.argoproj.io/background"})
	})
	waitApp(t, "Synced and Healthy", syncedHealthy(head))
	t.Logf("first sync in %s", time.Since(began).Round(time.Millisecond))
	value := func(name string) (string, error) {
		cm := &corev1.ConfigMap{}
		err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, cm)
		return cm.Data["value"], err
	}

	head = push(t, "b changes", map[string][]byte{
		"gitops/a.yaml": []byte(configMap("a", "1", 0)), "gitops/b.yaml": []byte(configMap("b", "2", 1)),
	})
	waitApp(t, "Synced at the change", syncedHealthy(head))
	if v, err := value("b"); err != nil || v != "2" {
		t.Fatalf("b = %q (%v) after the change, want 2", v, err)
	}

	selfHeal(t, false)
	cm := &corev1.ConfigMap{}
	eventually(t, "change a in the cluster", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a"}, cm); err != nil {
			return err
		}
		cm.Data["value"] = "drifted"
		return kube.Update(ctx, cm)
	})
	waitApp(t, "OutOfSync on a", func(s argocd.AppStatus) error {
		if r, _ := s.Resource("ConfigMap", "a"); s.Sync != "OutOfSync" || r.Sync != "OutOfSync" {
			return fmt.Errorf("not OutOfSync on a")
		}
		return nil
	})
	selfHeal(t, true)
	waitApp(t, "self-healed", syncedHealthy(head))
	eventually(t, "a as Git says", func() error {
		v, err := value("a")
		if err == nil && v != "1" {
			return fmt.Errorf("a = %q", v)
		}
		return err
	})

	head = push(t, "b removed", map[string][]byte{"gitops/a.yaml": []byte(configMap("a", "1", 0))})
	waitApp(t, "b pruned", func(s argocd.AppStatus) error {
		if _, ok := s.Resource("ConfigMap", "b"); ok {
			return fmt.Errorf("b still listed")
		}
		return syncedHealthy(head)(s)
	})
	if _, err := value("b"); !kerrors.IsNotFound(err) {
		t.Fatalf("b after the prune: %v, want not found", err)
	}

	if err := kube.Delete(ctx, application()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Application and a gone", func() error {
		if _, err := status(ctx); !kerrors.IsNotFound(err) {
			return fmt.Errorf("the Application: %w", err)
		}
		if _, err := value("a"); !kerrors.IsNotFound(err) {
			return fmt.Errorf("a: %w", err)
		}
		return nil
	})
	t.Logf("all steps in %s", time.Since(began).Round(time.Millisecond))
}
