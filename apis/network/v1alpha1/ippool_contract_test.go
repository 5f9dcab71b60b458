package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// TestClaimSetPhase: Ready says what the phase says (True only while
// Bound), the IP is kept only while Bound, and setting what is already
// there reports no change, also for a claim written before it had Ready.
func TestClaimSetPhase(t *testing.T) {
	for _, tc := range []struct {
		phase, ip, wantIP string
		ready             corev1.ConditionStatus
		reason            xpv2.ConditionReason
	}{
		{ClaimBound, "10.0.0.5", "10.0.0.5", corev1.ConditionTrue, xpv2.ReasonAvailable},
		{ClaimPending, "", "", corev1.ConditionFalse, ClaimPending},
		{"", "", "", corev1.ConditionFalse, ClaimPending},
		{ClaimExpired, "10.0.0.5", "", corev1.ConditionFalse, ClaimExpired},
	} {
		s := NetIPClaimStatus{}
		if !s.SetPhase(tc.phase, tc.ip) {
			t.Errorf("%s: no change reported on an empty status", tc.phase)
		}
		c := s.GetCondition(xpv2.TypeReady)
		if s.Phase != tc.phase || s.BoundedIP != tc.wantIP || c.Status != tc.ready || c.Reason != tc.reason || c.Message == "" {
			t.Errorf("%s: phase %q IP %q Ready %+v", tc.phase, s.Phase, s.BoundedIP, c)
		}
		if s.SetPhase(tc.phase, tc.ip) {
			t.Errorf("%s: a change reported when setting the same phase", tc.phase)
		}
	}
	old := NetIPClaimStatus{Phase: ClaimBound, BoundedIP: "10.0.0.5"}
	if !old.SetPhase(ClaimBound, "10.0.0.5") || old.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue {
		t.Errorf("a claim without Ready did not get it: %+v", old)
	}
}
