package crossplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	pkgv1 "github.com/crossplane/crossplane/apis/v2/pkg/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// A cluster that ran tke-extend-network-controller has its CRDs, made by
// its Helm release, and CLBPortPools in them; the provider's package ships
// the same CRDs. These steps show what Crossplane's package manager does
// with such a CRD.

const clbPortPoolCRD = "clbportpools.networking.cloud.tencent.com"

var clbPortPoolGVK = schema.GroupVersionKind{Group: "networking.cloud.tencent.com", Version: "v1alpha1", Kind: "CLBPortPool"}

// helmSchemaMark is the description of the Helm CRD's schema, so that
// ours replacing it shows.
const helmSchemaMark = "tke-extend's CLBPortPool, as its Helm release installed it"

// ourCRD is the provider package's CLBPortPool CRD.
func ourCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "package", "crds", "networking.cloud.tencent.com_clbportpools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// helmCRDBeforeInstall: before the provider is installed, the CLBPortPool
// CRD is there as tke-extend's chart made it (same group, kind and
// version v1alpha1; Helm's label and release annotations; its own
// schema, marked here by its description), with a CLBPortPool in it.
func helmCRDBeforeInstall(t *testing.T) {
	ctx := context.Background()
	crd := ourCRD(t)
	crd.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	crd.Annotations = map[string]string{"meta.helm.sh/release-name": "tke-extend-network-controller", "meta.helm.sh/release-namespace": "kube-system"}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Description = helmSchemaMark
	}
	if err := kube.Create(ctx, crd, client.FieldOwner("helm")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Helm CRD established", func() error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := kube.Get(ctx, client.ObjectKey{Name: clbPortPoolCRD}, got); err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(clbPortPoolGVK)
	pool.SetName("helm-era")
	pool.Object["spec"] = map[string]any{"startPort": int64(30000), "endPort": int64(30099), "exsistedLoadBalancerIDs": []any{"lb-helmera1"}}
	eventually(t, "a CLBPortPool in the Helm CRD", func() error { return kube.Create(ctx, pool) })
}

// helmCRDTakenOver: installing the package leaves the Helm CRD and its
// CLBPortPool alone while the kind is inactive (safe-start); activating
// it, as docs/migrate-tke-extend.md says, makes the CRD the package's
// (controlled by the ProviderRevision, owned by its
// ManagedResourceDefinition; our schema) and keeps the CLBPortPool, the
// same object.
func helmCRDTakenOver(t *testing.T) {
	ctx := context.Background()
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(clbPortPoolGVK)
	if err := kube.Get(ctx, client.ObjectKey{Name: "helm-era"}, before); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := kube.Get(ctx, client.ObjectKey{Name: clbPortPoolCRD}, crd); err != nil {
		t.Fatal(err)
	}
	if d := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Description; d != helmSchemaMark || len(crd.OwnerReferences) > 0 {
		t.Errorf("before activation the CRD has owners %+v, schema %q: want Helm's, untouched", crd.OwnerReferences, d)
	}

	if _, err := local.Activate(ctx, wait, "tke-extend", clbPortPoolCRD); err != nil {
		t.Fatal(err)
	}
	revs := &pkgv1.ProviderRevisionList{}
	if err := kube.List(ctx, revs, client.MatchingLabels{pkgv1.LabelParentPackage: xplocal.ProviderPackage}); err != nil || len(revs.Items) != 1 {
		t.Fatalf("provider revisions: %d, %v", len(revs.Items), err)
	}
	want := ourCRD(t).Spec.Versions[0].Schema.OpenAPIV3Schema.Description
	eventually(t, "the package's CRD replaces Helm's", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: clbPortPoolCRD}, crd); err != nil {
			return err
		}
		if d := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Description; d != want {
			return fmt.Errorf("schema description %q, want ours", d)
		}
		return controlledByRevision(crd.OwnerReferences, revs.Items[0].UID)
	})
	after := &unstructured.Unstructured{}
	after.SetGroupVersionKind(clbPortPoolGVK)
	if err := kube.Get(ctx, client.ObjectKey{Name: "helm-era"}, after); err != nil {
		t.Fatalf("the CLBPortPool made under Helm's CRD: %v", err)
	}
	if after.GetUID() != before.GetUID() || after.Object["spec"] == nil ||
		fmt.Sprint(after.Object["spec"]) != fmt.Sprint(before.Object["spec"]) {
		t.Errorf("the CLBPortPool changed: %v (uid %s), was %v (uid %s)", after.Object["spec"], after.GetUID(), before.Object["spec"], before.GetUID())
	}
	// Helm's marks stay: its release still lists the CRD (the runbook says
	// what that means for helm uninstall).
	if crd.Labels["app.kubernetes.io/managed-by"] != "Helm" || crd.Annotations["meta.helm.sh/release-name"] == "" {
		t.Errorf("the CRD's labels %v, annotations %v: Helm's are gone", crd.Labels, crd.Annotations)
	}
	if err := kube.Delete(ctx, after); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the CLBPortPool deleted", func() error { return gone(after) })
}

// controlledByRevision: the provider revision controls the CRD, and its
// ManagedResourceDefinition owns it too.
func controlledByRevision(refs []metav1.OwnerReference, rev types.UID) error {
	mrd := false
	for _, r := range refs {
		mrd = mrd || (r.Kind == "ManagedResourceDefinition" && r.Name == clbPortPoolCRD)
	}
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			if r.UID != rev || !mrd {
				return fmt.Errorf("owners %+v: want the provider revision as controller and the ManagedResourceDefinition", refs)
			}
			return nil
		}
	}
	return fmt.Errorf("no controller among %+v", refs)
}
