package ippool

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestClaimPhase: Bound to a held or kept NetIP; without one, Expired
// once it had one, else Pending; a NetIP being deleted binds nothing.
func TestClaimPhase(t *testing.T) {
	ip := func(name, status string) v1alpha1.NetIP {
		return v1alpha1.NetIP{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.NetIPStatus{Status: status, Fixed: true, IPClaimKey: "n/c"}}
	}
	gone := ip("10.0.0.9", v1alpha1.NetIPReserved)
	gone.DeletionTimestamp = &metav1.Time{}
	type phase struct{ phase, ip string }
	bound := phase{v1alpha1.ClaimBound, "10.0.0.5"}
	pending := phase{v1alpha1.ClaimPending, ""}
	expired := phase{v1alpha1.ClaimExpired, ""}
	for name, tc := range map[string]struct {
		had  string
		ips  []v1alpha1.NetIP
		want phase
	}{
		"new":                   {"", nil, pending},
		"active":                {"", []v1alpha1.NetIP{ip("10.0.0.5", v1alpha1.NetIPActive)}, bound},
		"reserved":              {v1alpha1.ClaimPending, []v1alpha1.NetIP{ip("10.0.0.5", v1alpha1.NetIPReserved)}, bound},
		"lost its IP":           {v1alpha1.ClaimBound, nil, expired},
		"stays expired":         {v1alpha1.ClaimExpired, nil, expired},
		"bound again":           {v1alpha1.ClaimExpired, []v1alpha1.NetIP{ip("10.0.0.5", v1alpha1.NetIPActive)}, bound},
		"NetIP being deleted":   {v1alpha1.ClaimBound, []v1alpha1.NetIP{gone}, expired},
		"pending stays pending": {v1alpha1.ClaimPending, nil, pending},
	} {
		if p, a := claimPhase(tc.had, tc.ips); (phase{p, a}) != tc.want {
			t.Errorf("%s: %s %q, want %+v", name, p, a, tc.want)
		}
	}
}
