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
