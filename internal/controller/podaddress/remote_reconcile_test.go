package podaddress

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const remoteIP = "172.16.0.5"

// workloadCluster is WorkloadCluster team-a/wc: Pods in 172.16/16, nodes
// in 192.168/16, any pool.
func workloadCluster() *v1alpha1.WorkloadCluster {
	wc := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wc"}}
	wc.Spec.PodCIDRs = []string{"172.16.0.0/16"}
	wc.Spec.NodeCIDRs = []string{"192.168.0.0/16"}
	return wc
}

// remotePod is RemotePod team-a/pod-0 of cluster wc, at remoteIP, asking
// for 80 of pool web, with extra annotations.
func remotePod(annotations ...string) *v1alpha1.RemotePod {
	rp := &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, CreationTimestamp: metav1.NewTime(now.Add(-3600e9))}}
	rp.Spec = v1alpha1.RemotePodSpec{Cluster: "wc", PodNamespace: "games", PodName: "game-0", PodUID: "uid-remote", PodIP: remoteIP,
		Annotations: map[string]string{podannotation.AnnotationPorts: "80 web"},
		Containers:  []v1alpha1.RemoteContainer{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}}}
	for i := 0; i+1 < len(annotations); i += 2 {
		rp.Spec.Annotations[annotations[i]] = annotations[i+1]
	}
	return rp
}

func (w *world) remotePod(t *testing.T) *v1alpha1.RemotePod {
	t.Helper()
	rp := &v1alpha1.RemotePod{}
	if err := w.kube.Get(context.Background(), key, rp); err != nil {
		t.Fatal(err)
	}
	return rp
}

// changeRemote changes RemotePod team-a/pod-0's spec, as its agent does.
func (w *world) changeRemote(t *testing.T, change func(*v1alpha1.RemotePod)) {
	t.Helper()
	rp := w.remotePod(t)
	change(rp)
	if err := w.kube.Update(context.Background(), rp); err != nil {
		t.Fatal(err)
	}
}

// changeCluster changes WorkloadCluster team-a/wc.
func (w *world) changeCluster(t *testing.T, change func(*v1alpha1.WorkloadCluster)) {
	t.Helper()
	wc := &v1alpha1.WorkloadCluster{}
	if err := w.kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "wc"}, wc); err != nil {
		t.Fatal(err)
	}
	change(wc)
	if err := w.kube.Update(context.Background(), wc); err != nil {
		t.Fatal(err)
	}
}

// failGet fails, once armed, the reads of objects like obj.
func failGet[T client.Object](armed *atomic.Bool) interceptor.Funcs {
	return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(T); ok && armed.Load() {
			return errBoom
		}
		return c.Get(ctx, k, obj, opts...)
	}}
}

// TestReconcileRemotePod drives a Pod of another cluster, seen as its
// RemotePod, through the reconcile: it is served as a Pod of this cluster,
// told through the RemotePod's status (never an Event on a Pod), and
// refused whatever its WorkloadCluster does not allow.
func TestReconcileRemotePod(t *testing.T) {
	type want struct {
		err       string
		state     string // of the PodAddress; "" for none
		bound     []string
		writes    []string
		healthy   corev1.ConditionStatus // the RemotePod's; "" for none
		told      string                 // its status annotation told; "" for none
		warning   string                 // reason, ": ", and a part of the message; "" for none
		condition string                 // its address condition, "Status Reason"; unchecked when ""
		allocated int
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  func(*atomic.Bool) interceptor.Funcs
		setup  func(t *testing.T, w *world)
		rounds int
		want   want
	}{
		"Bound": {
			reason: "A RemotePod in its cluster's bounds is bound as a Pod is, and told through its status: Healthy, its addresses annotated.",
			objs:   []client.Object{portPool(), workloadCluster(), remotePod()},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 172.16.0.5:80"}, allocated: 1,
				writes:  []string{"RegisterTargets lb-1 lbl-100//172.16.0.5:80"},
				healthy: corev1.ConditionTrue, told: podannotation.StatusReady},
		},
		"NoCluster": {
			reason: "A RemotePod of a WorkloadCluster that does not exist is refused before anything is allocated, and told why.",
			objs:   []client.Object{portPool(), remotePod()},
			want:   want{healthy: corev1.ConditionFalse, warning: "OutOfClusterBounds: does not exist"},
		},
		"ClusterSuspended": {
			reason: "The Pods of a suspended cluster are not served.",
			objs: []client.Object{portPool(), remotePod(), func() client.Object {
				wc := workloadCluster()
				wc.Spec.Suspend = true
				return wc
			}()},
			want: want{healthy: corev1.ConditionFalse, warning: "OutOfClusterBounds: is suspended"},
		},
		"ClusterWithoutCIDRs": {
			reason: "A cluster that declares no Pod CIDRs serves none of its Pods.",
			objs: []client.Object{portPool(), remotePod(), func() client.Object {
				wc := workloadCluster()
				wc.Spec.PodCIDRs = nil
				return wc
			}()},
			want: want{healthy: corev1.ConditionFalse, warning: "OutOfClusterBounds: spec.podCIDRs is empty"},
		},
		"PodIPOutOfBounds": {
			reason: "An agent may not claim a Pod IP outside its cluster's Pod CIDRs: the target would be anyone's.",
			objs: []client.Object{portPool(), workloadCluster(), func() client.Object {
				rp := remotePod()
				rp.Spec.PodIP = "10.9.9.9"
				return rp
			}()},
			want: want{healthy: corev1.ConditionFalse, warning: "OutOfClusterBounds: podCIDRs"},
		},
		"PoolOutOfBounds": {
			reason: "A pool the cluster's spec.pools does not list is refused.",
			objs: []client.Object{portPool(), remotePod(), func() client.Object {
				wc := workloadCluster()
				wc.Spec.Pools = []v1alpha1.PoolRef{{Name: "other"}}
				return wc
			}()},
			want: want{healthy: corev1.ConditionFalse, warning: "OutOfClusterBounds: is not in spec.pools"},
		},
		"SuspendedOnceBound": {
			reason: "A bound RemotePod whose cluster is suspended holds nothing any more: its target is deregistered, its PodAddress let go.",
			objs:   []client.Object{portPool(), workloadCluster(), remotePod()},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.changeCluster(t, func(wc *v1alpha1.WorkloadCluster) { wc.Spec.Suspend = true })
			},
			rounds: 2,
			want: want{writes: []string{"DeregisterTargets lb-1 lbl-100//172.16.0.5:80"},
				healthy: corev1.ConditionFalse, warning: "OutOfClusterBounds: is suspended"},
		},
		"Deleting": {
			reason: "A RemotePod whose Pod is being deleted lets its addresses go, as a Pod does.",
			objs:   []client.Object{portPool(), workloadCluster(), remotePod()},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.changeRemote(t, func(rp *v1alpha1.RemotePod) { rp.Spec.Deleting = true })
			},
			rounds: 2,
			// Told Bound before; nothing is told to a Pod on its way out.
			want: want{writes: []string{"DeregisterTargets lb-1 lbl-100//172.16.0.5:80"}, healthy: corev1.ConditionTrue, told: podannotation.StatusReady},
		},
		"EIP": {
			reason: "An EIP is not served to a Pod of another cluster: Invalid, said in the RemotePod's status.",
			objs: []client.Object{portPool(), workloadCluster(), func() client.Object {
				rp := remotePod(podannotation.AnnotationEIP, "true")
				delete(rp.Spec.Annotations, podannotation.AnnotationPorts)
				return rp
			}()},
			want: want{state: v1alpha1.StateInvalid, healthy: corev1.ConditionFalse, told: podannotation.StatusNotReady,
				warning: "InvalidAddressRequest: not served for Pods of other clusters"},
		},
		"InvalidRequest": {
			reason: "A malformed request is said in the RemotePod's status; no PodAddress is made.",
			objs:   []client.Object{portPool(), workloadCluster(), remotePod(podannotation.AnnotationStrategy, "sideways")},
			want:   want{healthy: corev1.ConditionFalse, warning: "InvalidAddressRequest: sideways"},
		},
		"NoFreePort": {
			reason: "A RemotePod waiting for a free port says so in its status (a Warning, Synced False), never as an Event on a Pod.",
			objs:   []client.Object{portPool(), workloadCluster(), remotePod(podannotation.AnnotationPorts, "80 web; 81 web; 82 web")},
			want: want{state: v1alpha1.StateNoPortAvailable, allocated: 2, healthy: corev1.ConditionFalse, told: podannotation.StatusNotReady,
				warning: "NoPortAvailable: "},
		},
		"HostPortWithoutHostPort": {
			reason: "A HostPort port without a hostPort is Invalid, said in the RemotePod's status and the address condition it waits on.",
			objs: []client.Object{portPool(), workloadCluster(), func() client.Object {
				rp := remotePod(podannotation.AnnotationBackend, v1alpha1.BackendHostPort)
				rp.Spec.ReadinessGates = []string{podannotation.ConditionAddressReady}
				return rp
			}()},
			want: want{state: v1alpha1.StateInvalid, healthy: corev1.ConditionFalse, told: podannotation.StatusNotReady,
				warning: "InvalidAddressRequest: hostPort", condition: "False " + v1alpha1.StateInvalid},
		},
		"CorrectedOnceInvalid": {
			reason: "A RemotePod whose request is corrected binds: its condition turns True and the warning goes.",
			objs: []client.Object{portPool(), workloadCluster(), func() client.Object {
				rp := remotePod(podannotation.AnnotationBackend, v1alpha1.BackendHostPort)
				rp.Spec.ReadinessGates = []string{podannotation.ConditionAddressReady}
				return rp
			}()},
			setup: func(t *testing.T, w *world) {
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.changeRemote(t, func(rp *v1alpha1.RemotePod) { delete(rp.Spec.Annotations, podannotation.AnnotationBackend) })
			},
			rounds: 2,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 172.16.0.5:80"}, allocated: 1,
				writes:  []string{"RegisterTargets lb-1 lbl-100//172.16.0.5:80"},
				healthy: corev1.ConditionTrue, told: podannotation.StatusReady, condition: "True Bound"},
		},
		"HeldTakenOver": {
			reason: "A RemotePod with a keep duration that goes keeps its port with no target; the next RemotePod of the name (another Pod) takes it over.",
			objs:   []client.Object{portPool(), workloadCluster(), remotePod(podannotation.AnnotationKeepDuration, "1h")},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				if err := w.kube.Delete(context.Background(), w.remotePod(t)); err != nil {
					t.Fatal(err)
				}
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				if pa := w.podAddress(t); pa == nil || pa.Status.State != v1alpha1.StateHeld || pa.Status.ReleaseAt == nil {
					t.Fatalf("setup: the PodAddress is not Held: %+v", pa)
				}
				if got := w.bound(t); len(got) != 0 {
					t.Fatalf("setup: a held PodAddress keeps targets %v", got)
				}
				rp := remotePod(podannotation.AnnotationKeepDuration, "1h")
				rp.Spec.PodUID, rp.Spec.PodIP = "uid-remote-new", "172.16.0.6"
				if err := w.kube.Create(context.Background(), rp); err != nil {
					t.Fatal(err)
				}
			},
			rounds: 3,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 172.16.0.6:80"}, allocated: 1,
				writes:  []string{"RegisterTargets lb-1 lbl-100//172.16.0.6:80"},
				healthy: corev1.ConditionTrue, told: podannotation.StatusReady},
		},
		"ClusterUnreadable": {
			reason: "A WorkloadCluster that cannot be read is an error; nothing is allocated.",
			objs:   []client.Object{portPool(), workloadCluster(), remotePod()},
			funcs:  failGet[*v1alpha1.WorkloadCluster],
			want:   want{err: "cannot get WorkloadCluster team-a/wc: boom"},
		},
		"RemotePodUnreadable": {
			reason: "A RemotePod that cannot be read is an error; nothing is done.",
			objs:   []client.Object{portPool(), workloadCluster(), remotePod()},
			funcs:  failGet[*v1alpha1.RemotePod],
			want:   want{err: "boom"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.funcs, append(tc.objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})...)
			if tc.setup != nil {
				tc.setup(t, w)
			}
			w.armed.Store(true)
			w.events.take()
			before := len(w.cloud.Writes())
			var err error
			for range max(tc.rounds, 1) {
				_, err = w.reconcile(t)
			}
			w.armed.Store(false)
			if got := fmt.Sprint(err); (tc.want.err == "") != (err == nil) || !strings.Contains(got, tc.want.err) {
				t.Errorf("\n%s\nReconcile(...): error %v, want %q", tc.reason, err, tc.want.err)
			}
			state := ""
			if pa := w.podAddress(t); pa != nil && pa.DeletionTimestamp == nil {
				state = pa.Status.State
			}
			if state != tc.want.state {
				t.Errorf("\n%s\nPodAddress state %q, want %q", tc.reason, state, tc.want.state)
			}
			if diff := cmp.Diff(tc.want.bound, w.bound(t)); diff != "" {
				t.Errorf("\n%s\ntargets: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.writes, w.cloud.Writes()[before:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\ncloud writes: -want, +got:\n%s", tc.reason, diff)
			}
			// No Pod of this name exists here: nothing may be recorded on one.
			for _, e := range w.events.take() {
				if strings.Contains(e, "*v1.Pod/") {
					t.Errorf("\n%s\nan Event on a Pod this cluster does not have: %s", tc.reason, e)
				}
			}
			if got := w.allocated(t); got != tc.want.allocated {
				t.Errorf("\n%s\nslots allocated: %d, want %d", tc.reason, got, tc.want.allocated)
			}
			st := w.remotePod(t).Status
			var healthy corev1.ConditionStatus
			condition := ""
			for _, c := range st.Conditions {
				switch c.Type {
				case v1alpha1.RemotePodHealthy:
					healthy = c.Status
				case podannotation.ConditionAddressReady:
					condition = fmt.Sprintf("%s %s", c.Status, c.Reason)
				}
			}
			if tc.want.condition != "" && condition != tc.want.condition {
				t.Errorf("\n%s\nRemotePod address condition %q, want %q", tc.reason, condition, tc.want.condition)
			}
			if healthy != tc.want.healthy {
				t.Errorf("\n%s\nRemotePod Healthy %q, want %q; status %+v", tc.reason, healthy, tc.want.healthy, st)
			}
			if got := st.Annotations[podannotation.AnnotationStatus]; got != tc.want.told {
				t.Errorf("\n%s\nRemotePod told %q, want %q", tc.reason, got, tc.want.told)
			}
			reason, part, _ := strings.Cut(tc.want.warning, ": ")
			switch w := st.Warning; {
			case w == nil && reason != "":
				t.Errorf("\n%s\nRemotePod warning none, want %q", tc.reason, tc.want.warning)
			case w != nil && (w.Reason != reason || !strings.Contains(w.Message, part)):
				t.Errorf("\n%s\nRemotePod warning %s: %s, want %q", tc.reason, w.Reason, w.Message, tc.want.warning)
			}
		})
	}
}
