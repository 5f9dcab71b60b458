package mr

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

func TestOwnNamespaceRefs(t *testing.T) {
	lb := func(c *clbv1alpha1.LoadBalancerConsumers) client.Object {
		o := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "games"}}
		o.Spec.Consumers = c
		return o
	}
	cases := map[string]struct {
		reason  string
		mg      resource.Managed
		objs    []client.Object
		wantErr string
	}{
		"NoNamespace": {
			reason: "A reference without a namespace is to the resource's own namespace.",
			mg: &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p"},
				Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{LoadBalancerIDRefs: []xpv2.NamespacedReference{{Name: "lb"}}}}},
		},
		"OwnNamespace": {
			reason: "A reference that names the resource's own namespace resolves.",
			mg: &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p"},
				Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{LoadBalancerIDRefs: []xpv2.NamespacedReference{{Name: "lb", Namespace: "team-a"}}}}},
		},
		"OtherNamespaceInList": {
			reason: "One reference of a list into another namespace refuses the whole resource.",
			mg: &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p"},
				Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{LoadBalancerIDRefs: []xpv2.NamespacedReference{{Name: "lb"}, {Name: "games", Namespace: "team-b"}}}}},
			wantErr: "spec.forProvider.loadBalancerIdRefs[1] names namespace team-b (no such LoadBalancer): " + RefRule,
		},
		"ConsentingLoadBalancer": {
			reason: "A reference to a LoadBalancer whose consent lets the namespace in resolves.",
			objs:   []client.Object{lb(&clbv1alpha1.LoadBalancerConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}})},
			mg: &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p"},
				Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{LoadBalancerIDRefs: []xpv2.NamespacedReference{{Name: "lb"}, {Name: "games", Namespace: "team-b"}}}}},
		},
		"SilentLoadBalancer": {
			reason: "A LoadBalancer without consumers lets no reference from another namespace resolve, and the error says what would.",
			objs:   []client.Object{lb(nil)},
			mg: &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "l"},
				Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{LoadBalancerIDRef: &xpv2.NamespacedReference{Name: "games", Namespace: "team-b"}}}},
			wantErr: "spec.forProvider.loadBalancerIdRef names namespace team-b (its spec.consumers.namespaces from: Same (its own namespace only) does not let team-a in)",
		},
		"ConsentNotForSelectors": {
			reason: "A selector into another namespace is refused even where a LoadBalancer consents: it could pick any of them.",
			objs:   []client.Object{lb(&clbv1alpha1.LoadBalancerConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}})},
			mg: &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "l"},
				Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{LoadBalancerIDSelector: &xpv2.NamespacedSelector{Namespace: "team-b"}}}},
			wantErr: "spec.forProvider.loadBalancerIdSelector names namespace team-b (a selector)",
		},
		"OtherNamespaceSelector": {
			reason: "A selector into another namespace is refused like a reference.",
			mg: &clbv1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "l"},
				Spec: clbv1alpha1.ListenerSpec{ForProvider: clbv1alpha1.ListenerParameters{LoadBalancerIDSelector: &xpv2.NamespacedSelector{Namespace: "team-b"}}}},
			wantErr: "spec.forProvider.loadBalancerIdSelector names namespace team-b",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resolved := false
			kube := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(tc.objs...).Build()
			r := OwnNamespaceRefs{Kube: kube, ReferenceResolver: managed.ReferenceResolverFn(func(context.Context, resource.Managed) error {
				resolved = true
				return nil
			})}
			err := r.ResolveReferences(context.Background(), tc.mg)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("%s\nResolveReferences: %v", tc.reason, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("%s\nResolveReferences: got %v, want an error containing %q", tc.reason, err, tc.wantErr)
			}
			if resolved != (tc.wantErr == "") {
				t.Errorf("%s\nresolved: %t, want %t", tc.reason, resolved, tc.wantErr == "")
			}
		})
	}
}
