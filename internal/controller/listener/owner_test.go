package listener

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	clbfake "github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

var _ api = (*clbfake.Cloud)(nil)

func listenerOf(mods ...func(*v1alpha1.Listener)) *v1alpha1.Listener {
	cr := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "uid-a"},
		Spec:       v1alpha1.ListenerSpec{ForProvider: v1alpha1.ListenerParameters{LoadBalancerID: clb.Ptr("lb-1"), Protocol: "TCP", Port: 80}},
	}
	for _, m := range mods {
		m(cr)
	}
	return cr
}

func named(id string) func(*v1alpha1.Listener) {
	return func(cr *v1alpha1.Listener) { meta.SetExternalName(cr, id) }
}

func deleted(cr *v1alpha1.Listener) {
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
}

// rescheduled asks for another scheduler than the cloud's: an Update.
func rescheduled(cr *v1alpha1.Listener) { cr.Spec.ForProvider.Scheduler = clb.Ptr("LEAST_CONN") }

// TestOwnership: a Listener creates, adopts, changes or deletes listeners
// only on load balancers whose owner tags name its namespace, whose
// LoadBalancer lets its namespace in (within the bound), or that carry
// none and are its own account's or granted.
func TestOwnership(t *testing.T) {
	type want struct {
		err    string // part of the error; "" for none
		exists bool
		writes []string
	}
	cases := map[string]struct {
		reason   string
		tags     map[string]string // of lb-1
		existing bool              // lb-1 holds lbl-1 on TCP 80
		objs     []client.Object   // in the API server
		cr       *v1alpha1.Listener
		want     want
	}{
		"OtherCreate": {
			reason: "No listener is put on another namespace's load balancer.",
			tags:   map[string]string{mr.TagNamespace: "team-b"},
			cr:     listenerOf(),
			want:   want{err: "load balancer lb-1 belongs to namespace team-b, not team-a: " + mr.OwnerRule},
		},
		"OtherImportChanged": {
			reason:   "A listener of another namespace's load balancer, imported by id, is not changed.",
			tags:     map[string]string{mr.TagPool: "team-b/games"},
			existing: true,
			cr:       listenerOf(named("lbl-1"), rescheduled),
			want:     want{err: "belongs to namespace team-b"},
		},
		"OtherImportDeleted": {
			reason:   "Deleting an import of a listener of another namespace's load balancer lets go of it: no DeleteListener.",
			tags:     map[string]string{mr.TagNamespace: "team-b"},
			existing: true,
			cr:       listenerOf(named("lbl-1"), deleted),
		},
		"OwnCreate": {
			reason: "A listener is put on its own namespace's load balancer.",
			tags:   map[string]string{mr.TagNamespace: "team-a"},
			cr:     listenerOf(),
			want:   want{writes: []string{"CreateListener lb-1 TCP 80..80 end=0"}},
		},
		"OwnDeleted": {
			reason:   "A listener of its own namespace's load balancer is deleted.",
			tags:     map[string]string{mr.TagNamespace: "team-a"},
			existing: true,
			cr:       listenerOf(named("lbl-1"), deleted),
			want:     want{exists: true, writes: []string{"DeleteListeners lb-1 1"}},
		},
		"UntaggedCreate": {
			reason: "A load balancer made in the console (no owner tags) takes listeners through the namespace's own ProviderConfig.",
			cr:     listenerOf(),
			want:   want{writes: []string{"CreateListener lb-1 TCP 80..80 end=0"}},
		},
		"UntaggedNotGranted": {
			reason: "Through a ClusterProviderConfig, an untagged load balancer no grant gives the namespace takes no listener.",
			objs:   []client.Object{config()},
			cr:     listenerOf(viaCluster),
			want:   want{err: "carries no owner tags (made in the console or by another tool): no grant of ClusterProviderConfig default gives it to namespace team-a"},
		},
		"UntaggedGranted": {
			reason: "A grant of the load balancer's id lets the namespace put a listener on it.",
			objs:   []client.Object{config(clusterv1alpha1.ObjectGrant{IDs: []string{"lb-1"}, Namespaces: v1alpha1.NamespaceConsent{From: v1alpha1.ConsentAll}})},
			cr:     listenerOf(viaCluster),
			want:   want{writes: []string{"CreateListener lb-1 TCP 80..80 end=0"}},
		},
		"SharedCreate": {
			reason: "A load balancer whose LoadBalancer lets the namespace in takes its listener.",
			tags:   edgeTags,
			objs:   []client.Object{edge(v1alpha1.ConsentAll, 0)},
			cr:     listenerOf(),
			want:   want{writes: []string{"CreateListener lb-1 TCP 80..80 end=0"}},
		},
		"NotShared": {
			reason: "A LoadBalancer that says nothing lets no other namespace in.",
			tags:   edgeTags,
			objs:   []client.Object{edge("", 0)},
			cr:     listenerOf(),
			want:   want{err: "does not let namespace team-a in; its owners may let it in there"},
		},
		"SharedOverBound": {
			reason: "A listener over the namespace's bound on the shared load balancer is refused before its create.",
			tags:   edgeTags,
			objs:   []client.Object{edge(v1alpha1.ConsentAll, 1), listenerOf(func(l *v1alpha1.Listener) { l.Name, l.UID = "first", "uid-first"; meta.SetExternalName(l, "lbl-9") })},
			cr:     listenerOf(),
			want:   want{err: "namespace team-a holds 1 listeners on load balancer lb-1 of namespace team-b, its bound there"},
		},
		"OwnNotBounded": {
			reason: "The owner's own listeners are not bounded.",
			tags:   map[string]string{mr.TagNamespace: "team-a", mr.TagKind: v1alpha1.LoadBalancerKind, mr.TagName: "edge", mr.TagUID: "uid-edge"},
			objs:   []client.Object{listenerOf(func(l *v1alpha1.Listener) { l.Name, l.UID = "first", "uid-first"; meta.SetExternalName(l, "lbl-9") })},
			cr:     listenerOf(),
			want:   want{writes: []string{"CreateListener lb-1 TCP 80..80 end=0"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cloud := clbfake.New()
			cloud.AddLB("lb-1", tc.tags)
			if tc.existing {
				cloud.Listeners["lb-1"] = []*clbsdk.Listener{{ListenerId: clb.Ptr("lbl-1"), ListenerName: clb.Ptr("theirs"), Protocol: clb.Ptr("TCP"), Port: clb.Ptr(int64(80))}}
			}
			kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.objs...).Build()
			e := &external{c: cloud, kube: kube, owners: mr.Owners{Kube: kube}}
			ctx := context.Background()
			obs, err := e.Observe(ctx, tc.cr)
			if err == nil {
				switch {
				case meta.WasDeleted(tc.cr):
					if obs.ResourceExists {
						_, err = e.Delete(ctx, tc.cr)
					}
				case !obs.ResourceExists:
					_, err = e.Create(ctx, tc.cr)
				case !obs.ResourceUpToDate:
					_, err = e.Update(ctx, tc.cr)
				}
			}
			if tc.want.err == "" && err != nil || tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nreconcile: %v, want error containing %q", tc.reason, err, tc.want.err)
			}
			if obs.ResourceExists != tc.want.exists {
				t.Errorf("%s\nObserve: exists %t, want %t", tc.reason, obs.ResourceExists, tc.want.exists)
			}
			if diff := cmp.Diff(tc.want.writes, cloud.Writes()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// edgeTags are the owner tags of LoadBalancer team-b/edge's load balancer.
var edgeTags = map[string]string{mr.TagNamespace: "team-b", mr.TagKind: v1alpha1.LoadBalancerKind, mr.TagName: "edge", mr.TagUID: "uid-edge"}

// edge is LoadBalancer team-b/edge with consent from (none when "") and a
// listener bound (the default when 0).
func edge(from string, bound int64) *v1alpha1.LoadBalancer {
	lb := &v1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "edge", UID: "uid-edge"}}
	if from != "" {
		lb.Spec.Consumers = &v1alpha1.LoadBalancerConsumers{Namespaces: v1alpha1.NamespaceConsent{From: from}}
		if bound > 0 {
			lb.Spec.Consumers.MaxListenersPerNamespace = &bound
		}
	}
	return lb
}

// config is ClusterProviderConfig default serving every namespace, with
// grants.
func config(grants ...clusterv1alpha1.ObjectGrant) *clusterv1alpha1.ClusterProviderConfig {
	c := &clusterv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	c.Spec.Consumers = &clusterv1alpha1.ConfigConsumers{Namespaces: v1alpha1.NamespaceConsent{From: v1alpha1.ConsentAll}, Grants: grants}
	return c
}

// viaCluster has the listener use ClusterProviderConfig default.
func viaCluster(cr *v1alpha1.Listener) {
	cr.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: clusterv1alpha1.ClusterProviderConfigKind, Name: "default"})
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.SchemeBuilder.AddToScheme, clusterv1alpha1.SchemeBuilder.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
