package eip

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// TestAllocateRequestOwnerTags: a Pod's EIP carries the owner tag that
// finds it again and its PodAddress's namespace, kind and name, so that
// no Address of another namespace may import it (mr.Owners).
func TestAllocateRequestOwnerTags(t *testing.T) {
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pod-0", UID: "uid-pa"}}
	pa.Status.EIP = &v1alpha1.EIPBinding{State: v1alpha1.EIPAllocating, OwnerTag: "uid-pa", Bandwidth: 10}
	want := map[string]string{TagOwner: "uid-pa", mr.TagNamespace: "team-a", mr.TagKind: "PodAddress", mr.TagName: "pod-0"}
	if diff := cmp.Diff(want, AllocateRequest(pa).Tags); diff != "" {
		t.Errorf("tags: -want +got:\n%s", diff)
	}
	if ns, known := mr.OwnerNamespace(want); !known || ns != "team-a" {
		t.Errorf("the EIP's owner is %q (known %t), want team-a: another namespace could act on it", ns, known)
	}
}

// TestOwnedBy: an EIP id recorded in a PodAddress is acted on only when
// the EIP's owner tags agree that it is that PodAddress's; a forged record
// naming another team's or a console-made EIP is treated as gone.
func TestOwnedBy(t *testing.T) {
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pod-0", UID: "uid-pa"}}
	cases := map[string]struct {
		reason string
		tags   map[string]string
		want   bool
	}{
		"Own":         {"Its own EIP, tagged with its namespace.", map[string]string{TagOwner: "uid-pa-1", mr.TagNamespace: "team-a"}, true},
		"OwnWarm":     {"A warm EIP of a policy of its namespace, taken for it.", map[string]string{mr.TagEIPWarmPool: "team-a/lobby"}, true},
		"OldOwn":      {"An EIP tagged before EIPs carried their namespace, made for it.", map[string]string{TagOwner: "uid-pa-1700000000"}, true},
		"OtherTeam":   {"Another namespace's EIP, whatever its owner tag says.", map[string]string{TagOwner: "uid-pa-1", mr.TagNamespace: "team-b"}, false},
		"OtherWarm":   {"A warm EIP of another namespace's policy.", map[string]string{mr.TagEIPWarmPool: "team-b/lobby"}, false},
		"OldOther":    {"An old EIP made for another PodAddress.", map[string]string{TagOwner: "uid-other-1"}, false},
		"Console":     {"An EIP made in the console carries no owner tags.", map[string]string{"team": "a"}, false},
		"NoTagsAtAll": {"No tags at all.", nil, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ownedBy(tc.tags, pa); got != tc.want {
				t.Errorf("%s\nownedBy(%v) = %t, want %t", tc.reason, tc.tags, got, tc.want)
			}
		})
	}
}
