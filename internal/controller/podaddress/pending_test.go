package podaddress

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
)

// TestPendingForeign: a Pod that has not run on a node keeps ports in
// pools of other namespaces for the hold after its creation, then gives
// them back; its own namespace's pools, a running Pod and a hold of 0 are
// not bounded.
func TestPendingForeign(t *testing.T) {
	created := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p"}}
	pod := func(hostIP string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p", CreationTimestamp: metav1.NewTime(created)}}
		p.Status.HostIP = hostIP
		return p
	}
	in := func(pools ...string) []want {
		var ws []want
		for _, p := range pools {
			ws = append(ws, want{Port: allocation.Port{Pool: p}})
		}
		return ws
	}
	const hold = 15 * time.Minute
	cases := map[string]struct {
		reason    string
		hold      time.Duration
		pod       *corev1.Pod
		ws        []want
		after     time.Duration // since the Pod's creation
		wantPools []string
		wantLeft  time.Duration
	}{
		"HeldWhileYoung": {
			reason: "Within the hold the ports stay; the reconcile comes back when it ends.",
			hold:   hold, pod: pod(""), ws: in("team-b/games", "team-a/own"), after: 10 * time.Minute,
			wantLeft: 5 * time.Minute,
		},
		"GivenBackAfterHold": {
			reason: "Past the hold, the pools of other namespaces are given back, each once.",
			hold:   hold, pod: pod(""), ws: in("team-b/games", "team-a/own", "team-b/games", "tke-port-pools/pool-a"), after: hold,
			wantPools: []string{"team-b/games", "tke-port-pools/pool-a"},
		},
		"OwnPoolsOnly": {
			reason: "A namespace's own pools are its to spend: no bound.",
			hold:   hold, pod: pod(""), ws: in("team-a/own"), after: time.Hour,
		},
		"Running": {
			reason: "A Pod that runs on a node (its host IP set) is not bounded.",
			hold:   hold, pod: pod("10.0.0.1"), ws: in("team-b/games"), after: time.Hour,
		},
		"NoHold": {
			reason: "A hold of 0 keeps the ports for ever.",
			pod:    pod(""), ws: in("team-b/games"), after: time.Hour,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pools, left := limits{pendingHold: tc.hold}.pendingForeign(pa, tc.pod, tc.ws, created.Add(tc.after))
			if diff := cmp.Diff(tc.wantPools, pools); diff != "" {
				t.Errorf("%s\npools: -want +got:\n%s", tc.reason, diff)
			}
			if left != tc.wantLeft {
				t.Errorf("%s\nleft: %s, want %s", tc.reason, left, tc.wantLeft)
			}
		})
	}
}
