package allocation

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

func TestConsentsCheck(t *testing.T) {
	ctx := context.Background()
	guest := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guest", Labels: map[string]string{"team": "b"}}}
	selector := clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}
	shared := func(c clbv1alpha1.NamespaceConsent) *clbv1alpha1.PortPool {
		pp := portPool()
		pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: c}
		return pp
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  interceptor.Funcs
		ns     string
		pool   string
		want   *NotAllowed
		err    string
		nsRead bool // the consumer Namespace was read
	}{
		"OwnNamespace": {
			reason: "A pool always serves its own namespace, unread.",
			funcs:  failGet(&clbv1alpha1.PortPool{}, errBoom),
			ns:     poolNS, pool: poolKey,
		},
		"NotAKey": {
			reason: "What is not a pool key is left to the allocation.",
			ns:     "guest", pool: "web",
		},
		"PoolUnreadable": {
			reason: "A pool that cannot be read is left to the allocation, which reports it.",
			funcs:  failGet(&clbv1alpha1.PortPool{}, errBoom),
			ns:     "guest", pool: poolKey,
		},
		"Same": {
			reason: "A pool that says nothing serves no other namespace, and the Namespace is not read for it.",
			objs:   []client.Object{portPool(), guest},
			ns:     "guest", pool: poolKey,
			want: &NotAllowed{Pool: poolKey, Namespace: "guest"},
		},
		"All": {
			reason: "from: All serves every namespace without reading it.",
			objs:   []client.Object{shared(clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll})},
			ns:     "guest", pool: poolKey,
		},
		"SelectorMatches": {
			reason: "A selector serves the namespaces whose labels it matches.",
			objs:   []client.Object{shared(selector), guest},
			ns:     "guest", pool: poolKey, nsRead: true,
		},
		"SelectorMisses": {
			reason: "A selector refuses the namespaces it does not match, quoting itself.",
			objs:   []client.Object{shared(selector), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guest"}}},
			ns:     "guest", pool: poolKey, nsRead: true,
			want: &NotAllowed{Pool: poolKey, Namespace: "guest", Rule: selector},
		},
		"NamespaceMissing": {
			reason: "A consumer Namespace that does not exist is allowed nothing.",
			objs:   []client.Object{shared(selector)},
			ns:     "guest", pool: poolKey, nsRead: true,
			want: &NotAllowed{Pool: poolKey, Namespace: "guest", Rule: selector},
		},
		"NamespaceUnreadable": {
			reason: "A consumer Namespace that cannot be read is an error, not a refusal.",
			objs:   []client.Object{shared(selector), guest},
			funcs:  failGet(&corev1.Namespace{}, errBoom),
			ns:     "guest", pool: poolKey, nsRead: true,
			err: "cannot get Namespace guest: boom",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			read := false
			kube := newKube(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Namespace); ok {
					read = true
				}
				if tc.funcs.Get != nil {
					return tc.funcs.Get(ctx, c, key, obj, opts...)
				}
				return c.Get(ctx, key, obj, opts...)
			}}, tc.objs...)
			got, err := NewConsents(kube).Check(ctx, tc.ns, tc.pool)
			if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
				t.Fatalf("%s\nCheck(...): error %v, want %q", tc.reason, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck(...): -want, +got:\n%s", tc.reason, diff)
			}
			if read != tc.nsRead {
				t.Errorf("%s\nthe consumer Namespace was read: %t, want %t", tc.reason, read, tc.nsRead)
			}
		})
	}
}

// TestNotAllowedMessage: the refusal names the pool, the namespace, the
// rule and what the owner can do.
func TestNotAllowedMessage(t *testing.T) {
	e := &NotAllowed{Pool: poolKey, Namespace: "guest", Rule: clbv1alpha1.NamespaceConsent{}}
	want := "PortPool team-a/web does not serve namespace guest: its spec.consumers.namespaces is from: Same (its own namespace only); its owner can allow guest there"
	if e.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", e.Error(), want)
	}
}
