package ippool

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// TestSyncedFirst: Synced moves before Ready, the others keep their order.
func TestSyncedFirst(t *testing.T) {
	cs := []xpv2.Condition{
		{Type: xpv2.TypeReady, Status: corev1.ConditionTrue},
		{Type: "Other", Status: corev1.ConditionTrue},
		{Type: xpv2.TypeSynced, Status: corev1.ConditionFalse},
	}
	syncedFirst(cs)
	var got []xpv2.ConditionType
	for _, c := range cs {
		got = append(got, c.Type)
	}
	want := []xpv2.ConditionType{xpv2.TypeSynced, xpv2.TypeReady, "Other"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
