package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ServiceAccount examples/provider/runtimeconfig.yaml gives the provider.
const (
	ProviderSANamespace = "crossplane-system"
	ProviderSA          = "provider-tencentcloud-network"
)

// CrossplaneGrants is the ClusterRole Crossplane v2.4's RBAC manager binds
// to a provider with the safe-start capability (its "system" role): get,
// list, watch, create, update and patch on the provider's own kinds (the
// CRDs of package/crds) and their status, update on their finalizers,
// everything on Secrets, ConfigMaps, Events and Leases, and read-only CRDs.
func CrossplaneGrants() (*rbacv1.ClusterRole, error) {
	crds, err := filepath.Glob(filepath.Join(RepoRoot(), "package", "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		return nil, fmt.Errorf("no CRDs in package/crds (%w)", err)
	}
	byGroup := map[string][]string{}
	for _, f := range crds {
		objs, err := ReadYAML(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
			byGroup[group] = append(byGroup[group], plural, plural+"/status")
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test:crossplane-provider-system-grants"}}
	for _, g := range groups {
		cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: byGroup[g], Verbs: []string{"get", "list", "watch", "update", "patch", "create"}})
	}
	cr.Rules = append(cr.Rules,
		rbacv1.PolicyRule{APIGroups: groups, Resources: []string{"*/finalizers"}, Verbs: []string{"update"}},
		rbacv1.PolicyRule{APIGroups: []string{"", "coordination.k8s.io"}, Resources: []string{"secrets", "configmaps", "events", "leases"}, Verbs: []string{"*"}},
		rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
	)
	return cr, nil
}

// A Feature is a part of the provider an install turns on, with the
// ClusterRole examples/provider/rbac/<feature>.yaml grants for it.
type Feature string

// The provider's features. Core is granted to every install.
const (
	FeatureCore         Feature = "core"
	FeaturePodAddresses Feature = "pod-addresses"
	FeatureIPPools      Feature = "ip-pools"
	FeatureNATClusters  Feature = "nat-clusters"
)

// Features are all of them, core first.
func Features() []Feature {
	return []Feature{FeatureCore, FeaturePodAddresses, FeatureIPPools, FeatureNATClusters}
}

// RBACFile is the file that grants what f needs.
func RBACFile(f Feature) string {
	return filepath.Join(RepoRoot(), "examples", "provider", "rbac", string(f)+".yaml")
}

// RBACFiles are the files of core and of features, as an install that
// turns those features on applies them.
func RBACFiles(features ...Feature) []string {
	out := []string{RBACFile(FeatureCore)}
	for _, f := range features {
		if f != FeatureCore {
			out = append(out, RBACFile(f))
		}
	}
	return out
}

// AsProvider binds the provider's ServiceAccount to CrossplaneGrants,
// applies the RBAC files of core and features (which bind that
// ServiceAccount), waits until the API server honours them, and returns a
// config that impersonates it. A rule a feature's controllers need that
// its file lacks fails their test.
//
// The Policies of the features are applied too, as users install them
// with those features; the API server enforces them a moment later.
func (e *Env) AsProvider(ctx context.Context, features ...Feature) (*rest.Config, error) {
	files := append(RBACFiles(features...), Policies(features...)...)
	return e.AsServiceAccount(ctx, ProviderSANamespace, ProviderSA, files...)
}

// Policies are the ValidatingAdmissionPolicies shipped with features
// (docs/install.md): always, who may write the provider's records; with
// Pod addresses, what the provider may change on Pods and which namespace
// it may create.
func Policies(features ...Feature) []string {
	dir := filepath.Join(RepoRoot(), "examples", "provider")
	files := []string{filepath.Join(dir, "records-policy.yaml")}
	if slices.Contains(features, FeaturePodAddresses) {
		files = append(files, filepath.Join(dir, "pod-writes-policy.yaml"), filepath.Join(dir, "namespace-policy.yaml"))
	}
	return files
}

// AsServiceAccount binds namespace/name to CrossplaneGrants, applies
// rbacFiles, waits until the API server honours them, and returns a config
// that impersonates the ServiceAccount. RBAC is enforced for it: it may
// not list ClusterRoles, which nothing grants it.
func (e *Env) AsServiceAccount(ctx context.Context, namespace, name string, rbacFiles ...string) (*rest.Config, error) {
	grants, err := CrossplaneGrants()
	if err != nil {
		return nil, err
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		grants,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: grants.Name + ":" + namespace + ":" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grants.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		},
	} {
		if err := e.Client.Create(ctx, o); err != nil && !kerrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	for _, f := range rbacFiles {
		if _, err := Apply(ctx, e.Client, f); err != nil {
			return nil, err
		}
	}
	sa := rest.CopyConfig(e.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name}
	saKube, err := client.New(sa, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, err
	}
	switch err := saKube.List(ctx, &rbacv1.ClusterRoleList{}); {
	case err == nil:
		return nil, fmt.Errorf("%s/%s may list ClusterRoles: RBAC is not enforced", namespace, name)
	case !kerrors.IsForbidden(err):
		return nil, fmt.Errorf("listing ClusterRoles as %s/%s: %w, want Forbidden", namespace, name, err)
	}
	// The authorizer's cache follows the bindings a moment later. CRDs
	// come from the grants, Pods from the core role.
	if err := Eventually(ctx, time.Minute, func() error {
		if err := saKube.List(ctx, &apiextensionsv1.CustomResourceDefinitionList{}, client.Limit(1)); err != nil {
			return err
		}
		if len(rbacFiles) == 0 {
			return nil
		}
		return saKube.List(ctx, &corev1.PodList{}, client.Limit(1))
	}); err != nil {
		return nil, fmt.Errorf("the bindings of %s/%s are not in effect: %w", namespace, name, err)
	}
	return sa, nil
}
