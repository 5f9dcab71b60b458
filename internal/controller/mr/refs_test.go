package mr

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

func TestOwnNamespaceRefs(t *testing.T) {
	cases := map[string]struct {
		reason  string
		mg      resource.Managed
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
			wantErr: "spec.forProvider.loadBalancerIdRefs[1] names namespace team-b: references and selectors resolve only within the resource's own namespace (team-a)",
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
			r := OwnNamespaceRefs{ReferenceResolver: managed.ReferenceResolverFn(func(context.Context, resource.Managed) error {
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
