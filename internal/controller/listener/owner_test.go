package listener

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

var _ api = (*fake.Cloud)(nil)

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
// only on load balancers whose owner tags name its namespace, or that
// carry none.
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
			reason: "A load balancer made in the console (no owner tags) takes listeners as before.",
			cr:     listenerOf(),
			want:   want{writes: []string{"CreateListener lb-1 TCP 80..80 end=0"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cloud := fake.New()
			cloud.AddLB("lb-1", tc.tags)
			if tc.existing {
				cloud.Listeners["lb-1"] = []*clbsdk.Listener{{ListenerId: clb.Ptr("lbl-1"), ListenerName: clb.Ptr("theirs"), Protocol: clb.Ptr("TCP"), Port: clb.Ptr(int64(80))}}
			}
			e := &external{c: cloud}
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
