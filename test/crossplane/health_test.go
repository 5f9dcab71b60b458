package crossplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocdhealth"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// health assesses a live object with the Argo CD health script of its kind
// (docs/argocd/health), as Argo CD would.
func health(t testing.TB, u *unstructured.Unstructured) argocdhealth.Status {
	t.Helper()
	gvk := u.GroupVersionKind()
	k, ok := argocdhealth.Lookup(gvk.Group, gvk.Kind)
	if !ok {
		t.Fatalf("no Argo CD health script for %s", gvk)
	}
	script, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), argocdhealth.ScriptDir, k.Script))
	if err != nil {
		t.Fatal(err)
	}
	s, err := argocdhealth.Assess(string(script), u.Object)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk.Kind, u.GetName(), err)
	}
	return s
}

// wantHealth waits until the object's Argo CD health is want.
func wantHealth(t testing.TB, u *unstructured.Unstructured, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s %s %s in Argo CD", u.GetKind(), u.GetName(), want), func() error {
		got, err := get(u.GroupVersionKind(), u.GetNamespace(), u.GetName())
		if err != nil {
			return err
		}
		if s := health(t, got); s.Status != want {
			return fmt.Errorf("%s: %s", s.Status, s.Message)
		}
		return nil
	})
}

// healthOfComposite checks a Ready claim or composite and everything it
// composed are Healthy in Argo CD.
func healthOfComposite(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	wantHealth(t, u, argocdhealth.Healthy)
	xr := compositeOf(t, u)
	if xr != u {
		wantHealth(t, xr, argocdhealth.Healthy)
	}
	for _, c := range xplocal.Composed(xr) {
		wantHealth(t, c, argocdhealth.Healthy)
	}
}

// failingComposites: objects that cannot become ready are Degraded, and a
// composite waiting on them Progressing, in Argo CD.
func failingComposites(t *testing.T) {
	ctx := context.Background()
	ns := "examples"
	// A claim naming a load balancer that does not exist: the observed
	// LoadBalancer fails, the claim waits for it.
	claim := example(t, "composition/podpublicaddress-claim.yaml", "name: rooms", "name: rooms-missing", "lb-rooms01", "lb-doesnotexist", "      - lb-rooms02\n", "")
	if err := kube.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	wantHealth(t, claim, argocdhealth.Progressing)
	var lb *unstructured.Unstructured
	eventually(t, "the claim composed its LoadBalancer", func() error {
		c, err := get(claim.GroupVersionKind(), claim.GetNamespace(), claim.GetName())
		if err != nil {
			return err
		}
		// The claim names its composite before the composite exists.
		xr, err := local.Composite(ctx, c)
		if err != nil {
			return err
		}
		for _, c := range xplocal.Composed(xr) {
			if c.GetKind() == "LoadBalancer" {
				lb = c
				return nil
			}
		}
		return fmt.Errorf("nothing composed yet")
	})
	wantHealth(t, lb, argocdhealth.Degraded)

	// A composite the function refuses: Synced=False.
	// (a region for load balancers it would create: only existing ones
	// may be in another region).
	bad := example(t, "composition/podpublicaddress.yaml", "name: battle", "name: battle-invalid")
	if err := unstructured.SetNestedField(bad.Object, "ap-shanghai", "spec", "region"); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	wantHealth(t, bad, argocdhealth.Degraded)

	deleteComposite(t, claimPPA, ns, "rooms-missing")
	if err := kube.Delete(ctx, bad); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refused composite gone", func() error { return gone(bad) })
}
