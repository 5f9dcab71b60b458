package tenancy

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	pcv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	vpcv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// The tenant Crossplane v2 makes: a team member with crossplane-edit bound
// in her namespace, which Crossplane's RBAC manager fills with every kind
// of the provider's package, /status included. RBAC lets her write every
// managed resource, ProviderConfig and PodAddress there; the provider
// must refuse what is not hers before any cloud call.
const (
	// EditorA has crossplane-edit in NamespaceA, which the default
	// ClusterProviderConfig serves.
	EditorA Who = "editor-a"
	// EditorC has crossplane-edit in NamespaceC, a team the platform team
	// has not let in yet.
	EditorC Who = "editor-c"

	NamespaceC = "team-c"
	// OpsConfig is a ClusterProviderConfig that serves only namespace ops.
	OpsConfig = "ops"
)

// editors says which namespace each editor's rights are in.
var editors = map[Who]string{EditorA: NamespaceA, EditorC: NamespaceC}

// crossplaneEdit is the ClusterRole Crossplane's RBAC manager aggregates
// into crossplane-edit for a provider: every kind of its package (the
// CRDs under package/crds), with status, and the Secrets and Events a
// namespace's editor has.
func crossplaneEdit() (*rbacv1.ClusterRole, error) {
	dir := filepath.Join(testenv.RepoRoot(), "package", "crds")
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tenancy-crossplane-edit"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets", "events"}, Verbs: verbs},
	}}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(dir, f.Name())) //nolint:gosec // the repository's own CRDs
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			return nil, errors.Wrapf(err, "cannot read %s", f.Name())
		}
		p := crd.Spec.Names.Plural
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{crd.Spec.Group}, Resources: []string{p, p + "/status"}, Verbs: verbs})
	}
	return role, nil
}

//nolint:gochecknoinits // each area registers its cases from its file, as the suite asks
func init() {
	prepare(func(ctx context.Context, t *testing.T) {
		role, err := crossplaneEdit()
		if err != nil {
			t.Fatal(err)
		}
		if err := kube.Create(ctx, role); err != nil {
			t.Fatal(err)
		}
		if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: NamespaceC}}); err != nil {
			t.Fatal(err)
		}
		for who, ns := range editors {
			rb := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crossplane-edit-" + string(who)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: string(who)}},
			}
			if err := kube.Create(ctx, rb); err != nil {
				t.Fatal(err)
			}
			cfg := rest.CopyConfig(env.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: string(who)}
			if err := SetIdentity(who, cfg); err != nil {
				t.Fatal(err)
			}
		}
		// The platform team serves every namespace but team-c, and keeps
		// a second account for namespace ops alone.
		cpc := &clusterv1alpha1.ClusterProviderConfig{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, cpc); err != nil {
			t.Fatal(err)
		}
		cpc.Spec.Consumers = &clusterv1alpha1.ConfigConsumers{Namespaces: clbv1alpha1.NamespaceConsent{
			From: clbv1alpha1.ConsentSelector,
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{NamespaceC}},
			}},
		}}
		if err := kube.Update(ctx, cpc); err != nil {
			t.Fatal(err)
		}
		ops := cpc.DeepCopy()
		ops.ObjectMeta = metav1.ObjectMeta{Name: OpsConfig}
		ops.Spec.Consumers = &clusterv1alpha1.ConfigConsumers{Namespaces: clbv1alpha1.NamespaceConsent{
			From:     clbv1alpha1.ConsentSelector,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "ops"}},
		}}
		if err := kube.Create(ctx, ops); err != nil {
			t.Fatal(err)
		}
		eventuallyT(t, "editor RBAC honoured", func() error {
			return Client(EditorC).List(ctx, &clbv1alpha1.LoadBalancerList{}, client.InNamespace(NamespaceC))
		})
	})

	attack(
		Attack{
			Name: "editor-unserved-load-balancer", Who: EditorC,
			What: "create a LoadBalancer in her namespace, which no ClusterProviderConfig serves, through the default one",
			Want: "ClusterProviderConfig default does not serve namespace team-c",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return managedRefusal(ctx, EditorC, newLB(NamespaceC, "mine", nil), "does not serve namespace")
			},
			Cleanup: deleteManaged(EditorC, newLB(NamespaceC, "mine", nil)),
		},
		Attack{
			Name: "editor-unserved-eip", Who: EditorC,
			What: "allocate an EIP (an Address) in her namespace through the default ClusterProviderConfig",
			Want: "ClusterProviderConfig default does not serve namespace team-c",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return managedRefusal(ctx, EditorC, newAddress(NamespaceC, "mine"), "does not serve namespace")
			},
			Cleanup: deleteManaged(EditorC, newAddress(NamespaceC, "mine")),
		},
		Attack{
			Name: "editor-unserved-pool", Who: EditorC,
			What: "create a PortPool with autoCreate (up to 5 new load balancers) in her namespace",
			Want: "ClusterProviderConfig default does not serve namespace team-c",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return managedRefusal(ctx, EditorC, newAutoPool(NamespaceC, "mine"), "does not serve namespace")
			},
			Cleanup: deleteManaged(EditorC, newAutoPool(NamespaceC, "mine")),
		},
		Attack{
			Name: "editor-unserved-listener", Who: EditorC,
			What: "create a Listener on tenant-b's load balancer by id from her namespace, which no config serves",
			Want: "ClusterProviderConfig default does not serve namespace team-c",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				id := w.LB[NamespaceB]
				l := &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceC, Name: "mine"},
					Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{Port: 9102, Protocol: "TCP", LoadBalancerID: &id}}}
				return managedRefusal(ctx, EditorC, l, "does not serve namespace")
			},
			Cleanup: deleteManaged(EditorC, &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceC, Name: "mine"}}),
		},
		Attack{
			Name: "editor-unserved-targetset", Who: EditorC,
			What: "a TargetSet emptying a listener of tenant-b's load balancer from her namespace, which no config serves",
			Want: "ClusterProviderConfig default does not serve namespace team-c",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				id, lis := w.LB[NamespaceB], "lbl-00000000"
				ts := &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceC, Name: "mine"},
					Spec: clbv1alpha1.TargetSetSpec{ForProvider: clbv1alpha1.TargetSetParameters{LoadBalancerID: &id, ListenerID: &lis}}}
				return managedRefusal(ctx, EditorC, ts, "does not serve namespace")
			},
			Cleanup: deleteManaged(EditorC, &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceC, Name: "mine"}}),
		},
		Attack{
			Name: "editor-other-config", Who: EditorA,
			What: "create a LoadBalancer that names ClusterProviderConfig ops, which serves only namespace ops",
			Want: "ClusterProviderConfig ops does not serve namespace tenant-a",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				ref := &xpv2.ProviderConfigReference{Kind: clusterv1alpha1.ClusterProviderConfigKind, Name: OpsConfig}
				return managedRefusal(ctx, EditorA, newLB(NamespaceA, "ops-spend", ref), "does not serve namespace")
			},
			Cleanup: deleteManaged(EditorA, newLB(NamespaceA, "ops-spend", nil)),
		},
		Attack{
			Name: "editor-listener-on-other-lb", Who: EditorA,
			What: "create a Listener whose loadBalancerIdRef names tenant-b's load balancer (namespace tenant-b)",
			Want: "spec.forProvider.loadBalancerIdRef names namespace tenant-b (its spec.consumers.namespaces from: Same (its own namespace only) does not let tenant-a in): " + mr.RefRule,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				l := &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b"},
					Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{Port: 9100, Protocol: "TCP",
						LoadBalancerIDRef: &xpv2.NamespacedReference{Name: PoolB, Namespace: NamespaceB}}}}
				return managedRefusal(ctx, EditorA, l, mr.RefRule)
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b"}}),
		},
		Attack{
			Name: "editor-pool-on-other-lb", Who: EditorA,
			What: "create a PortPool whose loadBalancerIdRefs name tenant-b's load balancer by a selector into tenant-b",
			Want: "spec.forProvider.loadBalancerIdSelector names namespace tenant-b (a selector)",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b"},
					Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{StartPort: 31000, EndPort: 31009,
						LoadBalancerIDSelector: &xpv2.NamespacedSelector{Namespace: NamespaceB, MatchLabels: map[string]string{}}}}}
				return managedRefusal(ctx, EditorA, pp, mr.RefRule)
			},
			Cleanup: deleteManaged(EditorA, &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "on-b"}}),
		},
		Attack{
			Name: "editor-widens-config", Who: EditorC,
			What: "patch ClusterProviderConfig default to serve every namespace",
			Want: `cannot patch resource "clusterproviderconfigs"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				cpc := &clusterv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
				patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"consumers":{"namespaces":{"from":"All"}}}}`))
				return APIRefusal("patch ClusterProviderConfig", Client(EditorC).Patch(ctx, cpc, patch))
			},
		},
		Attack{
			Name: "editor-endpoint-elsewhere", Who: EditorA,
			What: "a ProviderConfig of hers whose endpoint is a host of her choosing (a listener on 127.0.0.1), and a LoadBalancer through it",
			Want: "is not allowed; a ProviderConfig may use only the public endpoint or the endpoint of a ClusterProviderConfig that serves namespace tenant-a",
			Try: func(ctx context.Context, t *testing.T) (string, error) {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					return "", err
				}
				var dialed atomic.Int32
				go func() {
					for {
						c, err := l.Accept()
						if err != nil {
							return
						}
						dialed.Add(1)
						_ = c.Close()
					}
				}()
				defer func() { _ = l.Close() }()
				if err := editorProviderConfig(ctx, EditorA, NamespaceA, "elsewhere", l.Addr().String()); err != nil {
					return "", err
				}
				ref := &xpv2.ProviderConfigReference{Kind: pcv1alpha1.ProviderConfigKind, Name: "elsewhere"}
				refusal, err := managedRefusal(ctx, EditorA, newLB(NamespaceA, "elsewhere", ref), "is not allowed")
				if err != nil {
					return "", err
				}
				pc := &pcv1alpha1.ProviderConfig{}
				if err := testenv.Eventually(ctx, wait, func() error {
					if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: "elsewhere"}, pc); err != nil {
						return err
					}
					if c := pc.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "is not allowed") {
						return errors.Errorf("the ProviderConfig is Ready=%s (%s), want False with the refusal", c.Status, c.Message)
					}
					return nil
				}); err != nil {
					return "", err
				}
				if n := dialed.Load(); n != 0 {
					return "", errors.Errorf("the provider connected to her endpoint %d times", n)
				}
				return refusal, nil
			},
			Cleanup: func(ctx context.Context, t *testing.T) {
				deleteManaged(EditorA, newLB(NamespaceA, "elsewhere", nil))(ctx, t)
				for _, o := range []client.Object{
					&pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "elsewhere"}},
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "elsewhere"}},
				} {
					if err := kube.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
						t.Fatal(err)
					}
				}
			},
		},
	)

	allow(
		Allowed{
			Name: "editor-own-load-balancer", Who: EditorA,
			What: "create a LoadBalancer in her namespace, which the default ClusterProviderConfig serves, then delete it",
			Try: func(ctx context.Context, t *testing.T) error {
				lb := newLB(NamespaceA, "own", nil)
				if err := Client(EditorA).Create(ctx, lb); err != nil {
					return err
				}
				if err := testenv.Eventually(ctx, wait, func() error {
					if err := kube.Get(ctx, client.ObjectKeyFromObject(lb), lb); err != nil {
						return err
					}
					if c := lb.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
						return errors.Errorf("Ready=%s %s; Synced: %s", c.Status, c.Message, lb.GetCondition(xpv2.TypeSynced).Message)
					}
					return nil
				}); err != nil {
					return err
				}
				id := meta.GetExternalName(lb)
				if _, ok := cloud.Inventory().LoadBalancer(id); !ok {
					return errors.Errorf("load balancer %s is not in the cloud", id)
				}
				deleteManaged(EditorA, lb)(ctx, t)
				if _, ok := cloud.Inventory().LoadBalancer(id); ok {
					return errors.Errorf("load balancer %s is still in the cloud after its deletion", id)
				}
				return nil
			},
		},
		Allowed{
			Name: "editor-own-stack", Who: EditorA,
			What: "a LoadBalancer, a Listener on it by reference and a TargetSet registering a Pod of her namespace, then delete them",
			Try: func(ctx context.Context, t *testing.T) error {
				lb := newLB(NamespaceA, "stack", nil)
				l := &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "stack"},
					Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{Port: 9200, Protocol: "TCP",
						LoadBalancerIDRef: &xpv2.NamespacedReference{Name: "stack"}}}}
				ts := &clbv1alpha1.TargetSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceA, Name: "stack"},
					Spec: clbv1alpha1.TargetSetSpec{ForProvider: clbv1alpha1.TargetSetParameters{
						LoadBalancerIDRef: &xpv2.NamespacedReference{Name: "stack"}, ListenerIDRef: &xpv2.NamespacedReference{Name: "stack"},
						Targets: []clbv1alpha1.Target{{IP: "10.1.9.1", Port: 7000}}}}}
				for _, mg := range []resource.Managed{lb, l, ts} {
					if err := Client(EditorA).Create(ctx, mg); err != nil {
						return err
					}
				}
				for _, mg := range []resource.Managed{lb, l, ts} {
					if err := readyManaged(ctx, mg); err != nil {
						return err
					}
				}
				id := meta.GetExternalName(lb)
				for _, mg := range []resource.Managed{ts, l, lb} {
					deleteManaged(EditorA, mg)(ctx, t)
				}
				if _, ok := cloud.Inventory().LoadBalancer(id); ok {
					return errors.Errorf("load balancer %s is still in the cloud", id)
				}
				return nil
			},
		},
		Allowed{
			Name: "editor-own-eip", Who: EditorA,
			What: "allocate an EIP (an Address) in her namespace, which the default config serves, then release it",
			Try: func(ctx context.Context, t *testing.T) error {
				a := newAddress(NamespaceA, "own")
				if err := Client(EditorA).Create(ctx, a); err != nil {
					return err
				}
				if err := readyManaged(ctx, a); err != nil {
					return err
				}
				id := meta.GetExternalName(a)
				deleteManaged(EditorA, a)(ctx, t)
				for _, e := range cloud.Inventory().EIPs {
					if e.ID == id {
						return errors.Errorf("EIP %s is still in the cloud", id)
					}
				}
				return nil
			},
		},
		Allowed{
			Name: "editor-deletes-refused", Who: EditorC,
			What: "delete a LoadBalancer of hers that the provider refused (no ClusterProviderConfig serves her namespace): it goes, with no cloud call",
			Try: func(ctx context.Context, t *testing.T) error {
				lb := newLB(NamespaceC, "refused", nil)
				if _, err := managedRefusal(ctx, EditorC, lb, "does not serve namespace"); err != nil {
					return err
				}
				before := cloud.CallCount("DeleteLoadBalancer")
				deleteManaged(EditorC, lb)(ctx, t)
				if n := cloud.CallCount("DeleteLoadBalancer") - before; n != 0 {
					return errors.Errorf("%d DeleteLoadBalancer calls", n)
				}
				return nil
			},
		},
	)
}

func newLB(ns, name string, ref *xpv2.ProviderConfigReference) *clbv1alpha1.LoadBalancer {
	lb := &clbv1alpha1.LoadBalancer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       clbv1alpha1.LoadBalancerSpec{ForProvider: clbv1alpha1.LoadBalancerParameters{Type: clb.Ptr("OPEN")}},
	}
	if ref != nil {
		lb.SetProviderConfigReference(ref)
	}
	return lb
}

func newAddress(ns, name string) *vpcv1alpha1.Address {
	return &vpcv1alpha1.Address{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func newAutoPool(ns, name string) *clbv1alpha1.PortPool {
	return &clbv1alpha1.PortPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{
			StartPort: 30000, EndPort: 30099,
			AutoCreate: &clbv1alpha1.PoolAutoCreate{MaxLoadBalancers: 5, Template: clbv1alpha1.LoadBalancerParameters{Type: clb.Ptr("OPEN")}},
		}},
	}
}

// editorProviderConfig makes, as who, a Secret with the emulator's key
// pair and a ProviderConfig of ns over it pointed at endpoint.
func editorProviderConfig(ctx context.Context, who Who, ns, name, endpoint string) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		StringData: map[string]string{"secretId": "AKIDLOCALEMULATOR00000000000000000", "secretKey": "localemulatorsecretkey0000000000"},
	}
	if err := Client(who).Create(ctx, s); err != nil {
		return err
	}
	pc := &pcv1alpha1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: pcv1alpha1.ProviderConfigSpec{
			Region:      "ap-guangzhou",
			Credentials: pcv1alpha1.ProviderCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: pcv1alpha1.LocalCredentialsSecretRef{Name: name}},
			Endpoint:    &pcv1alpha1.Endpoint{Host: endpoint, Scheme: "http"},
		},
	}
	return Client(who).Create(ctx, pc)
}

// managedRefusal creates mg as who (RBAC lets her) and waits until the
// provider refuses it: Synced=False saying want, and a Warning Event.
func managedRefusal(ctx context.Context, who Who, mg resource.Managed, want string) (string, error) {
	if err := Client(who).Create(ctx, mg); err != nil {
		return "", errors.Wrapf(err, "create %T as %s", mg, who)
	}
	var said string
	err := testenv.Eventually(ctx, wait, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(mg), mg); err != nil {
			return err
		}
		c := mg.GetCondition(xpv2.TypeSynced)
		if c.Status != corev1.ConditionFalse || !contains(c.Message, want) {
			return errors.Errorf("Synced=%s %q, want False saying %q", c.Status, c.Message, want)
		}
		if c := mg.GetCondition(xpv2.TypeReady); c.Status == corev1.ConditionTrue {
			return errors.New("it is Ready")
		}
		events := &corev1.EventList{}
		if err := kube.List(ctx, events, client.InNamespace(mg.GetNamespace())); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.UID == mg.GetUID() && e.Type == corev1.EventTypeWarning && contains(e.Message, want) {
				said = c.Message
				return nil
			}
		}
		return errors.New("no Warning Event says it yet")
	})
	return said, err
}

// readyManaged waits until mg is Ready.
func readyManaged(ctx context.Context, mg resource.Managed) error {
	return testenv.Eventually(ctx, wait, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(mg), mg); err != nil {
			return err
		}
		if c := mg.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
			return errors.Errorf("%s: Ready=%s %s; Synced: %s", mg.GetName(), c.Status, c.Message, mg.GetCondition(xpv2.TypeSynced).Message)
		}
		return nil
	})
}

// deleteManaged deletes mg as who and waits until it is gone.
func deleteManaged(who Who, mg client.Object) func(ctx context.Context, t *testing.T) {
	return func(ctx context.Context, t *testing.T) {
		t.Helper()
		if err := Client(who).Delete(ctx, mg); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		eventuallyT(t, fmt.Sprintf("%s %s gone", mg.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(mg)), func() error {
			err := kube.Get(ctx, client.ObjectKeyFromObject(mg), mg)
			if err == nil {
				return errors.Errorf("still there: %s", mg.(resource.Managed).GetCondition(xpv2.TypeSynced).Message)
			}
			return client.IgnoreNotFound(err)
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
