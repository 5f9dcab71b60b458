package podaddress

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestTellPod: what a Pod is told after a reconcile, in its annotations
// and, for a Pod that waits on it (readiness gate), its address condition.
func TestTellPod(t *testing.T) {
	type want struct {
		err    string
		status string // the status annotation; "" for none
		// condition is the address condition's status and reason; "" for
		// none.
		condition string
		// addresses is the addresses annotation; unchecked when "".
		addresses string
	}
	gated := func(annotations ...string) *corev1.Pod {
		return pod(podIP, append([]string{podannotation.AnnotationReadinessGate, "true"}, annotations...)...)
	}
	// failPodWrites fails, once armed, every patch of a Pod.
	failPodWrites := func(armed *atomic.Bool) interceptor.Funcs {
		return interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*corev1.Pod); ok && armed.Load() {
					return errBoom
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if _, ok := obj.(*corev1.Pod); ok && armed.Load() {
					return errBoom
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}
	}
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		funcs  func(*atomic.Bool) interceptor.Funcs
		setup  func(t *testing.T, w *world)
		rounds int
		want   want
	}{
		"Bound": {
			reason: "A bound Pod without a readiness gate is told Ready in its annotations only.",
			pod:    pod(podIP),
			want:   want{status: podannotation.StatusReady},
		},
		"BoundGated": {
			reason: "A bound Pod that asked for the readiness gate gets the address condition True.",
			pod:    gated(),
			want:   want{status: podannotation.StatusReady, condition: "True Bound"},
		},
		"BoundSpecGate": {
			reason: "A bound Pod whose spec lists the address condition as a readiness gate gets it True, without our annotation.",
			pod: func() *corev1.Pod {
				p := pod(podIP)
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: conditionAddressReady}}
				return p
			}(),
			want: want{status: podannotation.StatusReady, condition: "True Bound"},
		},
		"NoFreePortGated": {
			reason: "A gated Pod waiting for a port is told so in its condition, with the state as reason.",
			pod:    gated(podannotation.AnnotationPorts, "80 web; 81 web; 82 web"),
			want:   want{status: podannotation.StatusNotReady, condition: "False " + v1alpha1.StateNoPortAvailable},
		},
		"NoPortAtAll": {
			reason: "A gated Pod that got no port of a full pool is told NotReady, its condition False, and no address listed.",
			pod:    gated(),
			setup: func(t *testing.T, w *world) {
				pp := &clbv1alpha1.PortPool{}
				if err := w.kube.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "web"}, pp); err != nil {
					t.Fatal(err)
				}
				pp.Status.AtProvider.LoadBalancers[0].Listeners = map[string]string{}
				if err := w.kube.Status().Update(context.Background(), pp); err != nil {
					t.Fatal(err)
				}
			},
			want: want{status: podannotation.StatusNotReady, condition: "False " + v1alpha1.StateNoPortAvailable, addresses: "[]"},
		},
		"Invalid": {
			reason: "A Pod whose request is malformed is told so in its condition, even without a readiness gate.",
			pod:    pod(podIP, podannotation.AnnotationStrategy, "sideways"),
			want:   want{condition: "False " + string(reasonInvalidRequest)},
		},
		"CorrectedOnceInvalid": {
			reason: "A Pod told its request is malformed, then corrected, is bound and told so: Ready, its condition True.",
			pod:    pod(podIP, podannotation.AnnotationStrategy, "sideways"),
			setup: func(t *testing.T, w *world) {
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.annotatePod(t, podannotation.AnnotationStrategy, "Dynamic")
			},
			want: want{status: podannotation.StatusReady, condition: "True Bound"},
		},
		"UnknownPortName": {
			reason: "A Pod asking for a port name it does not declare is told NotReady; without a readiness gate no condition is written.",
			pod:    pod(podIP, podannotation.AnnotationPorts, "voice web"),
			want:   want{status: podannotation.StatusNotReady},
		},
		"IsolatedOnceBoundGated": {
			reason: "A gated Pod told Bound, then isolated: its condition follows, False.",
			pod:    gated(),
			setup: func(t *testing.T, w *world) {
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.annotatePod(t, podannotation.AnnotationIsolated, "true")
			},
			rounds: 2,
			want:   want{status: podannotation.StatusNotReady, condition: "False " + v1alpha1.StateIsolated},
		},
		"InvalidOnceBound": {
			reason: "A Pod told Bound whose request turns malformed is told so in its condition; its binding is left alone.",
			pod:    pod(podIP),
			setup: func(t *testing.T, w *world) {
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.annotatePod(t, podannotation.AnnotationStrategy, "sideways")
			},
			want: want{status: podannotation.StatusReady, condition: "False " + string(reasonInvalidRequest)},
		},
		"PatchFails": {
			reason: "A Pod that cannot be told is the reconcile's error, so that it is told later.",
			pod:    pod(podIP),
			funcs:  failPodWrites,
			want:   want{err: "cannot tell the Pod its addresses: boom"},
		},
		"GatedPatchFails": {
			reason: "A gated Pod whose condition cannot be written is the reconcile's error too.",
			pod:    gated(),
			funcs:  failPodWrites,
			want:   want{err: "cannot tell the Pod its addresses: boom"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.funcs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, portPool(), tc.pod)
			if tc.setup != nil {
				tc.setup(t, w)
			}
			w.armed.Store(true)
			var err error
			for range max(tc.rounds, 1) {
				_, err = w.reconcile(t)
			}
			w.armed.Store(false)
			if got := fmt.Sprint(err); (tc.want.err == "") != (err == nil) || !strings.Contains(got, tc.want.err) {
				t.Errorf("\n%s\nReconcile(...): error %v, want %q", tc.reason, err, tc.want.err)
			}
			p := &corev1.Pod{}
			if err := w.kube.Get(context.Background(), key, p); err != nil {
				t.Fatal(err)
			}
			if got := p.Annotations[podannotation.AnnotationStatus]; got != tc.want.status {
				t.Errorf("\n%s\nstatus annotation %q, want %q", tc.reason, got, tc.want.status)
			}
			if got := p.Annotations[podannotation.AnnotationAddresses]; tc.want.addresses != "" && got != tc.want.addresses {
				t.Errorf("\n%s\naddresses annotation %q, want %q", tc.reason, got, tc.want.addresses)
			}
			condition := ""
			if c := podCondition(p, conditionAddressReady); c != nil {
				condition = fmt.Sprintf("%s %s", c.Status, c.Reason)
			}
			if condition != tc.want.condition {
				t.Errorf("\n%s\naddress condition %q, want %q", tc.reason, condition, tc.want.condition)
			}
		})
	}
}
