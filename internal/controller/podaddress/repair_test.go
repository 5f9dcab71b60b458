package podaddress

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// TestRepair drives the reconcile of a Bound PodAddress whose target was
// removed behind the provider's back, once the audit recorded the repair
// (audit.Repairs.Record, as a round of the Auditor does).
func TestRepair(t *testing.T) {
	type want struct {
		err     string
		state   string // of the PodAddress; "" for none
		bound   []string
		writes  []string
		events  []string
		waiting bool // the repair is still waiting for its reconcile
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	target := clb.Target{ListenerID: listenerOf(100), EniIP: podIP, Port: 80}
	register := "RegisterTargets lb-1 lbl-100//10.0.0.5:80"
	// missing is the finding of a round that read the cloud after target
	// was removed.
	missing := func(pa *v1alpha1.PodAddress) (metav1.Time, []clb.Target) {
		return *pa.Status.BoundAt, []clb.Target{target}
	}
	cases := map[string]struct {
		reason string
		// found is what the audit found missing, and when the PodAddress
		// it read was bound.
		found func(pa *v1alpha1.PodAddress) (metav1.Time, []clb.Target)
		// then changes the world after the finding.
		then   func(t *testing.T, w *world)
		rounds int
		want   want
	}{
		"Repaired": {
			reason: "A target found missing is registered again through the binder, and the repair said on the PodAddress.",
			found:  missing,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.5:80"}, writes: []string{register},
				events: []string{"Normal TargetRepaired *v1alpha1.PodAddress/pod-0"}},
		},
		"BoundAnew": {
			reason: "A finding about an earlier binding of the PodAddress is dropped: its targets were registered since.",
			found: func(pa *v1alpha1.PodAddress) (metav1.Time, []clb.Target) {
				return metav1.NewTime(pa.Status.BoundAt.Add(-time.Hour)), []clb.Target{target}
			},
			want: want{state: v1alpha1.StateBound},
		},
		"NotItsTarget": {
			reason: "A finding of targets the PodAddress does not record is dropped: nothing of someone else is registered.",
			found: func(pa *v1alpha1.PodAddress) (metav1.Time, []clb.Target) {
				return *pa.Status.BoundAt, []clb.Target{{ListenerID: listenerOf(100), EniIP: "10.9.9.9", Port: 80}}
			},
			want: want{state: v1alpha1.StateBound},
		},
		"RegistrationFails": {
			reason: "A repair the cloud refuses is the reconcile's error, and stays waiting for the next one.",
			found:  missing,
			then:   func(_ *testing.T, w *world) { w.cloud.Errs[lb1] = errBoom },
			want:   want{err: "boom", state: v1alpha1.StateBound, waiting: true},
		},
		"RegistrationFailedThenRepaired": {
			reason: "A repair refused once is performed by a later reconcile.",
			found:  missing,
			then: func(t *testing.T, w *world) {
				w.cloud.Errs[lb1] = errBoom
				if _, err := w.reconcile(t); err == nil {
					t.Fatal("setup: the refused repair is no error")
				}
				delete(w.cloud.Errs, lb1)
			},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.5:80"}, writes: []string{register},
				events: []string{"Normal TargetRepaired *v1alpha1.PodAddress/pod-0"}},
		},
		"PodIPChanged": {
			reason: "A PodAddress bound anew (its Pod's IP changed) before the repair ran drops it: the new target is registered as any.",
			found:  missing,
			then: func(t *testing.T, w *world) {
				w.setPodIP(t, "10.0.0.6")
			},
			rounds: 2,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.6:80"},
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80", "RegisterTargets lb-1 lbl-100//10.0.0.6:80"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"PodGone": {
			reason: "A PodAddress whose Pod is gone drops its repair as it goes.",
			found:  missing,
			then:   func(t *testing.T, w *world) { w.deletePod(t) },
			rounds: 2,
			want:   want{writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, nil, ns, portPool(), pod(podIP))
			if _, err := w.reconcile(t); err != nil {
				t.Fatal(err)
			}
			pa := w.podAddress(t)
			if pa == nil || pa.Status.State != v1alpha1.StateBound {
				t.Fatalf("setup: the PodAddress is not Bound: %+v", pa)
			}
			// Removed behind the provider's back, and found so.
			if _, err := w.cloud.DeregisterTargets(context.Background(), lb1, []clb.Target{target}); err != nil {
				t.Fatal(err)
			}
			boundAt, ts := tc.found(pa)
			w.r.cloud.repairs.Record(context.Background(), key, boundAt, ts, time.Now())
			if tc.then != nil {
				tc.then(t, w)
			}
			w.events.take()
			before := len(w.cloud.Writes())
			var err error
			for range max(tc.rounds, 1) {
				_, err = w.reconcile(t)
			}
			if got := fmt.Sprint(err); (tc.want.err == "") != (err == nil) || !strings.Contains(got, tc.want.err) {
				t.Errorf("\n%s\nReconcile(...): error %v, want %q", tc.reason, err, tc.want.err)
			}
			state := ""
			if pa := w.podAddress(t); pa != nil {
				state = pa.Status.State
			}
			if state != tc.want.state {
				t.Errorf("\n%s\nPodAddress state %q, want %q", tc.reason, state, tc.want.state)
			}
			if _, waiting := w.r.cloud.repairs.Get(client.ObjectKeyFromObject(pa)); waiting != tc.want.waiting {
				t.Errorf("\n%s\nrepair waiting: %t, want %t", tc.reason, waiting, tc.want.waiting)
			}
			if diff := cmp.Diff(tc.want.bound, w.bound(t)); diff != "" {
				t.Errorf("\n%s\ntargets: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.writes, w.cloud.Writes()[before:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\ncloud writes: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.events, w.events.take(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
