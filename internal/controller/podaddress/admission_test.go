package podaddress

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestAllocateAtAdmission: the webhook's allocation records what it gives
// a Pod in a new PodAddress's sealed status before answering, gives back
// what it could not record, and reuses what a PodAddress of the name
// already serves.
func TestAllocateAtAdmission(t *testing.T) {
	until := now.Add(30 * time.Second)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	type want struct {
		ports     []int32 // of the bindings given
		err       string
		state     string // of the PodAddress; "" for none
		allocated int
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		pod    *corev1.Pod
		funcs  func(*atomic.Bool) interceptor.Funcs
		twice  bool
		// before is admitted first, under the same name.
		before *corev1.Pod
		want   want
	}{
		"NothingAsked": {
			reason: "A Pod that asks for nothing gets nothing.",
			objs:   []client.Object{ns, portPool()},
			pod: func() *corev1.Pod {
				p := pod("")
				p.Annotations = nil
				return p
			}(),
		},
		"Allocated": {
			reason: "A Pod that asks gets its port, recorded as Allocated in a new PodAddress.",
			objs:   []client.Object{ns, portPool()},
			pod:    pod(""),
			want:   want{ports: []int32{100}, state: v1alpha1.StateAllocated, allocated: 1},
		},
		"AlreadyServed": {
			reason: "A Pod admitted again gets the bindings its PodAddress already has, and nothing more.",
			objs:   []client.Object{ns, portPool()},
			pod:    pod(""),
			twice:  true,
			want:   want{ports: []int32{100}, state: v1alpha1.StateAllocated, allocated: 1},
		},
		"AskedOtherwise": {
			reason: "A Pod of the name that asks otherwise than its PodAddress gets nothing at admission: the controller takes the PodAddress over.",
			objs:   []client.Object{ns, portPool()},
			before: pod(""),
			pod:    pod("", podannotation.AnnotationPorts, "80 web; 81 web"),
			want:   want{state: v1alpha1.StateAllocated, allocated: 1},
		},
		"NotCovered": {
			reason: "A Pod of the name that asks the same (port http) but whose http is another container port than its PodAddress's binding gets nothing at admission.",
			objs:   []client.Object{ns, portPool()},
			before: namedPort(80),
			pod:    namedPort(81),
			want:   want{state: v1alpha1.StateAllocated, allocated: 1},
		},
		"Refused": {
			reason: "A request a pool refuses is left to the controller: nothing is made.",
			objs:   []client.Object{ns, portPool(), sharedPool()},
			pod:    pod("", podannotation.AnnotationPorts, "80 shared/web"),
		},
		"Invalid": {
			reason: "A request the Pod cannot serve is left to the controller: nothing is made.",
			objs:   []client.Object{ns, portPool()},
			pod:    pod("", podannotation.AnnotationBackend, "HostPort"),
		},
		"NoFreePort": {
			reason: "A request the pool cannot fill is an error, and holds no port.",
			objs:   []client.Object{ns, portPool()},
			pod:    pod("", podannotation.AnnotationPorts, "80 web; 81 web; 82 web"),
			want:   want{err: "no port available"},
		},
		"CreateFails": {
			reason: "A PodAddress that cannot be created is an error, and holds no port.",
			objs:   []client.Object{ns, portPool()},
			pod:    pod(""),
			funcs: func(*atomic.Bool) interceptor.Funcs {
				return interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return errBoom }}
			},
			want: want{err: "cannot create PodAddress: boom"},
		},
		"StatusWriteFails": {
			reason: "Bindings that cannot be recorded go back to the pool; the PodAddress is left for the controller.",
			objs:   []client.Object{ns, portPool()},
			pod:    pod(""),
			funcs:  failStatus,
			want:   want{err: "cannot record the bindings allocated at admission: boom"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.funcs, tc.objs...)
			if tc.before != nil {
				if _, err := w.r.AllocateAtAdmission(context.Background(), tc.before, until); err != nil {
					t.Fatal(err)
				}
			}
			w.armed.Store(true)
			var bs []v1alpha1.PortBinding
			var err error
			for range map[bool]int{false: 1, true: 2}[tc.twice] {
				bs, err = w.r.AllocateAtAdmission(context.Background(), tc.pod, until)
			}
			if got := errString(err); (tc.want.err == "") != (got == "") || !strings.Contains(got, tc.want.err) {
				t.Errorf("\n%s\nAllocateAtAdmission(...): error %q, want %q", tc.reason, got, tc.want.err)
			}
			var ports []int32
			for _, b := range bs {
				ports = append(ports, b.Port)
			}
			if diff := cmp.Diff(tc.want.ports, ports, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nAllocateAtAdmission(...): -want ports, +got:\n%s", tc.reason, diff)
			}
			state := ""
			if pa := w.podAddress(t); pa != nil {
				state = pa.Status.State
				if _, ok := pa.GetAnnotations()[AnnotationAdmittedUntil]; !ok {
					t.Errorf("\n%s\nthe PodAddress does not say how long it waits for its Pod", tc.reason)
				}
			}
			if state != tc.want.state {
				t.Errorf("\n%s\nPodAddress state %q, want %q", tc.reason, state, tc.want.state)
			}
			if got := w.allocated(t); got != tc.want.allocated {
				t.Errorf("\n%s\nslots allocated: %d, want %d", tc.reason, got, tc.want.allocated)
			}
		})
	}
}

// namedPort is pod("") asking for its port http of pool web, container
// port port.
func namedPort(port int32) *corev1.Pod {
	p := pod("", podannotation.AnnotationPorts, "http web")
	p.Spec.Containers[0].Ports[0].Name, p.Spec.Containers[0].Ports[0].ContainerPort = "http", port
	return p
}

// TestAdmittedNeverCreated: a PodAddress made at admission waits for its
// Pod until its grace ends, then gives its ports back and goes.
func TestAdmittedNeverCreated(t *testing.T) {
	w := newWorld(t, nil, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, portPool())
	if _, err := w.r.AllocateAtAdmission(context.Background(), pod(""), now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	res, err := w.reconcile(t)
	if err != nil || res != (reconcile.Result{RequeueAfter: 30 * time.Second}) {
		t.Fatalf("within the grace: %+v, %v; want to wait 30s", res, err)
	}
	if w.podAddress(t) == nil || w.allocated(t) != 1 {
		t.Fatal("within the grace: the PodAddress or its port is gone")
	}
	w.now = now.Add(time.Minute)
	for range 2 {
		if _, err := w.reconcile(t); err != nil {
			t.Fatal(err)
		}
	}
	if pa := w.podAddress(t); pa != nil {
		t.Errorf("after the grace: PodAddress still there: %+v", pa.ObjectMeta)
	}
	if got := w.allocated(t); got != 0 {
		t.Errorf("after the grace: %d slots allocated, want 0", got)
	}
}

// TestRequest: the webhook learns what a Pod asks for as the controller
// reads it.
func TestRequest(t *testing.T) {
	w := newWorld(t, nil)
	got, asked, err := w.r.Request(context.Background(), pod("", podannotation.AnnotationReadinessGate, "true"))
	if err != nil || !asked || got.Syntax != podannotation.SyntaxNative || !got.ReadinessGate || got.EIP {
		t.Errorf("Request(native, readiness gate) = %+v, %v, %v", got, asked, err)
	}
	p := pod("")
	p.Annotations = nil
	if _, asked, err := w.r.Request(context.Background(), p); asked || err != nil {
		t.Errorf("Request(nothing asked) = %v, %v; want not asked", asked, err)
	}
	if _, _, err := w.r.Request(context.Background(), pod("", podannotation.AnnotationStrategy, "sideways")); err == nil {
		t.Error("Request(malformed): no error")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
