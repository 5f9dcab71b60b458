package podaddress

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestPodGoneWhileDown: a Pod deleted while the provider was down, or while
// the cloud refused to deregister its target, leaves a PodAddress recorded
// by the provider before (sealed, Bound, finalizer on). A restarted
// provider (a new Reconciler with a fresh allocator, over the same API
// objects and region) deregisters the target and releases the slot; while
// the cloud fails it keeps the record, its finalizer and the slot, so that
// nothing is lost, and releases them once the cloud answers.
func TestPodGoneWhileDown(t *testing.T) {
	type want struct {
		err       string
		res       reconcile.Result
		state     string // of the PodAddress; "" for none
		finalizer bool
		bound     []string
		writes    []string
		allocated int
	}
	boundTarget := []string{"lbl-100 10.0.0.5:80"}
	deregistered := []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}
	released := want{writes: deregistered}
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		// down is what happens between the old provider's bind and the
		// restart.
		down func(t *testing.T, w *world)
		// fault is the cloud's answer to every write after the restart,
		// until it clears.
		fault  error
		rounds int
		want   want
		// healed is the world once the fault cleared and the next
		// reconciles ran; only for a case with a fault.
		healed want
	}{
		"DeletedWhileDown": {
			reason: "A Pod deleted while the provider was down: its target is deregistered, its slot released and its PodAddress let go.",
			pod:    pod(podIP),
			down:   func(t *testing.T, w *world) { w.deletePod(t) },
			rounds: 2,
			want:   released,
		},
		"DeletingWhileDown": {
			reason: "A Pod that is being deleted (another finalizer holds it) is gone for its addresses as well.",
			pod:    pod(podIP),
			down: func(t *testing.T, w *world) {
				p := &corev1.Pod{}
				if err := w.kube.Get(context.Background(), key, p); err != nil {
					t.Fatal(err)
				}
				meta.AddFinalizer(p, "example.com/hold")
				if err := w.kube.Update(context.Background(), p); err != nil {
					t.Fatal(err)
				}
				w.deletePod(t)
			},
			rounds: 2,
			want:   released,
		},
		"KeptWhileDown": {
			reason: "A Pod with a keep duration deleted while down: its target goes, its slot is held (and counted by the new allocator) until the duration ends.",
			pod:    pod(podIP, podannotation.AnnotationKeepDuration, "5m"),
			down:   func(t *testing.T, w *world) { w.deletePod(t) },
			want: want{res: reconcile.Result{RequeueAfter: 5 * time.Minute}, state: v1alpha1.StateHeld, finalizer: true,
				writes: deregistered, allocated: 1},
		},
		"CloudFailsAfterRestart": {
			reason: "The cloud refuses the deregistration after the restart: an error, the record, finalizer, target and slot kept; released once the cloud answers.",
			pod:    pod(podIP),
			down:   func(t *testing.T, w *world) { w.deletePod(t) },
			fault:  errBoom,
			rounds: 2,
			want:   want{err: "boom", state: v1alpha1.StateBound, finalizer: true, bound: boundTarget, allocated: 1},
			healed: released,
		},
		"CloudFailedBeforeRestart": {
			reason: "The old provider saw the deletion but the cloud refused the deregistration, then it stopped: the new one, with the cloud still failing, keeps everything, and releases it once the cloud answers.",
			pod:    pod(podIP),
			down: func(t *testing.T, w *world) {
				w.deletePod(t)
				w.cloud.Errs[lb1] = errBoom
				// The first round marks the PodAddress deleted, the second
				// fails to deregister.
				var err error
				for range 2 {
					_, err = w.reconcile(t)
				}
				if err == nil {
					t.Fatal("setup: the old provider deregistered despite the failing cloud")
				}
				if pa := w.podAddress(t); pa == nil || pa.DeletionTimestamp == nil {
					t.Fatalf("setup: the PodAddress is not being deleted: %+v", pa)
				}
			},
			fault:  errBoom,
			want:   want{err: "boom", state: v1alpha1.StateBound, finalizer: true, bound: boundTarget, allocated: 1},
			healed: released,
		},
	}
	check := func(t *testing.T, w *world, reason string, res reconcile.Result, err error, before int, want want) {
		t.Helper()
		if got := fmt.Sprint(err); (want.err == "") != (err == nil) || !strings.Contains(got, want.err) {
			t.Errorf("\n%s\nReconcile(...): error %v, want %q", reason, err, want.err)
		}
		if res != want.res {
			t.Errorf("\n%s\nReconcile(...): %+v, want %+v", reason, res, want.res)
		}
		state, finalizer := "", false
		if pa := w.podAddress(t); pa != nil {
			state, finalizer = pa.Status.State, meta.FinalizerExists(pa, Finalizer)
			if len(pa.Status.Bindings) != 1 {
				t.Errorf("\n%s\nthe PodAddress lost its binding: %+v", reason, pa.Status.Bindings)
			}
		}
		if state != want.state || finalizer != want.finalizer {
			t.Errorf("\n%s\nPodAddress state %q (finalizer %v), want %q (finalizer %v)", reason, state, finalizer, want.state, want.finalizer)
		}
		if diff := cmp.Diff(want.bound, w.bound(t), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("\n%s\ntargets: -want, +got:\n%s", reason, diff)
		}
		if diff := cmp.Diff(want.writes, w.cloud.Writes()[before:], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("\n%s\ncloud writes: -want, +got:\n%s", reason, diff)
		}
		// The new allocator rebuilds the pool from the records: a slot is
		// held exactly while a PodAddress records it.
		if got := w.allocated(t); got != want.allocated {
			t.Errorf("\n%s\nslots allocated: %d, want %d", reason, got, want.allocated)
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := &corev1.Namespace{}
			ns.Name = key.Namespace
			w := newWorld(t, nil, ns, portPool(), tc.pod)
			if _, err := w.reconcile(t); err != nil {
				t.Fatal(err)
			}
			if pa := w.podAddress(t); pa == nil || pa.Status.State != v1alpha1.StateBound || !meta.FinalizerExists(pa, Finalizer) {
				t.Fatalf("setup: the old provider did not bind: %+v", pa)
			}
			// What happens while down is not reconciled by the old
			// provider, unless the case does so itself.
			tc.down(t, w)

			w.restart(t)
			w.cloud.Errs[lb1] = tc.fault
			before := len(w.cloud.Writes())
			var res reconcile.Result
			var err error
			for range max(tc.rounds, 1) {
				res, err = w.reconcile(t)
			}
			check(t, w, tc.reason, res, err, before, tc.want)
			if tc.fault == nil {
				return
			}

			delete(w.cloud.Errs, lb1)
			before = len(w.cloud.Writes())
			for range 2 {
				res, err = w.reconcile(t)
			}
			check(t, w, tc.reason+" (the fault cleared)", res, err, before, tc.healed)
			if pa := w.podAddress(t); pa != nil {
				t.Errorf("\n%s\nthe PodAddress is still there: %+v", tc.reason, client.ObjectKeyFromObject(pa))
			}
		})
	}
}
