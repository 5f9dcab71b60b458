package mr

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
)

func TestReservedTagsHaveAReservedPrefix(t *testing.T) {
	for _, k := range ReservedTags() {
		if !IsReservedTag(k) {
			t.Errorf("%s is written by the provider but no reserved prefix refuses it in users' tags", k)
		}
	}
	for _, p := range ReservedTagPrefixes() {
		if !strings.Contains(ReservedTagsRule, p) {
			t.Errorf("the rule's words %q do not name the prefix %s", ReservedTagsRule, p)
		}
	}
}

func TestCheckTags(t *testing.T) {
	cases := map[string]struct {
		reason string
		tags   map[string]string
		want   error
	}{
		"None": {
			reason: "No tags are fine.",
		},
		"Users": {
			reason: "Keys of the user's own are fine, even ones that mention crossplane.",
			tags:   map[string]string{"team": "a", "my-crossplane-uid": "x", "Crossplane-UID": "y"},
		},
		"UID": {
			reason: "The UID tag would get another resource's object adopted.",
			tags:   map[string]string{"team": "a", TagUID: "x"},
			want:   errors.New("spec.forProvider.tags: " + ReservedTagsRule + " (crossplane-uid)"),
		},
		"Several": {
			reason: "Every reserved key is named, sorted.",
			tags:   map[string]string{TagEIPWarmPool: "b/p", TagNamespace: "b", "crossplane-future": "x"},
			want:   errors.New("spec.forProvider.tags: " + ReservedTagsRule + " (crossplane-future, crossplane-namespace, network.tencentcloud.m.crossplane.io/warm-pool)"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckTags("spec.forProvider.tags", tc.tags)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nCheckTags(...): -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOwnerTags(t *testing.T) {
	mg := &metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "uid-1"}
	user := map[string]string{"team": "a", TagNamespace: "team-b", TagUID: "uid-of-b"}
	got := OwnerTags("LoadBalancer", mg, user)
	want := map[string]string{"team": "a", TagNamespace: "team-a", TagUID: "uid-1", TagName: "web", TagKind: "LoadBalancer"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OwnerTags: the owner's tags win over the user's: -want +got:\n%s", diff)
	}
	if user[TagNamespace] != "team-b" {
		t.Error("OwnerTags changed the user's map")
	}
}

func TestOwnersCheck(t *testing.T) {
	const what = "load balancer lb-1"
	cpc := func(grants ...clusterv1alpha1.ObjectGrant) *clusterv1alpha1.ClusterProviderConfig {
		c := &clusterv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		c.Spec.Consumers = &clusterv1alpha1.ConfigConsumers{Namespaces: v1alpha1.NamespaceConsent{From: v1alpha1.ConsentAll}, Grants: grants}
		return c
	}
	all := v1alpha1.NamespaceConsent{From: v1alpha1.ConsentAll}
	onlyB := v1alpha1.NamespaceConsent{From: v1alpha1.ConsentSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "team-b"}}}
	sharedLB := func(c *v1alpha1.LoadBalancerConsumers) *v1alpha1.LoadBalancer {
		lb := &v1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "edge", UID: "uid-edge"}}
		lb.Spec.Consumers = c
		return lb
	}
	lbTags := map[string]string{TagNamespace: "team-b", TagName: "edge", TagUID: "uid-edge", TagKind: v1alpha1.LoadBalancerKind}
	teamA := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}}}
	teamB := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"kubernetes.io/metadata.name": "team-b"}}}
	cases := map[string]struct {
		reason  string
		ref     string // the resource's provider config kind; ClusterProviderConfig when empty
		use     Use
		objs    []client.Object
		tags    map[string]string
		want    string // "" for allowed
		granted bool   // the refusal is IsNotGranted
	}{
		"UntaggedNoGrant": {
			reason:  "An object made in the console is no namespace's until a platform team grants it.",
			objs:    []client.Object{cpc()},
			tags:    map[string]string{"team": "b"},
			want:    "load balancer lb-1 carries no owner tags (made in the console or by another tool): no grant of ClusterProviderConfig default gives it to namespace team-a",
			granted: true,
		},
		"UntaggedOwnAccount": {
			reason: "Through a namespaced ProviderConfig the credentials are the namespace's own account: its untagged objects are its own.",
			ref:    "ProviderConfig",
			tags:   map[string]string{"team": "b"},
		},
		"GrantedByID": {
			reason: "A grant naming the object's id lets the namespace in.",
			objs:   []client.Object{cpc(clusterv1alpha1.ObjectGrant{IDs: []string{"lb-1"}, Namespaces: all})},
		},
		"GrantOfOtherID": {
			reason:  "A grant of other ids gives nothing.",
			objs:    []client.Object{cpc(clusterv1alpha1.ObjectGrant{IDs: []string{"lb-2"}, Namespaces: all})},
			want:    "no grant of ClusterProviderConfig default",
			granted: true,
		},
		"GrantedByTag": {
			reason: "A grant by tags selects the objects carrying all of them.",
			objs:   []client.Object{cpc(clusterv1alpha1.ObjectGrant{Tags: map[string]string{"team": "a"}, Namespaces: all})},
			tags:   map[string]string{"team": "a", "env": "prod"},
		},
		"GrantTagMismatch": {
			reason:  "A tag of another value is not selected.",
			objs:    []client.Object{cpc(clusterv1alpha1.ObjectGrant{Tags: map[string]string{"team": "a"}, Namespaces: all})},
			tags:    map[string]string{"team": "b"},
			want:    "no grant",
			granted: true,
		},
		"GrantToOtherNamespace": {
			reason:  "A grant that lets only another namespace in gives nothing.",
			objs:    []client.Object{cpc(clusterv1alpha1.ObjectGrant{IDs: []string{"lb-1"}, Namespaces: onlyB}), teamA},
			want:    "no grant",
			granted: true,
		},
		"GrantNeverForTagged": {
			reason: "A grant never hands over an object whose tags name another namespace.",
			objs:   []client.Object{cpc(clusterv1alpha1.ObjectGrant{Namespaces: all})},
			tags:   map[string]string{TagNamespace: "team-b"},
			want:   "belongs to namespace team-b, not team-a",
		},
		"SharedLoadBalancer": {
			reason: "A LoadBalancer whose consent lets the namespace in may be built on.",
			use:    BuildOn,
			objs:   []client.Object{cpc(), sharedLB(&v1alpha1.LoadBalancerConsumers{Namespaces: all})},
			tags:   lbTags,
		},
		"SharedIsNotManaged": {
			reason: "The consent lets others build on the load balancer, never import, change or delete it.",
			use:    Manage,
			objs:   []client.Object{cpc(), sharedLB(&v1alpha1.LoadBalancerConsumers{Namespaces: all})},
			tags:   lbTags,
			want:   "belongs to namespace team-b, not team-a",
		},
		"NotShared": {
			reason: "A LoadBalancer without consumers lets no other namespace in, and says who may.",
			use:    BuildOn,
			objs:   []client.Object{cpc(), sharedLB(nil)},
			tags:   lbTags,
			want:   "belongs to LoadBalancer team-b/edge, whose spec.consumers.namespaces (from: Same (its own namespace only)) does not let namespace team-a in",
		},
		"SharedWithOthers": {
			reason: "A selector of other namespaces does not let this one in.",
			use:    BuildOn,
			objs:   []client.Object{cpc(), teamA, sharedLB(&v1alpha1.LoadBalancerConsumers{Namespaces: onlyB})},
			tags:   lbTags,
			want:   "does not let namespace team-a in",
		},
		"OwnerReplaced": {
			reason: "A LoadBalancer of the tagged name but another UID is not the owner: its consent counts for nothing.",
			use:    BuildOn,
			objs: []client.Object{cpc(), func() client.Object {
				lb := sharedLB(&v1alpha1.LoadBalancerConsumers{Namespaces: all})
				lb.UID = "uid-new"
				return lb
			}()},
			tags: lbTags,
			want: "belongs to namespace team-b, not team-a",
		},
		"GrantedImporterShares": {
			reason: "An untagged load balancer granted to the namespace whose LoadBalancer imports it may be built on by the namespaces that LoadBalancer lets in.",
			use:    BuildOn,
			objs: []client.Object{cpc(clusterv1alpha1.ObjectGrant{IDs: []string{"lb-1"}, Namespaces: onlyB}), teamA, teamB, func() client.Object {
				lb := sharedLB(&v1alpha1.LoadBalancerConsumers{Namespaces: all})
				meta.SetExternalName(lb, "lb-1")
				lb.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"})
				return lb
			}()},
		},
		"UngrantedImporterShares": {
			reason: "An importer the platform team did not grant the load balancer cannot share it.",
			use:    BuildOn,
			objs: []client.Object{cpc(), func() client.Object {
				lb := sharedLB(&v1alpha1.LoadBalancerConsumers{Namespaces: all})
				meta.SetExternalName(lb, "lb-1")
				lb.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"})
				return lb
			}()},
			want:    "no grant of ClusterProviderConfig default gives it to namespace team-a",
			granted: true,
		},
		"PoolLoadBalancer": {
			reason: "A PortPool's load balancer is the pool's: no consent lets others build on it.",
			use:    BuildOn,
			objs:   []client.Object{cpc()},
			tags:   map[string]string{TagNamespace: "team-b", TagName: "edge", TagUID: "uid-edge", TagKind: v1alpha1.PortPoolKind},
			want:   "belongs to namespace team-b, not team-a",
		},
		"Own": {
			reason: "An object whose namespace tag names the resource's namespace is its own.",
			tags:   map[string]string{TagNamespace: "team-a", TagUID: "other-uid"},
		},
		"OtherNamespace": {
			reason: "An object of another namespace is refused, naming the rule and who can hand it over.",
			tags:   map[string]string{TagNamespace: "team-b", TagUID: "uid-b"},
			want:   "load balancer lb-1 belongs to namespace team-b, not team-a: " + OwnerRule,
		},
		"OwnPortPool": {
			reason: "A load balancer of an older PortPool names its owner only in the pool tag.",
			tags:   map[string]string{TagPool: "team-a/games", TagPoolUID: "u"},
		},
		"OtherPortPool": {
			reason: "A load balancer of another namespace's PortPool is refused.",
			tags:   map[string]string{TagPool: "team-b/games", TagPoolUID: "u"},
			want:   "load balancer lb-1 belongs to namespace team-b, not team-a",
		},
		"NamespaceTagFirst": {
			reason: "The namespace tag decides over the pool tag.",
			tags:   map[string]string{TagNamespace: "team-b", TagPool: "team-a/games"},
			want:   "belongs to namespace team-b",
		},
		"OtherWarmPool": {
			reason: "A warm EIP of another namespace's policy is refused.",
			tags:   map[string]string{TagEIPWarmPool: "team-b/lobby"},
			want:   "belongs to namespace team-b",
		},
		"OldPodAddressEIP": {
			reason: "An EIP of a PodAddress made before EIPs carried their namespace belongs to no namespace anyone can tell.",
			tags:   map[string]string{TagEIPOwner: "uid-x"},
			want:   "belongs to a PodAddress (tag network.tencentcloud.m.crossplane.io/owner) of no known namespace",
		},
		"EmptyNamespaceTag": {
			reason: "A namespace tag with no value names no namespace: refused.",
			tags:   map[string]string{TagNamespace: ""},
			want:   "load balancer lb-1 carries owner tags that name no namespace",
		},
		"NewPodAddressEIP": {
			reason: "An EIP of a PodAddress of the same namespace is its own.",
			tags:   map[string]string{TagEIPOwner: "uid-x", TagNamespace: "team-a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.tags == nil {
				tc.tags = map[string]string{}
			}
			kube := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(tc.objs...).Build()
			mg := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "l"}}
			kind := tc.ref
			if kind == "" {
				kind = "ClusterProviderConfig"
			}
			mg.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: kind, Name: "default"})
			err := Owners{Kube: kube}.Check(context.Background(), mg, tc.use, what, "lb-1", tc.tags)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s\nCheck(...): %v, want allowed", tc.reason, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s\nCheck(...): %v, want one containing %q", tc.reason, err, tc.want)
			case tc.want != "" && !IsNotOwned(errors.Wrap(err, "wrapped")):
				t.Errorf("%s\nIsNotOwned(%v) is false", tc.reason, err)
			case tc.want != "" && IsNotGranted(err) != tc.granted:
				t.Errorf("%s\nIsNotGranted(%v) = %t, want %t", tc.reason, err, !tc.granted, tc.granted)
			}
		})
	}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.SchemeBuilder.AddToScheme, clusterv1alpha1.SchemeBuilder.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestRefuse(t *testing.T) {
	refused := notOwned("load balancer lb-1 belongs to namespace b, not a")
	other := errors.New("cannot describe load balancer: boom")
	cases := map[string]struct {
		reason   string
		deleting bool
		err      error
		want     error
	}{
		"Refused": {
			reason: "A refusal is Observe's error: Synced=False.",
			err:    refused,
			want:   refused,
		},
		"RefusedWhileDeleting": {
			reason:   "Deleting the resource lets go of the object: reported gone, so Delete is never called.",
			deleting: true,
			err:      refused,
		},
		"OtherWhileDeleting": {
			reason:   "Any other error stands, even while deleting: a failed read must not let go of an object.",
			deleting: true,
			err:      other,
			want:     other,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := &v1alpha1.LoadBalancer{}
			if tc.deleting {
				now := metav1.Now()
				cr.SetDeletionTimestamp(&now)
			}
			obs, err := Refuse(cr, tc.err)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nRefuse(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalObservation{}, obs); diff != "" {
				t.Errorf("%s\nRefuse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
