package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// TestSyncedOfStates: only states that wait on a person make Synced False,
// with the message users see.
func TestSyncedOfStates(t *testing.T) {
	for _, s := range []string{StatePending, StateAllocated, StateBound, StateWaitBackend, StateHeld, StateIsolated, StateFallbackPort} {
		if c := SyncedCondition(WaitsOnSomeone(s), "m"); c.Status != corev1.ConditionTrue || c.Reason != xpv2.ReasonReconcileSuccess {
			t.Errorf("%s: %+v, want Synced=True", s, c)
		}
	}
	for _, s := range []string{StateNoPortAvailable, StatePoolNotFound, StateInvalid, StateQuotaExceeded} {
		c := SyncedCondition(WaitsOnSomeone(s), "no port")
		if c.Type != xpv2.TypeSynced || c.Status != corev1.ConditionFalse || c.Reason != xpv2.ReasonReconcileError || c.Message != "no port" {
			t.Errorf("%s: %+v, want Synced=False ReconcileError \"no port\"", s, c)
		}
	}
}
