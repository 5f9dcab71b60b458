// Package safestart tests the provider's safe-start capability: run as its
// own process against a control plane that serves only some of its CRDs (as
// Crossplane leaves it until a ManagedResourceActivationPolicy activates
// the rest), it starts cleanly, reconciles what is there, and starts the
// other controllers once their CRDs appear.
package safestart

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv1 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

const wait = 2 * time.Minute

func TestSafeStart(t *testing.T) {
	ctx := context.Background()
	crds := filepath.Join(testenv.RepoRoot(), "package", "crds")
	first := []string{
		filepath.Join(crds, "tencentcloud.crossplane.io_clusterproviderconfigs.yaml"),
		filepath.Join(crds, "tencentcloud.m.crossplane.io_providerconfigs.yaml"),
		filepath.Join(crds, "tencentcloud.m.crossplane.io_providerconfigusages.yaml"),
		filepath.Join(crds, "clb.tencentcloud.m.crossplane.io_loadbalancers.yaml"),
	}
	env, err := testenv.Start(testenv.WithCRDs(first...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kube := env.Client

	cloud, endpoint, err := emulator.Start(emulator.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.Close() })
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "providerconfig", f), testenv.WithEndpoint(endpoint), testenv.ServingAll); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.BuildProvider(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := testenv.StartProvider(dir, bin, kubeconfig, "--debug")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(30 * time.Second)
		if t.Failed() {
			if b, err := os.ReadFile(p.Log); err == nil {
				t.Logf("provider log:\n%s", b)
			}
		}
	})
	if err := p.Ready(ctx, wait); err != nil {
		t.Fatal(err)
	}

	// The kind whose CRD is served is reconciled.
	ns := "safe-start"
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	lb := &clbv1alpha1.LoadBalancer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lb"},
		Spec:       clbv1alpha1.LoadBalancerSpec{ForProvider: clbv1alpha1.LoadBalancerParameters{Type: ptr.To("OPEN")}},
	}
	if err := kube.Create(ctx, lb); err != nil {
		t.Fatal(err)
	}
	waitReady(t, kube, lb)
	if p.Exited() {
		t.Fatal("the provider exited while some of its CRDs were missing")
	}

	// The rest of the CRDs appear, as an activation policy would make
	// them; the controllers that need them start.
	var rest []string
	entries, err := os.ReadDir(crds)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		f := filepath.Join(crds, e.Name())
		if !contains(first, f) {
			rest = append(rest, f)
		}
	}
	installed, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: rest, ErrorIfPathMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(installed) != len(rest) {
		t.Fatalf("installed %d CRDs, want %d", len(installed), len(rest))
	}
	pool := &clbv1alpha1.PortPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
		Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{
			LoadBalancerIDs: []string{meta.GetExternalName(lb)},
			StartPort:       31000,
			EndPort:         31004,
			Protocols:       []string{"TCP"},
		}},
	}
	if err := kube.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	waitReady(t, kube, pool)
	if n := len(cloud.Inventory().LoadBalancers); n != 1 {
		t.Errorf("load balancers in the cloud: %d, want 1", n)
	}

	for _, o := range []client.Object{pool, lb} {
		if err := kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		if err := testenv.Eventually(ctx, wait, func() error {
			err := kube.Get(ctx, client.ObjectKeyFromObject(o), o)
			if kerrors.IsNotFound(err) {
				return nil
			}
			return errors.Errorf("%s still exists (%v)", o.GetName(), err)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if inv := cloud.Inventory(); len(inv.LoadBalancers) != 0 {
		t.Errorf("left in the cloud: %+v", inv.LoadBalancers)
	}
}

type readyObject interface {
	client.Object
	GetCondition(xpv1.ConditionType) xpv1.Condition
}

func waitReady(t *testing.T, kube client.Client, o readyObject) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), wait, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		if c := o.GetCondition(xpv1.TypeReady); c.Status != "True" {
			return errors.Errorf("%s not Ready: %s %s (synced: %s)", o.GetName(), c.Reason, c.Message, o.GetCondition(xpv1.TypeSynced).Message)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
