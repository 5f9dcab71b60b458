package targetset

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// TestOwnership: a TargetSet registers or deregisters targets only on
// load balancers whose owner tags name its namespace, or that carry none.
func TestOwnership(t *testing.T) {
	inNamespace := func(cr *v1alpha1.TargetSet) { cr.SetNamespace("team-a") }
	type want struct {
		err    string // part of the error; "" for none
		writes []string
	}
	cases := map[string]struct {
		reason string
		tags   map[string]string // of lb-1
		cr     *v1alpha1.TargetSet
		want   want
	}{
		"OtherRegister": {
			reason: "No target is put on a listener of another namespace's load balancer.",
			tags:   map[string]string{mr.TagNamespace: "team-b"},
			cr:     targetSet(inNamespace),
			want:   want{err: "load balancer lb-1 belongs to namespace team-b, not team-a: " + mr.OwnerRule},
		},
		"OtherImportDeleted": {
			reason: "Deleting an import of another namespace's targets lets go of them: no DeregisterTargets.",
			tags:   map[string]string{mr.TagPool: "team-b/games"},
			cr:     targetSet(inNamespace, named("lbl-1"), deleted),
		},
		"OwnRegister": {
			reason: "Targets are put on its own namespace's load balancer.",
			tags:   map[string]string{mr.TagNamespace: "team-a"},
			cr:     targetSet(inNamespace),
			want:   want{writes: []string{"RegisterTargets lb-1 lbl-1//10.0.0.1:80=10 lbl-1//10.0.0.2:80=20"}},
		},
		"UntaggedDeleted": {
			reason: "A load balancer with no owner tags has its targets deregistered as before.",
			cr:     targetSet(inNamespace, named("lbl-1"), deleted),
			want:   want{writes: []string{"DeregisterTargets lb-1 lbl-1//10.0.0.9:80"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api := cloud(tcp(backend("10.0.0.9", 80, 10)))
			if !meta.WasDeleted(tc.cr) {
				api = cloud(tcp())
			}
			api.AddLB("lb-1", tc.tags)
			e := &external{c: api}
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
			if diff := cmp.Diff(tc.want.writes, api.Writes()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
