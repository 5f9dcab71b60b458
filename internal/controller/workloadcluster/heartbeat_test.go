package workloadcluster

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func TestHeartbeatOf(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	renew := metav1.NewMicroTime(at)
	for name, tc := range map[string]struct {
		spec    coordinationv1.LeaseSpec
		holder  string
		expires time.Time
	}{
		"created by the provider, never renewed": {},
		"renewed without a holder":               {spec: coordinationv1.LeaseSpec{RenewTime: &renew}},
		"renewed, its own duration": {
			spec:   coordinationv1.LeaseSpec{HolderIdentity: ptr.To("agent"), RenewTime: &renew, LeaseDurationSeconds: ptr.To[int32](6)},
			holder: "agent", expires: at.Add(6 * time.Second),
		},
		"renewed, no duration: three default heartbeats": {
			spec:   coordinationv1.LeaseSpec{HolderIdentity: ptr.To("agent"), RenewTime: &renew},
			holder: "agent", expires: at.Add(3 * v1alpha1.DefaultHeartbeatInterval),
		},
	} {
		t.Run(name, func(t *testing.T) {
			hb := heartbeatOf(&coordinationv1.Lease{Spec: tc.spec})
			if hb.holder != tc.holder || !hb.expires.Equal(tc.expires) {
				t.Errorf("holder %q expires %v, want %q %v", hb.holder, hb.expires, tc.holder, tc.expires)
			}
		})
	}
}
