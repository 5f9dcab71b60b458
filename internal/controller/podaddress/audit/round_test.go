package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	providerv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
)

const (
	poolKey = "team-a/web"
	lb1     = "lb-1"
	lbl100  = "lbl-100"
	lbl101  = "lbl-101"
)

var (
	errBoom = errors.New("boom")
	boundAt = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
)

func kubeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.AddToScheme, clbv1alpha1.AddToScheme, providerv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func newKube(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	return kfake.NewClientBuilder().WithScheme(kubeScheme(t)).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

// failList fails the List of the list type of like.
func failList(like client.ObjectList, err error) interceptor.Funcs {
	return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		if fmt.Sprintf("%T", l) == fmt.Sprintf("%T", like) {
			return err
		}
		return c.List(ctx, l, opts...)
	}}
}

// portPool is PortPool team-a/web with load balancer lb-1 holding its
// TCP listeners on ports 100 and 101.
func portPool() *clbv1alpha1.PortPool {
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	pp.Status.AtProvider.LoadBalancers = []clbv1alpha1.PoolLoadBalancerStatus{{ID: lb1, State: clbv1alpha1.PoolLBReady,
		Listeners: map[string]string{"TCP/100": lbl100, "TCP/101": lbl101}}}
	return pp
}

// binding is a binding on listener of lb-1 whose target is ip:8080.
func binding(listener, ip string) v1alpha1.PortBinding {
	return v1alpha1.PortBinding{Pool: poolKey, Protocol: "TCP", ContainerPort: 80, LoadBalancerID: lb1, Port: 100,
		ListenerIDs: map[string]string{"TCP": listener}, TargetIP: ip, TargetPort: 8080}
}

// bound is PodAddress team-a/name, Bound at boundAt with bs.
func bound(name string, bs ...v1alpha1.PortBinding) *v1alpha1.PodAddress {
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
	pa.Status.State = v1alpha1.StateBound
	pa.Status.BoundAt = &boundAt
	pa.Status.Bindings = bs
	return pa
}

// backend is an ENI target ip:8080 of weight w (nil: the API said none).
func backend(ip string, w *int64) *clbsdk.Backend {
	return &clbsdk.Backend{Type: clb.Ptr("ENI"), Port: clb.Ptr(int64(8080)), Weight: w, PrivateIpAddresses: []*string{clb.Ptr(ip)}}
}

// region is a fake region whose lb-1 has listeners lbl-100 and lbl-101
// holding targets.
func region(targets map[string][]*clbsdk.Backend) *fake.Cloud {
	c := fake.New(lb1)
	for _, id := range []string{lbl100, lbl101} {
		c.SetTargets(lb1, &clbsdk.ListenerBackend{ListenerId: clb.Ptr(id), Protocol: clb.Ptr("TCP"), Port: clb.Ptr(int64(100)), Targets: targets[id]})
	}
	return c
}

// eventLog records Events as "Kind ns/name Type Reason: message".
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) Event(obj runtime.Object, e event.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := obj.(client.Object)
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1alpha1.")
	l.events = append(l.events, fmt.Sprintf("%s %s/%s %s %s: %s", kind, o.GetNamespace(), o.GetName(), e.Type, e.Reason, e.Message))
}

func (l *eventLog) WithAnnotations(...string) event.Recorder { return l }

func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// logLog records the messages logged at Info.
type logLog struct {
	mu   sync.Mutex
	info []string
}

func (l *logLog) Info(msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.info = append(l.info, fmt.Sprint(append([]any{msg}, kv...)...))
}
func (l *logLog) Debug(string, ...any)             {}
func (l *logLog) WithValues(...any) logging.Logger { return l }

func (l *logLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.info, "\n")
}

// auditor audits kube (api confirming foreign targets) in cloud, whose
// client every pool and region gets unless clientErr.
func auditor(kube, api client.Reader, cloud API, clientErr error, rec event.Recorder, log logging.Logger) *Auditor {
	return &Auditor{kube: kube, api: api, repairs: NewRepairs(prometheus.NewRegistry()), record: rec, log: log, interval: time.Minute,
		clients: func(context.Context, string, string) (API, error) {
			if clientErr != nil {
				return nil, clientErr
			}
			return cloud, nil
		}}
}

// repairsOf are the repairs waiting, by PodAddress, without their times.
func repairsOf(rs *Repairs) map[types.NamespacedName][]clb.Target {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := map[types.NamespacedName][]clb.Target{}
	for k, rp := range rs.m {
		if !rp.BoundAt.Equal(&boundAt) {
			out[k] = nil // a repair must carry the binding it repairs
			continue
		}
		out[k] = rp.Targets
	}
	return out
}

func drift(rs *Repairs, kind string) float64 {
	return testutil.ToFloat64(rs.metrics.drift.WithLabelValues(kind))
}

func TestRound(t *testing.T) {
	ctx := context.Background()
	ten, five := clb.Ptr(int64(10)), clb.Ptr(int64(5))
	target := func(listener, ip string) clb.Target {
		return clb.Target{ListenerID: listener, EniIP: ip, Port: 8080}
	}
	pa1 := types.NamespacedName{Namespace: "team-a", Name: "pa-1"}
	notServing := bound("pa-1", binding(lbl100, "10.0.0.1"))
	notServing.Status.State = v1alpha1.StatePending
	notBoundYet := bound("pa-1", binding(lbl100, "10.0.0.1"))
	notBoundYet.Status.BoundAt = nil
	deleting := bound("pa-1", binding(lbl100, "10.0.0.1"))
	deleting.SetDeletionTimestamp(&boundAt)
	deleting.SetFinalizers([]string{"test"})
	unrecorded := binding(lbl100, "")
	noLBs := portPool()
	noLBs.Status.AtProvider.LoadBalancers = append(noLBs.Status.AtProvider.LoadBalancers,
		clbv1alpha1.PoolLoadBalancerStatus{ID: "lb-gone", State: clbv1alpha1.PoolLBNotFound, Listeners: map[string]string{"TCP/100": "lbl-x"}},
		clbv1alpha1.PoolLoadBalancerStatus{ID: "lb-empty", State: clbv1alpha1.PoolLBCreating})

	type want struct {
		err     string // a substring; "" for none
		writes  []string
		events  []string
		repairs map[types.NamespacedName][]clb.Target
		drift   map[string]float64
		reads   int // DescribeTargets calls, all rounds
		log     string
	}
	cases := map[string]struct {
		reason    string
		rounds    int
		objs      []client.Object
		kubeFuncs interceptor.Funcs
		apiObjs   []client.Object // what an uncached read sees; objs when nil
		apiFuncs  interceptor.Funcs
		targets   map[string][]*clbsdk.Backend
		writeErr  error
		clientErr error
		want      want
	}{
		"InSync": {
			reason:  "A recorded target with the provider's weight is left alone, in one read of the load balancer's listeners.",
			objs:    []client.Object{portPool(), bound("pa-1", binding(lbl100, "10.0.0.1"))},
			targets: map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.1", ten)}},
			want:    want{reads: 1},
		},
		"NoWeightAnswered": {
			reason:  "A target the API answers without a weight is not reset.",
			objs:    []client.Object{portPool(), bound("pa-1", binding(lbl100, "10.0.0.1"))},
			targets: map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.1", nil)}},
			want:    want{reads: 1},
		},
		"Missing": {
			reason: "A target of a Bound PodAddress missing from its listener is handed to its reconcile, with when it was bound.",
			objs:   []client.Object{portPool(), bound("pa-1", binding(lbl100, "10.0.0.1"), binding(lbl101, "10.0.0.1"))},
			want: want{reads: 1, repairs: map[types.NamespacedName][]clb.Target{
				pa1: {target(lbl100, "10.0.0.1"), target(lbl101, "10.0.0.1")},
			}},
		},
		"ListenerGone": {
			reason: "A target whose listener is gone is not missing: the listener is, and that is the pool's to repair. The listener is still read.",
			objs:   []client.Object{portPool(), bound("pa-1", binding("lbl-gone", "10.0.0.1"))},
			want:   want{reads: 1},
		},
		"WeightChanged": {
			reason:  "A weight changed behind the provider's back is reset, counted and told on the PodAddress.",
			objs:    []client.Object{portPool(), bound("pa-1", binding(lbl100, "10.0.0.1"))},
			targets: map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.1", five)}},
			want: want{
				reads:  1,
				writes: []string{"ModifyTargetWeight lb-1 lbl-100//10.0.0.1:8080=10"},
				events: []string{"PodAddress team-a/pa-1 Normal TargetRepaired: reset the weight of target 10.0.0.1:8080 on listener lbl-100 to 10: it was changed behind the provider's back"},
				drift:  map[string]float64{driftWeight: 1},
			},
		},
		"WeightResetFails": {
			reason:   "A reset that fails is logged and left to the next round: nothing is counted or told.",
			objs:     []client.Object{portPool(), bound("pa-1", binding(lbl100, "10.0.0.1"))},
			targets:  map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.1", five)}},
			writeErr: errBoom,
			want:     want{reads: 1, log: "Target audit cannot reset target weights"},
		},
		"NotServing": {
			reason:  "A PodAddress that is not serving has nothing missing, and its targets are not foreign either.",
			rounds:  2,
			objs:    []client.Object{portPool(), notServing},
			targets: map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.1", five)}},
			want:    want{reads: 2},
		},
		"NotBoundYet": {
			reason: "A PodAddress never bound has nothing to repair.",
			objs:   []client.Object{portPool(), notBoundYet},
			want:   want{reads: 1},
		},
		"Deleting": {
			reason: "A PodAddress being deleted has nothing to repair.",
			objs:   []client.Object{portPool(), deleting},
			want:   want{reads: 1},
		},
		"TargetNotRecorded": {
			reason: "A binding without a target recorded expects nothing.",
			objs:   []client.Object{portPool(), bound("pa-1", unrecorded)},
			want:   want{reads: 1},
		},
		"ForeignOnce": {
			reason:  "A target nobody recorded, seen once, may be one in flight: it stays.",
			objs:    []client.Object{portPool()},
			targets: map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.9", ten)}},
			want:    want{reads: 1},
		},
		"ForeignTwice": {
			reason:  "A target nobody recorded, seen in two rounds and confirmed by an uncached read, is deregistered, counted and told on its pool.",
			rounds:  2,
			objs:    []client.Object{portPool()},
			targets: map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.9", ten)}},
			want: want{
				reads:  2,
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.9:8080"},
				events: []string{"PortPool team-a/web Warning ForeignTargetRemoved: deregistered target 10.0.0.9:8080 from listener lbl-100 of load balancer lb-1: no PodAddress recorded it"},
				drift:  map[string]float64{driftForeign: 1},
			},
		},
		"ForeignCVM": {
			reason: "A foreign CVM is deregistered by its instance; a backend without a port cannot be and is left.",
			rounds: 2,
			objs:   []client.Object{portPool()},
			targets: map[string][]*clbsdk.Backend{lbl100: {
				{Type: clb.Ptr("CVM"), InstanceId: clb.Ptr("ins-1"), Port: clb.Ptr(int64(8080))},
				{Type: clb.Ptr("ENI"), PrivateIpAddresses: []*string{clb.Ptr("10.0.0.8")}},
			}},
			want: want{
				reads:  2,
				writes: []string{"DeregisterTargets lb-1 lbl-100//ins-1:8080"},
				events: []string{"PortPool team-a/web Warning ForeignTargetRemoved: deregistered target ins-1:8080 from listener lbl-100 of load balancer lb-1: no PodAddress recorded it"},
				drift:  map[string]float64{driftForeign: 1},
			},
		},
		"ForeignOnUnpooledListener": {
			reason:  "A foreign target on a listener only a binding names (not its pool's status) is deregistered, but no pool is told.",
			rounds:  2,
			objs:    []client.Object{bound("pa-1", binding(lbl100, "10.0.0.1"))},
			targets: map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.1", ten), backend("10.0.0.9", ten)}},
			want: want{
				reads:  2,
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.9:8080"},
				drift:  map[string]float64{driftForeign: 1},
			},
		},
		"ForeignIsOurs": {
			reason:  "A suspect the uncached read shows recorded (the cache was behind) is not deregistered.",
			rounds:  2,
			objs:    []client.Object{portPool()},
			apiObjs: []client.Object{portPool(), bound("pa-2", binding(lbl100, "10.0.0.9"))},
			targets: map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.9", ten)}},
			want:    want{reads: 2},
		},
		"ForeignUnconfirmed": {
			reason:   "When the uncached read fails, nothing is deregistered and the round says why.",
			rounds:   2,
			objs:     []client.Object{portPool()},
			apiFuncs: failList(&v1alpha1.PodAddressList{}, errBoom),
			targets:  map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.9", ten)}},
			want:     want{reads: 2, err: "cannot confirm foreign targets: boom"},
		},
		"ForeignDeregisterFails": {
			reason:   "A deregistration that fails is the round's error; nothing is counted or told.",
			rounds:   2,
			objs:     []client.Object{portPool()},
			targets:  map[string][]*clbsdk.Backend{lbl100: {backend("10.0.0.9", ten)}},
			writeErr: errBoom,
			want:     want{reads: 2, err: "cannot deregister foreign targets from load balancer lb-1: boom"},
		},
		"PortPoolsUnlisted": {
			reason:    "A round that cannot list the pools reads nothing.",
			objs:      []client.Object{portPool()},
			kubeFuncs: failList(&clbv1alpha1.PortPoolList{}, errBoom),
			want:      want{err: "cannot list PortPools: boom"},
		},
		"PodAddressesUnlisted": {
			reason:    "A round that cannot list the PodAddresses reads nothing.",
			objs:      []client.Object{portPool()},
			kubeFuncs: failList(&v1alpha1.PodAddressList{}, errBoom),
			want:      want{err: "cannot list PodAddresses: boom"},
		},
		"NoClient": {
			reason:    "A pool whose cloud client cannot be built is skipped, without failing the round.",
			objs:      []client.Object{portPool(), bound("pa-1", binding(lbl100, "10.0.0.1"))},
			clientErr: errBoom,
		},
		"SkippedLoadBalancers": {
			reason: "A load balancer that does not exist, or has no listeners, is not read.",
			objs:   []client.Object{noLBs},
			want:   want{reads: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cloud := region(tc.targets)
			if tc.writeErr != nil {
				cloud.Errs[lb1] = tc.writeErr
			}
			apiObjs := tc.apiObjs
			if apiObjs == nil {
				apiObjs = tc.objs
			}
			rec, log := &eventLog{}, &logLog{}
			a := auditor(newKube(t, tc.kubeFuncs, tc.objs...), newKube(t, tc.apiFuncs, apiObjs...), cloud, tc.clientErr, rec, log)
			var err error
			for range max(tc.rounds, 1) {
				err = a.round(ctx)
			}
			if tc.want.err == "" && err != nil || tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nround(...): %v, want %q", tc.reason, err, tc.want.err)
			}
			if diff := cmp.Diff(tc.want.writes, cloud.Writes()); diff != "" {
				t.Errorf("%s\ncloud writes: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.events, rec.take()); diff != "" {
				t.Errorf("%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.repairs, repairsOf(a.repairs), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nrepairs: -want, +got:\n%s", tc.reason, diff)
			}
			if got := len(a.repairs.Wake()); got != len(tc.want.repairs) {
				t.Errorf("%s\n%d reconciles woken, want %d", tc.reason, got, len(tc.want.repairs))
			}
			for _, kind := range []string{driftMissing, driftWeight, driftForeign} {
				if got := drift(a.repairs, kind); got != tc.want.drift[kind] {
					t.Errorf("%s\ndrift %s = %v, want %v", tc.reason, kind, got, tc.want.drift[kind])
				}
			}
			if cloud.TargetReads != tc.want.reads {
				t.Errorf("%s\n%d target reads, want %d", tc.reason, cloud.TargetReads, tc.want.reads)
			}
			if got := log.String(); tc.want.log != "" && !strings.Contains(got, tc.want.log) || tc.want.log == "" && got != "" {
				t.Errorf("%s\nlogged %q, want %q", tc.reason, got, tc.want.log)
			}
		})
	}
}
