package podaddress

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestWatchMaps: each watch wakes the PodAddresses its change concerns,
// and only those.
func TestWatchMaps(t *testing.T) {
	pa := func(name, state string, pools ...string) *v1alpha1.PodAddress {
		p := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		p.Status.State = state
		for _, k := range pools {
			nn, _ := v1alpha1.ParsePoolKey(k)
			p.Spec.Ports = append(p.Spec.Ports, v1alpha1.PortRequest{Pools: []v1alpha1.PoolRef{{Namespace: nn.Namespace, Name: nn.Name}}})
		}
		return p
	}
	policyPA := pa("by-policy", v1alpha1.StateBound, "team-a/web")
	policyPA.Spec.Source = v1alpha1.PolicySource("games")
	// held is a PodAddress bound in pool.
	held := func(name, pool string) *v1alpha1.PodAddress {
		p := pa(name, v1alpha1.StateBound, pool)
		p.Status.Bindings = []v1alpha1.PortBinding{{Pool: pool, Protocol: "TCP", ContainerPort: 80, LoadBalancerID: lb1, Port: 100,
			ListenerIDs: map[string]string{"TCP": listenerOf(100)}}}
		return p
	}
	openPool := sharedPool()
	openPool.Name = "open"
	openPool.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	remote := func(name, cluster string) *v1alpha1.RemotePod {
		rp := &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		rp.Spec.Cluster = cluster
		return rp
	}
	labelled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "labelled", Labels: map[string]string{"app": "game"}}}
	objs := []client.Object{
		pa("bound", v1alpha1.StateBound, "team-a/web"),
		pa("waiting", v1alpha1.StateNoPortAvailable, "team-a/web"),
		pa("elsewhere", v1alpha1.StatePoolNotFound, "team-a/other"),
		pa("shared-user", v1alpha1.StatePoolNotAllowed, "shared/web"),
		pa("not-granted", v1alpha1.StateNotGranted),
		pa("quota", v1alpha1.StateQuotaExceeded),
		held("in-shared", "shared/web"), held("in-open", "shared/open"),
		remote("of-wc", "wc"), remote("of-other", "other"),
		policyPA, labelled,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabelled"}},
	}
	kube := kfake.NewClientBuilder().WithScheme(kubeScheme(t)).WithObjects(objs...).
		WithIndex(&v1alpha1.PodAddress{}, v1alpha1.PoolIndex, v1alpha1.PoolsOf).Build()
	r := NewReconciler(kube, nil, logging.NewNopLogger(), &eventLog{})
	ctx := context.Background()
	pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "games"}}
	pol.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "game"}}

	cases := map[string]struct {
		reason string
		got    []reconcile.Request
		want   []string
	}{
		"PortPool": {
			reason: "A pool's change wakes its PodAddresses that are not serving, not those bound in it.",
			got:    r.waitersOfPool(ctx, portPool()),
			want:   []string{"waiting"},
		},
		"PortPoolOfAnotherNamespace": {
			reason: "A pool of another namespace wakes the PodAddresses it holds bindings of but no longer serves, bound or not.",
			got:    r.waitersOfPool(ctx, sharedPool()),
			want:   []string{"in-shared", "shared-user"},
		},
		"PortPoolSharedWithAll": {
			reason: "A pool shared with every namespace wakes none of those bound in it.",
			got:    r.waitersOfPool(ctx, openPool),
		},
		"WorkloadCluster": {
			reason: "A WorkloadCluster's change wakes its RemotePods, not those of other clusters.",
			got:    r.remotePodsOfCluster(ctx, &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wc"}}),
			want:   []string{"of-wc"},
		},
		"Namespace": {
			reason: "A namespace's labels wake its PodAddresses that use a pool of another namespace.",
			got:    r.usersOfOtherPools(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}),
			want:   []string{"in-open", "in-shared", "shared-user"},
		},
		"EIPGrant": {
			reason: "A grant's change wakes the PodAddresses refused an EIP.",
			got:    r.refusedEIPs(ctx, &v1alpha1.EIPGrant{}),
			want:   []string{"not-granted", "quota"},
		},
		"Policy": {
			reason: "A policy's change wakes the Pods it selects and the PodAddresses it made.",
			got:    r.podsOfPolicy(ctx, pol),
			want:   []string{"by-policy", "labelled"},
		},
		"NotAPolicy": {
			reason: "Anything else than a policy wakes nothing.",
			got:    r.podsOfPolicy(ctx, labelled),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, req := range tc.got {
				if req.Namespace != ns {
					t.Errorf("woke %s", req)
				}
				got = append(got, req.Name)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
