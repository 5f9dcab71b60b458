package rule

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// TestOwnership: a Rule is made, changed or deleted only on load balancers
// whose owner tags name its namespace, or that carry none.
func TestOwnership(t *testing.T) {
	deleted := func(cr *v1alpha1.Rule) { cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()}) }
	inNamespace := func(cr *v1alpha1.Rule) { cr.SetNamespace("team-a") }
	type want struct {
		err    string // part of the error; "" for none
		writes []string
	}
	cases := map[string]struct {
		reason string
		tags   map[string]string // of lb-1
		exists bool              // lbl-1 holds the rule loc-1
		cr     *v1alpha1.Rule
		want   want
	}{
		"OtherCreate": {
			reason: "No rule is put on a listener of another namespace's load balancer.",
			tags:   map[string]string{mr.TagNamespace: "team-b"},
			cr:     rule(inNamespace),
			want:   want{err: "load balancer lb-1 belongs to namespace team-b, not team-a: " + mr.OwnerRule},
		},
		"OtherDeleted": {
			reason: "Deleting an import of a rule of another namespace's load balancer lets go of it: no DeleteRule.",
			tags:   map[string]string{mr.TagNamespace: "team-b"},
			exists: true,
			cr:     rule(inNamespace, withExternalName("loc-1"), deleted),
		},
		"OwnCreate": {
			reason: "A rule is put on its own namespace's load balancer.",
			tags:   map[string]string{mr.TagNamespace: "team-a"},
			cr:     rule(inNamespace),
			want:   want{writes: []string{"CreateRule lb-1 lbl-1 [loc-1]"}},
		},
		"UntaggedCreate": {
			reason: "A load balancer with no owner tags takes rules as before.",
			cr:     rule(inNamespace),
			want:   want{writes: []string{"CreateRule lb-1 lbl-1 [loc-1]"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := listener("HTTP")
			if tc.exists {
				l = listener("HTTP", cloudRule())
			}
			cloud := region(clb.TaskSucceeded, l)
			cloud.AddLB("lb-1", tc.tags)
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
				}
			}
			if tc.want.err == "" && err != nil || tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nreconcile: %v, want error containing %q", tc.reason, err, tc.want.err)
			}
			if obs.ResourceExists {
				t.Errorf("%s\nObserve: the rule exists", tc.reason)
			}
			if diff := cmp.Diff(tc.want.writes, cloud.Writes()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
