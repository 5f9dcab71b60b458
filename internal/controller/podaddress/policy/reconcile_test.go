package policy

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/pods"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const ns = "team-a"

var errBoom = kerrors.NewInternalError(context.DeadlineExceeded)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newKube is a fake API server with the index Setup adds, so that the
// reconcile's MatchingFields list works as it does against the cache.
func newKube(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.PodAddressPolicy{}).
		WithIndex(&v1alpha1.PodAddress{}, indexSource, func(o client.Object) []string {
			if s := o.(*v1alpha1.PodAddress).Spec.Source; s != "" {
				return []string{s}
			}
			return nil
		}).
		WithInterceptorFuncs(funcs).
		Build()
}

func testPolicy(name string, sel map[string]string) *v1alpha1.PodAddressPolicy {
	p := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3}}
	p.Spec.Selector = metav1.LabelSelector{MatchLabels: sel}
	return p
}

func testPod(name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: lbls}}
}

// testPA is the PodAddress policy asked for pod name, in state.
func testPA(policy, name, state, msg string) *v1alpha1.PodAddress {
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	pa.Spec.Source, pa.Spec.PodUID = v1alpha1.PolicySource(policy), "uid-"+name
	pa.Status.State, pa.Status.Message = state, msg
	return pa
}

func testRemotePod(name string, lbls map[string]string) *v1alpha1.RemotePod {
	rp := &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	rp.Spec.PodUID, rp.Spec.Labels = "uid-"+name, lbls
	return rp
}

// failList fails the List of objects of the list type like.
func failList(like client.ObjectList, err error) interceptor.Funcs {
	return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		if reflect.TypeOf(l) == reflect.TypeOf(like) {
			return err
		}
		return c.List(ctx, l, opts...)
	}}
}

// status is what a test expects the policy's status to say.
type status struct {
	matched, bound int64
	ready          corev1.ConditionStatus
	reason         xpv2.ConditionReason
	message        string
	synced         corev1.ConditionStatus
}

func TestReconcile(t *testing.T) {
	web := map[string]string{"app": "web"}
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	deleting := testPolicy("web", web)
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: time.Now()}, []string{"keep"}
	asking := testPod("asks", web)
	asking.Annotations = map[string]string{podannotation.AnnotationPorts: "pool-a 80/TCP"}
	gone := testPod("gone", web)
	gone.DeletionTimestamp, gone.Finalizers = &metav1.Time{Time: time.Now()}, []string{"keep"}

	type want struct {
		err     string // a substring of the error; "" for none
		requeue bool   // a RequeueAfter within policyWriteInterval
		writes  int
		status  *status // the status read back; nil when not checked
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  interceptor.Funcs
		remote bool
		// lastWrite, when set, is how long ago the policy's status was
		// last written by this process.
		lastWrite time.Duration
		want      want
	}{
		"PolicyGone": {
			reason: "A policy that does not exist (deleted since it was queued) is no error and nothing is written.",
			want:   want{},
		},
		"GetError": {
			reason: "An error reading the policy is returned, so that it is queued again.",
			objs:   []client.Object{testPolicy("web", web)},
			funcs: interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errBoom
			}},
			want: want{err: "Internal error"},
		},
		"PolicyDeleting": {
			reason: "A policy being deleted is not counted.",
			objs:   []client.Object{deleting, testPod("a", web)},
			want:   want{},
		},
		"ListPoliciesError": {
			reason: "The policies of the namespace decide which one serves a Pod: without them nothing is counted.",
			objs:   []client.Object{testPolicy("web", web)},
			funcs:  failList(&v1alpha1.PodAddressPolicyList{}, errBoom),
			want:   want{err: "cannot list PodAddressPolicies"},
		},
		"ListPodsError": {
			reason: "An error listing the Pods is returned.",
			objs:   []client.Object{testPolicy("web", web)},
			funcs:  failList(&corev1.PodList{}, errBoom),
			want:   want{err: "cannot list Pods"},
		},
		"ListRemotePodsError": {
			reason: "With RemotePods served, an error listing them is returned rather than counting only the local Pods.",
			objs:   []client.Object{testPolicy("web", web)},
			funcs:  failList(&v1alpha1.RemotePodList{}, errBoom),
			remote: true,
			want:   want{err: "cannot list RemotePods"},
		},
		"ListPodAddressesError": {
			reason: "An error listing the PodAddresses is returned.",
			objs:   []client.Object{testPolicy("web", web)},
			funcs:  failList(&v1alpha1.PodAddressList{}, errBoom),
			want:   want{err: "cannot list PodAddresses"},
		},
		"EmptySelector": {
			reason: "An empty selector selects no Pod: the policy is Ready with none.",
			objs:   []client.Object{testPolicy("web", nil), testPod("a", web)},
			want: want{writes: 1, status: &status{
				ready: corev1.ConditionTrue, reason: v1alpha1.ReasonAllBound, message: "0 of 0 Pods bound", synced: corev1.ConditionTrue,
			}},
		},
		"Counts": {
			reason: "Only the live Pods this policy serves count: not those that ask by annotation, are being deleted, are served by a policy of an earlier name, or are not selected; a RemotePod counts like a Pod.",
			objs: []client.Object{
				testPolicy("web", web), testPolicy("aaa", map[string]string{"tier": "front"}),
				testPod("bound", web), testPA("web", "bound", v1alpha1.StateBound, ""),
				testPod("waiting", web),
				testPod("allocating", web), testPA("web", "allocating", v1alpha1.StateAllocated, "registering"),
				asking, gone,
				testPod("earlier", map[string]string{"app": "web", "tier": "front"}),
				testPod("other", map[string]string{"app": "db"}),
				testRemotePod("remote", web), testPA("web", "remote", v1alpha1.StateBound, ""),
				testRemotePod("remote-other", map[string]string{"app": "db"}),
			},
			remote: true,
			want: want{writes: 1, status: &status{
				matched: 4, bound: 2,
				ready: corev1.ConditionFalse, reason: v1alpha1.ReasonBinding,
				message: "2 of 4 Pods not bound: 1 Allocated (allocating: registering); 1 without a PodAddress yet",
				synced:  corev1.ConditionTrue,
			}},
		},
		"RemotePodsNotServed": {
			reason: "Until RemotePods are served they are not read: only the local Pods count.",
			objs: []client.Object{
				testPolicy("web", web), testPod("bound", web), testPA("web", "bound", v1alpha1.StateBound, ""),
				testRemotePod("remote", web),
			},
			want: want{writes: 1, status: &status{
				matched: 1, bound: 1, ready: corev1.ConditionTrue, reason: v1alpha1.ReasonAllBound, message: "1 of 1 Pods bound", synced: corev1.ConditionTrue,
			}},
		},
		"BindFailed": {
			reason: "A Pod that cannot bind as things stand makes the policy Synced=False, so that a person looks.",
			objs: []client.Object{
				testPolicy("web", web), testPod("a", web),
				testPA("web", "a", v1alpha1.StateNoPortAvailable, "pool p: no port available"),
			},
			want: want{writes: 1, status: &status{
				matched: 1, ready: corev1.ConditionFalse, reason: v1alpha1.ReasonBindFailed,
				message: "1 of 1 Pods not bound: 1 NoPortAvailable (a: pool p: no port available)",
				synced:  corev1.ConditionFalse,
			}},
		},
		"Unchanged": {
			reason: "A status that already says what the counts say is not written again.",
			objs: []client.Object{func() client.Object {
				p := testPolicy("web", web)
				p.Status.SetConditions(
					xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonAllBound, Message: "0 of 0 Pods bound", ObservedGeneration: 3},
					xpv2.ReconcileSuccess().WithObservedGeneration(3))
				return p
			}()},
			want: want{writes: 0, status: &status{
				ready: corev1.ConditionTrue, reason: v1alpha1.ReasonAllBound, message: "0 of 0 Pods bound", synced: corev1.ConditionTrue,
			}},
		},
		"WrittenJustNow": {
			reason: "A status written less than policyWriteInterval ago is written again only after it: the reconcile asks to be requeued.",
			objs:   []client.Object{testPolicy("web", web), testPod("a", web)},
			// Half the interval ago: the wait is what is left of it.
			lastWrite: policyWriteInterval / 2,
			want:      want{requeue: true},
		},
		"WrittenLongAgo": {
			reason: "A status written longer than policyWriteInterval ago is written at once.",
			objs:   []client.Object{testPolicy("web", web), testPod("a", web)},
			// Long ago: the entry is forgotten and the write goes through.
			lastWrite: time.Hour,
			want: want{writes: 1, status: &status{
				matched: 1, ready: corev1.ConditionFalse, reason: v1alpha1.ReasonBinding,
				message: "1 of 1 Pods not bound: 1 without a PodAddress yet", synced: corev1.ConditionTrue,
			}},
		},
		"StatusUpdateNotFound": {
			reason: "A policy deleted between the read and the write is no error.",
			objs:   []client.Object{testPolicy("web", web), testPod("a", web)},
			funcs: interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				return kerrors.NewNotFound(schema.GroupResource{Resource: "podaddresspolicies"}, "web")
			}},
			want: want{writes: 1},
		},
		"StatusUpdateError": {
			reason: "A failed status write is returned, and not remembered as a write.",
			objs:   []client.Object{testPolicy("web", web), testPod("a", web)},
			funcs: interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				return errBoom
			}},
			want: want{err: "Internal error", writes: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			writes := 0
			funcs := tc.funcs
			update := funcs.SubResourceUpdate
			funcs.SubResourceUpdate = func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
				writes++
				if update != nil {
					return update(ctx, c, sub, o, opts...)
				}
				return c.SubResource(sub).Update(ctx, o, opts...)
			}
			kube := newKube(t, funcs, tc.objs...)
			rps := &pods.Remote{}
			if tc.remote {
				if err := rps.Served(); err != nil {
					t.Fatal(err)
				}
			}
			last := &lastWrites{at: map[types.NamespacedName]time.Time{}}
			if tc.lastWrite != 0 {
				last.at[key] = time.Now().Add(-tc.lastWrite)
			}
			r := &policyStatus{kube: kube, last: last, remotePods: rps}

			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})

			switch {
			case tc.want.err == "" && err != nil:
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			case tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)):
				t.Fatalf("%s\nReconcile(...): error %v, want one containing %q", tc.reason, err, tc.want.err)
			}
			if got := res.RequeueAfter > 0 && res.RequeueAfter <= policyWriteInterval; got != tc.want.requeue {
				t.Errorf("%s\nReconcile(...): RequeueAfter %s, want a requeue within %s: %t", tc.reason, res.RequeueAfter, policyWriteInterval, tc.want.requeue)
			}
			if writes != tc.want.writes {
				t.Errorf("%s\nReconcile(...): %d status writes, want %d", tc.reason, writes, tc.want.writes)
			}
			// Only a write that succeeded spaces the next one.
			_, remembered := last.at[key]
			if wantRemembered := tc.want.writes > 0 && tc.want.err == "" && tc.want.status != nil || tc.want.requeue; remembered != wantRemembered {
				t.Errorf("%s\nReconcile(...): last write remembered %t, want %t", tc.reason, remembered, wantRemembered)
			}
			if tc.want.status == nil {
				return
			}
			got := &v1alpha1.PodAddressPolicy{}
			if err := kube.Get(context.Background(), key, got); err != nil {
				t.Fatal(err)
			}
			ready, synced := got.Status.GetCondition(xpv2.TypeReady), got.Status.GetCondition(xpv2.TypeSynced)
			gotStatus := status{
				matched: got.Status.MatchedPods, bound: got.Status.BoundPods,
				ready: ready.Status, reason: ready.Reason, message: ready.Message, synced: synced.Status,
			}
			if diff := cmp.Diff(*tc.want.status, gotStatus, cmp.AllowUnexported(status{})); diff != "" {
				t.Errorf("%s\nstatus: -want +got:\n%s", tc.reason, diff)
			}
			if ready.ObservedGeneration != 3 || synced.ObservedGeneration != 3 {
				t.Errorf("%s\nconditions observed generation %d and %d, want the policy's 3", tc.reason, ready.ObservedGeneration, synced.ObservedGeneration)
			}
		})
	}
}

func TestLastWrites(t *testing.T) {
	k := types.NamespacedName{Namespace: ns, Name: "web"}
	now := time.Unix(1000, 0)
	l := &lastWrites{at: map[types.NamespacedName]time.Time{}}
	if d := l.wait(k, now); d != 0 {
		t.Errorf("never written: wait %s, want none", d)
	}
	l.wrote(k, now)
	if d := l.wait(k, now.Add(300*time.Millisecond)); d != 700*time.Millisecond {
		t.Errorf("written 300ms ago: wait %s, want 700ms", d)
	}
	if d := l.wait(k, now.Add(policyWriteInterval)); d != 0 {
		t.Errorf("written an interval ago: wait %s, want none", d)
	}
	if _, ok := l.at[k]; ok {
		t.Error("a write an interval ago is still remembered")
	}
}

// TestPoliciesOfPod: a Pod (or a RemotePod's Pod) wakes the policies of
// its namespace whose non-empty selector matches it; a failed list wakes
// none rather than guessing.
func TestPoliciesOfPod(t *testing.T) {
	web := map[string]string{"app": "web"}
	pols := []client.Object{
		testPolicy("web", web), testPolicy("all-web", map[string]string{"app": "web"}),
		testPolicy("db", map[string]string{"app": "db"}), testPolicy("empty", nil),
		func() client.Object { // the same selector in another namespace
			p := testPolicy("elsewhere", web)
			p.Namespace = "team-b"
			return p
		}(),
	}
	req := func(names ...string) []reconcile.Request {
		var out []reconcile.Request
		for _, n := range names {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: n}})
		}
		return out
	}
	cases := map[string]struct {
		reason string
		funcs  interceptor.Funcs
		obj    client.Object
		want   []reconcile.Request
	}{
		"Pod": {
			reason: "Every matching policy of the Pod's namespace is woken, whichever serves it.",
			obj:    testPod("a", web),
			want:   req("all-web", "web"),
		},
		"Unselected": {
			reason: "A Pod no selector matches wakes nothing (an empty selector matches none).",
			obj:    testPod("a", map[string]string{"app": "cache"}),
		},
		"NotAPod": {
			reason: "Only Pods are mapped.",
			obj:    testPA("web", "a", "", ""),
		},
		"ListError": {
			reason: "Without the policies nothing is woken.",
			funcs:  failList(&v1alpha1.PodAddressPolicyList{}, errBoom),
			obj:    testPod("a", web),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &policyStatus{kube: newKube(t, tc.funcs, pols...)}
			got := r.policiesOfPod(context.Background(), tc.obj)
			sortRequests(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\npoliciesOfPod: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
	t.Run("RemotePod", func(t *testing.T) {
		r := &policyStatus{kube: newKube(t, interceptor.Funcs{}, pols...)}
		got := r.policiesOfRemotePod(context.Background(), testRemotePod("r", web))
		sortRequests(got)
		if diff := cmp.Diff(req("all-web", "web"), got); diff != "" {
			t.Errorf("A RemotePod wakes the policies that select its Pod's labels.\n-want +got:\n%s", diff)
		}
	})
}

func sortRequests(rs []reconcile.Request) {
	slices.SortFunc(rs, func(a, b reconcile.Request) int { return strings.Compare(a.String(), b.String()) })
}

func TestPolicyOfPodAddress(t *testing.T) {
	cases := map[string]struct {
		reason string
		obj    client.Object
		want   []reconcile.Request
	}{
		"AskedByPolicy": {
			reason: "A PodAddress a policy asked for wakes that policy, in its namespace.",
			obj:    testPA("web", "a", "", ""),
			want:   []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: "web"}}},
		},
		"AskedByPod": {
			reason: "A PodAddress a Pod's annotation asked for wakes no policy.",
			obj: func() client.Object {
				pa := testPA("web", "a", "", "")
				pa.Spec.Source = "pod"
				return pa
			}(),
		},
		"NotAPodAddress": {
			reason: "Only PodAddresses are mapped.",
			obj:    testPod("a", nil),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, policyOfPodAddress(context.Background(), tc.obj)); diff != "" {
				t.Errorf("%s\npolicyOfPodAddress: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	web := map[string]string{"app": "web"}
	other := testPolicy("aaa", web)
	other.Namespace = "team-b"
	objs := []client.Object{testPolicy("web", web), testPolicy("db", map[string]string{"app": "db"}), other}
	cases := map[string]struct {
		reason string
		funcs  interceptor.Funcs
		pod    *corev1.Pod
		want   string // the policy's name, "" for none
		err    string
	}{
		"Served": {
			reason: "The policy of the Pod's own namespace that selects it; one of an earlier name elsewhere does not count.",
			pod:    testPod("a", web),
			want:   "web",
		},
		"NoneSelects": {
			reason: "No policy selects the Pod.",
			pod:    testPod("a", map[string]string{"app": "cache"}),
		},
		"ListError": {
			reason: "An error listing the policies is returned, not taken for no policy.",
			funcs:  failList(&v1alpha1.PodAddressPolicyList{}, errBoom),
			pod:    testPod("a", web),
			err:    "cannot list PodAddressPolicies",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Match(context.Background(), newKube(t, tc.funcs, objs...), tc.pod)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s\nMatch: error %v, want one containing %q", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nMatch: %v", tc.reason, err)
			}
			var name string
			if got != nil {
				name = got.GetName()
			}
			if name != tc.want {
				t.Errorf("%s\nMatch: %q, want %q", tc.reason, name, tc.want)
			}
		})
	}
}
