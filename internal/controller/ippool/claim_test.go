package ippool

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// TestClaimStatus: Bound to a held or kept NetIP; without one, Expired
// once it had one, else Pending; a NetIP being deleted binds nothing.
func TestClaimStatus(t *testing.T) {
	ip := func(name, status string) v1alpha1.NetIP {
		return v1alpha1.NetIP{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.NetIPStatus{Status: status, Fixed: true, IPClaimKey: "n/c"}}
	}
	gone := ip("10.0.0.9", v1alpha1.NetIPReserved)
	gone.DeletionTimestamp = &metav1.Time{}
	bound := v1alpha1.NetIPClaimStatus{BoundedIP: "10.0.0.5", Phase: v1alpha1.ClaimBound}
	pending := v1alpha1.NetIPClaimStatus{Phase: v1alpha1.ClaimPending}
	expired := v1alpha1.NetIPClaimStatus{Phase: v1alpha1.ClaimExpired}
	for name, tc := range map[string]struct {
		had  v1alpha1.NetIPClaimStatus
		ips  []v1alpha1.NetIP
		want v1alpha1.NetIPClaimStatus
	}{
		"new":                   {v1alpha1.NetIPClaimStatus{}, nil, pending},
		"active":                {v1alpha1.NetIPClaimStatus{}, []v1alpha1.NetIP{ip("10.0.0.5", v1alpha1.NetIPActive)}, bound},
		"reserved":              {pending, []v1alpha1.NetIP{ip("10.0.0.5", v1alpha1.NetIPReserved)}, bound},
		"lost its IP":           {bound, nil, expired},
		"stays expired":         {expired, nil, expired},
		"bound again":           {expired, []v1alpha1.NetIP{ip("10.0.0.5", v1alpha1.NetIPActive)}, bound},
		"NetIP being deleted":   {bound, []v1alpha1.NetIP{gone}, expired},
		"wrong IP put right":    {v1alpha1.NetIPClaimStatus{BoundedIP: "10.0.0.1", Phase: v1alpha1.ClaimBound}, []v1alpha1.NetIP{ip("10.0.0.5", v1alpha1.NetIPReserved)}, bound},
		"pending stays pending": {pending, nil, pending},
	} {
		if got := claimStatus(tc.had, tc.ips); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}
