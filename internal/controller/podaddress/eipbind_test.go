package podaddress

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	vpcfake "github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/eip"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// eni is the network interface that holds podIP in every EIP world.
const eni = "eni-1"

// eipRegion is the fake VPC region with errors injected per method, for
// the calls the fake itself cannot fail (reads, allocations); writes to
// an address fail through its Errs.
type eipRegion struct {
	*vpcfake.Cloud
	errs map[string]error
}

func (r *eipRegion) Allocate(ctx context.Context, req vpc.AllocateRequest) ([]string, string, error) {
	if err := r.errs["Allocate"]; err != nil {
		return nil, "", err
	}
	return r.Cloud.Allocate(ctx, req)
}

func (r *eipRegion) Describe(ctx context.Context, ids []string) ([]vpc.Address, error) {
	if err := r.errs["Describe"]; err != nil {
		return nil, err
	}
	return r.Cloud.Describe(ctx, ids)
}

func (r *eipRegion) Release(ctx context.Context, ids []string) (string, error) {
	if err := r.errs["Release"]; err != nil {
		return "", err
	}
	return r.Cloud.Release(ctx, ids)
}

// addresses lists the region's EIPs as "id bandwidth where-bound".
func (r *eipRegion) addresses() []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(r.Addresses)) {
		a := r.Addresses[id]
		where := "unbound"
		if a.PrivateIP != "" {
			where = a.ENIID + "/" + a.PrivateIP
		}
		out = append(out, fmt.Sprintf("%s %dMbps %s", id, a.Bandwidth, where))
	}
	return out
}

// Errors as the cloud answers them, classified by the vpc package.
var (
	errEIPQuota   = sdkerrors.NewTencentCloudSDKError("AddressQuotaLimitExceeded", "quota", "req")
	errEIPDaily   = sdkerrors.NewTencentCloudSDKError("AddressQuotaLimitExceeded.DailyAllocate", "daily", "req")
	errEIPInvalid = sdkerrors.NewTencentCloudSDKError("InvalidParameterValue.Range", "bandwidth out of range", "req")
)

// providerConfig is ClusterProviderConfig "default", which grant() pays
// through, and its credentials.
func providerConfig() []client.Object {
	pc := &clusterv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pc.Spec.Region = "ap-guangzhou"
	pc.Spec.Credentials.SecretRef = clusterv1alpha1.CredentialsSecretRef{Name: "creds", Namespace: "crossplane-system"}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "creds"},
		Data: map[string][]byte{"secretId": []byte("AKID"), "secretKey": []byte("key")}}
	return []client.Object{pc, s}
}

// newEIPWorld is a world whose provider has a VPC client, on a region
// where podIP is on eni, with namespace team-a, grant() and its provider
// config besides objs.
func newEIPWorld(t *testing.T, funcs func(*atomic.Bool) interceptor.Funcs, objs ...client.Object) *world {
	t.Helper()
	r := &eipRegion{Cloud: vpcfake.New(), errs: map[string]error{}}
	r.ENIs[podIP] = eni
	base := append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}, providerConfig()...)
	return newWorldWith(t, r, funcs, append(base, objs...)...)
}

// eipRounds reconciles rounds times, each after the region's running
// tasks ended, as the reconciles that poll them find.
func (w *world) eipRounds(t *testing.T, rounds int) (reconcile.Result, error) {
	t.Helper()
	var res reconcile.Result
	var err error
	for range rounds {
		w.vpc.Settle()
		res, err = w.reconcile(t)
	}
	return res, err
}

// bindEIPFirst brings the PodAddress of an EIP Pod to Bound.
func bindEIPFirst(t *testing.T, w *world) {
	t.Helper()
	if _, err := w.eipRounds(t, 3); err != nil {
		t.Fatal(err)
	}
	if pa := w.podAddress(t); pa == nil || pa.Status.State != v1alpha1.StateBound {
		t.Fatalf("setup: the PodAddress is not Bound: %+v", pa)
	}
}

// eipPodWith is eipPod(attributes) with extra annotations.
func eipPodWith(attributes string, annotations ...string) *corev1.Pod {
	p := eipPod(attributes)
	for i := 0; i+1 < len(annotations); i += 2 {
		p.Annotations[annotations[i]] = annotations[i+1]
	}
	return p
}

// TestReconcileEIP drives a Pod asking for an EIP and its PodAddress
// through the reconcile, on a fake API server and a fake VPC region:
// each round first ends the region's running tasks. setup brings the
// world to the state under test (its events and cloud calls are not the
// case's); errs are then injected into the region.
func TestReconcileEIP(t *testing.T) {
	type want struct {
		res reconcile.Result
		// upTo: the result's RequeueAfter is positive and at most res's
		// (what is left of a wall-clock backoff).
		upTo     bool
		err      string
		state    string // of the PodAddress; "" for none
		message  string // a part of its message
		eip      string // status.eip.state; "" for none
		deleting bool
		vpc      []string // calls that changed the region
		eips     []string // the region's EIPs after
		targets  []string // load balancer writes
		events   []string
	}
	wantEvent := func(s string) []string { return []string{s} }
	bound := wantEvent("Normal AddressBound *v1.Pod/pod-0")
	allocated := []string{"Allocate [eip-1] team-a/pod-0"}
	associated := []string{"eip-1 1Mbps eni-1/10.0.0.5"}
	unbound := []string{"eip-1 1Mbps unbound"}
	gone := func(t *testing.T, w *world) {
		t.Helper()
		bindEIPFirst(t, w)
		w.deletePod(t)
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  func(*atomic.Bool) interceptor.Funcs
		setup  func(t *testing.T, w *world)
		errs   map[string]error
		rounds int
		want   want
	}{
		"Allocating": {
			reason: "A Pod asking for an EIP a grant covers: its allocation is recorded, then sent; the PodAddress polls the task.",
			objs:   []client.Object{grant(), eipPod("true")},
			want: want{res: reconcile.Result{RequeueAfter: eip.TaskPoll}, state: v1alpha1.StateAllocated, message: "eip-1 Allocating (task",
				eip: v1alpha1.EIPAllocating, vpc: allocated, eips: unbound},
		},
		"Associating": {
			reason: "Once allocated, the EIP is associated with the network interface that holds the Pod IP.",
			objs:   []client.Object{grant(), eipPod("true")},
			rounds: 2,
			want: want{res: reconcile.Result{RequeueAfter: eip.TaskPoll}, state: v1alpha1.StateAllocated, message: "eip-1 Associating (task",
				// Bound once the task ends.
				eip: v1alpha1.EIPAssociating, vpc: append(slices.Clone(allocated), "Associate eip-1 eni-1/10.0.0.5"), eips: unbound},
		},
		"Bound": {
			reason: "Once associated, the PodAddress is Bound and the Pod told.",
			objs:   []client.Object{grant(), eipPod("true")},
			rounds: 3,
			want: want{state: v1alpha1.StateBound, eip: v1alpha1.EIPAssociated,
				vpc: append(slices.Clone(allocated), "Associate eip-1 eni-1/10.0.0.5"), eips: associated, events: bound},
		},
		"BoundStays": {
			reason: "A Bound EIP is left alone: no cloud call, no event.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup:  bindEIPFirst,
			want:   want{state: v1alpha1.StateBound, eip: v1alpha1.EIPAssociated, eips: associated},
		},
		"NoNetworkInterface": {
			reason: "A Pod IP no network interface holds (not a VPC-CNI IP yet): the allocated EIP waits, and the Pod is told why.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup:  func(_ *testing.T, w *world) { delete(w.vpc.ENIs, podIP) },
			rounds: 2,
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateWaitBackend, message: "no network interface holds the Pod IP",
				eip: v1alpha1.EIPAllocated, vpc: allocated, eips: unbound},
		},
		"PodWithoutIP": {
			reason: "A Pod without an IP gets its EIP allocated, not associated, and waits for the IP.",
			objs: []client.Object{grant(), func() *corev1.Pod {
				p := eipPod("true")
				p.Status.PodIP, p.Status.Phase = "", ""
				return p
			}()},
			rounds: 2,
			want: want{state: v1alpha1.StateWaitBackend, message: "waiting for the Pod's IP", eip: v1alpha1.EIPAllocated,
				vpc: allocated, eips: unbound},
		},
		"Isolated": {
			reason: "An isolated Pod keeps its EIP allocated, not associated, and is told.",
			objs:   []client.Object{grant(), eipPodWith("true", podannotation.AnnotationIsolated, "true")},
			rounds: 2,
			want: want{state: v1alpha1.StateIsolated, eip: v1alpha1.EIPAllocated, vpc: allocated, eips: unbound,
				events: wantEvent("Normal AddressIsolated *v1.Pod/pod-0")},
		},
		"IsolatedOnceBound": {
			reason: "A bound Pod isolated: its EIP is disassociated and kept.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup: func(t *testing.T, w *world) {
				bindEIPFirst(t, w)
				w.annotatePod(t, podannotation.AnnotationIsolated, "true")
			},
			rounds: 3,
			want: want{state: v1alpha1.StateIsolated, eip: v1alpha1.EIPAllocated, vpc: []string{"Disassociate eip-1"}, eips: unbound,
				events: wantEvent("Normal AddressIsolated *v1.Pod/pod-0")},
		},
		"QuotaExceeded": {
			reason: "An allocation over the account's quota, without a fallback pool: QuotaExceeded, said on the Pod, tried again after a backoff.",
			objs:   []client.Object{grant(), eipPod("true")},
			errs:   map[string]error{"Allocate": errEIPQuota},
			want: want{res: reconcile.Result{RequeueAfter: time.Second}, state: v1alpha1.StateQuotaExceeded, message: "the account's EIP quota is reached",
				eip: v1alpha1.EIPAllocating, events: wantEvent("Warning EIPQuotaExceeded *v1.Pod/pod-0")},
		},
		"QuotaBackoff": {
			reason: "A reconcile within the backoff of a refused allocation waits out the rest: no cloud call, no second event.",
			objs:   []client.Object{grant(), eipPod("true")},
			errs:   map[string]error{"Allocate": errEIPQuota},
			rounds: 2,
			want: want{res: reconcile.Result{RequeueAfter: time.Second}, upTo: true, state: v1alpha1.StateQuotaExceeded,
				message: "the account's EIP quota is reached", eip: v1alpha1.EIPAllocating, events: wantEvent("Warning EIPQuotaExceeded *v1.Pod/pod-0")},
		},
		"DailyLimit": {
			reason: "The daily allocation limit is no EIP either.",
			objs:   []client.Object{grant(), eipPod("true")},
			errs:   map[string]error{"Allocate": errEIPDaily},
			want: want{res: reconcile.Result{RequeueAfter: time.Second}, state: v1alpha1.StateQuotaExceeded, message: "daily EIP allocation limit",
				eip: v1alpha1.EIPAllocating, events: wantEvent("Warning EIPQuotaExceeded *v1.Pod/pod-0")},
		},
		"QuotaFallsBack": {
			reason: "With a fallback pool, a Pod that gets no EIP is bound to ports of the pool instead, and told so.",
			objs:   []client.Object{grant(), portPool(), eipPod("fallbackPool=web")},
			errs:   map[string]error{"Allocate": errEIPQuota},
			want: want{state: v1alpha1.StateFallbackPort, message: "no EIP (the account's EIP quota is reached)", eip: v1alpha1.EIPFallback,
				targets: []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events:  []string{"Warning EIPFallback *v1.Pod/pod-0", "Normal AddressBound *v1.Pod/pod-0"}},
		},
		"GrantQuotaFull": {
			reason: "A grant whose maxEIPs are all in use: QuotaExceeded before any cloud call, nothing recorded.",
			objs: []client.Object{func() *v1alpha1.EIPGrant {
				g := grant()
				g.Spec.MaxEIPs = 0
				return g
			}(), eipPod("true")},
			want: want{res: reconcile.Result{RequeueAfter: time.Second}, state: v1alpha1.StateQuotaExceeded, message: "EIPGrant g allows 0 EIPs",
				events: wantEvent("Warning EIPQuotaExceeded *v1.Pod/pod-0")},
		},
		"Refused": {
			reason: "An EIP the cloud refuses as asked: Invalid, said on the Pod, its record dropped (a changed request is allocated as it is then).",
			objs:   []client.Object{grant(), eipPod("true")},
			errs:   map[string]error{"Allocate": errEIPInvalid},
			want: want{res: reconcile.Result{RequeueAfter: time.Second}, state: v1alpha1.StateInvalid, message: "the cloud refuses the EIP",
				events: wantEvent("Warning InvalidAddressRequest *v1.Pod/pod-0")},
		},
		"RefusedBackoff": {
			reason: "A refused EIP is not asked for again within its backoff.",
			objs:   []client.Object{grant(), eipPod("true")},
			errs:   map[string]error{"Allocate": errEIPInvalid},
			rounds: 2,
			want: want{res: reconcile.Result{RequeueAfter: time.Second}, upTo: true, state: v1alpha1.StateInvalid, message: "the cloud refuses the EIP",
				events: wantEvent("Warning InvalidAddressRequest *v1.Pod/pod-0")},
		},
		"AllocationNotRecorded": {
			reason: "An allocation whose record fails is not sent.",
			objs:   []client.Object{grant(), eipPod("true")},
			funcs:  failStatus,
			want:   want{err: "cannot record the EIP allocation: boom"},
		},
		"DescribeFails": {
			reason: "A region that cannot be read is the reconcile's error, said in the PodAddress's message; its state stays.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup: func(t *testing.T, w *world) {
				if _, err := w.eipRounds(t, 1); err != nil {
					t.Fatal(err)
				}
			},
			errs: map[string]error{"Describe": errBoom},
			want: want{err: "boom", state: v1alpha1.StateAllocated, message: "boom", eip: v1alpha1.EIPAllocating, eips: unbound},
		},
		"AssociateFails": {
			reason: "An association the cloud refuses is the reconcile's error; the association stays recorded, to be sent again.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup: func(t *testing.T, w *world) {
				if _, err := w.eipRounds(t, 1); err != nil {
					t.Fatal(err)
				}
				w.vpc.Settle()
				w.vpc.Errs["eip-1"] = errBoom
			},
			want: want{err: "cannot associate EIP eip-1 with 10.0.0.5: boom", state: v1alpha1.StateAllocated, message: "boom",
				eip: v1alpha1.EIPAssociating, eips: unbound},
		},
		"ProviderConfigGone": {
			reason: "An EIP whose provider config is gone cannot be moved: Pending, and the Pod told why.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup: func(t *testing.T, w *world) {
				if _, err := w.eipRounds(t, 1); err != nil {
					t.Fatal(err)
				}
				if err := w.kube.Delete(context.Background(), providerConfig()[0]); err != nil {
					t.Fatal(err)
				}
			},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StatePending, message: "cannot get ClusterProviderConfig default",
				eip: v1alpha1.EIPAllocating, eips: unbound},
		},
		"RequestChanged": {
			reason: "A request changed before its EIP was associated: the EIP is released and one with the new attributes allocated.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup: func(t *testing.T, w *world) {
				if _, err := w.eipRounds(t, 1); err != nil {
					t.Fatal(err)
				}
				w.annotatePod(t, podannotation.AnnotationEIP, "bandwidth=5")
			},
			rounds: 4,
			want: want{res: reconcile.Result{RequeueAfter: eip.TaskPoll}, state: v1alpha1.StateAllocated, message: "Allocating",
				eip: v1alpha1.EIPAllocating, vpc: []string{"Release [eip-1]", "Allocate [eip-4] team-a/pod-0"}, eips: []string{"eip-4 5Mbps unbound"}},
		},
		"PodGoneReleased": {
			reason: "A Pod gone without a keep duration: its EIP is disassociated and released, then its PodAddress goes.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup:  gone,
			rounds: 4,
			want:   want{vpc: []string{"Disassociate eip-1", "Release [eip-1]"}},
		},
		"PodGoneKept": {
			reason: "A Pod gone with a keep duration: its EIP is disassociated and Held until the duration ends.",
			objs:   []client.Object{grant(), eipPodWith("true", podannotation.AnnotationKeepDuration, "5m")},
			setup:  gone,
			rounds: 2,
			want: want{res: reconcile.Result{RequeueAfter: 5 * time.Minute}, state: v1alpha1.StateHeld, message: "its EIP is kept",
				eip: v1alpha1.EIPAllocated, vpc: []string{"Disassociate eip-1"}, eips: unbound},
		},
		"PodGoneKeptEnded": {
			reason: "A held EIP is released once the keep duration ends.",
			objs:   []client.Object{grant(), eipPodWith("true", podannotation.AnnotationKeepDuration, "5m")},
			setup: func(t *testing.T, w *world) {
				gone(t, w)
				if _, err := w.eipRounds(t, 2); err != nil {
					t.Fatal(err)
				}
				w.now = now.Add(6 * time.Minute)
			},
			rounds: 3,
			want:   want{vpc: []string{"Release [eip-1]"}},
		},
		"PodGoneNeverReleased": {
			reason: "A Pod gone whose EIP's release policy is Never: the EIP is Held with no end.",
			objs: []client.Object{func() *v1alpha1.EIPGrant {
				g := grant()
				g.Spec.ReleasePolicies = []string{v1alpha1.EIPReleaseNever}
				return g
			}(), eipPod("releasePolicy=Never")},
			setup:  gone,
			rounds: 3,
			want: want{state: v1alpha1.StateHeld, message: "its EIP is kept", eip: v1alpha1.EIPAllocated,
				vpc: []string{"Disassociate eip-1"}, eips: unbound},
		},
		"ReleaseFails": {
			reason: "A release the cloud refuses keeps the PodAddress, deleting, with its EIP recorded.",
			objs:   []client.Object{grant(), eipPod("true")},
			setup:  gone,
			errs:   map[string]error{"Release": errBoom},
			rounds: 3,
			want: want{err: "cannot release EIP eip-1: boom", state: v1alpha1.StateBound, deleting: true, eip: v1alpha1.EIPReleasing,
				vpc: []string{"Disassociate eip-1"}, eips: unbound},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newEIPWorld(t, tc.funcs, tc.objs...)
			if tc.setup != nil {
				tc.setup(t, w)
			}
			w.armed.Store(true)
			maps.Copy(w.vpc.errs, tc.errs)
			w.events.take()
			vpcBefore, lbBefore := len(w.vpc.Log()), len(w.cloud.Writes())
			res, err := w.eipRounds(t, max(tc.rounds, 1))
			if got := fmt.Sprint(err); (tc.want.err == "") != (err == nil) || !strings.Contains(got, tc.want.err) {
				t.Errorf("\n%s\nReconcile(...): error %v, want %q", tc.reason, err, tc.want.err)
			}
			if tc.want.upTo {
				if d := res.RequeueAfter; d <= 0 || d > tc.want.res.RequeueAfter {
					t.Errorf("\n%s\nReconcile(...): %+v, want a requeue within %s", tc.reason, res, tc.want.res.RequeueAfter)
				}
			} else if res != tc.want.res {
				t.Errorf("\n%s\nReconcile(...): %+v, want %+v", tc.reason, res, tc.want.res)
			}
			state, message, eipState, deleting := "", "", "", false
			if pa := w.podAddress(t); pa != nil {
				state, message, deleting = pa.Status.State, pa.Status.Message, pa.DeletionTimestamp != nil
				if pa.Status.EIP != nil {
					eipState = pa.Status.EIP.State
				}
			}
			if state != tc.want.state || deleting != tc.want.deleting {
				t.Errorf("\n%s\nPodAddress state %q (deleting %v), want %q (deleting %v)", tc.reason, state, deleting, tc.want.state, tc.want.deleting)
			}
			if !strings.Contains(message, tc.want.message) {
				t.Errorf("\n%s\nPodAddress message %q, want it to say %q", tc.reason, message, tc.want.message)
			}
			if eipState != tc.want.eip {
				t.Errorf("\n%s\nstatus.eip state %q, want %q", tc.reason, eipState, tc.want.eip)
			}
			if diff := cmp.Diff(tc.want.vpc, w.vpc.Log()[vpcBefore:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nVPC calls: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.eips, w.vpc.addresses(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nEIPs: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.targets, w.cloud.Writes()[lbBefore:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nload balancer writes: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.events, w.events.take(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
