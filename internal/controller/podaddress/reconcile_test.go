package podaddress

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	providerv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/eip"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
)

// The world most tests reconcile in: Pod team-a/pod-0 asking for port 80
// of PortPool team-a/web, whose load balancer lb-1 has TCP listeners on
// ports 100 and 101.
const (
	ns      = "team-a"
	podName = "pod-0"
	podUID  = "uid-pod-0"
	podIP   = "10.0.0.5"
	lb1     = "lb-1"
)

var (
	key     = types.NamespacedName{Namespace: ns, Name: podName}
	now     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	vip     = "203.0.113.1"
	vip6    = "fdc1:b000::1"
	podIP6  = "fd00:10::5"
	lbPorts = []int32{100, 101}
)

func listenerOf(port int32) string { return fmt.Sprintf("lbl-%d", port) }

func kubeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.AddToScheme, clbv1alpha1.AddToScheme, providerv1alpha1.AddToScheme, clusterv1alpha1.AddToScheme, tkev1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// portPool is PortPool team-a/web: lb-1 ready with a TCP listener on each
// of ports.
func portPool() *clbv1alpha1.PortPool {
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "uid-pool"}}
	pp.Spec.ForProvider.StartPort = int64(lbPorts[0])
	pp.Spec.ForProvider.EndPort = int64(lbPorts[len(lbPorts)-1])
	lb := clbv1alpha1.PoolLoadBalancerStatus{ID: lb1, State: clbv1alpha1.PoolLBReady, Name: "web-1", Type: "OPEN", Region: "ap-guangzhou",
		ISP: "BGP", VIPs: []string{vip}, Listeners: map[string]string{}}
	for _, p := range lbPorts {
		lb.Listeners[clbv1alpha1.ListenerKey{Protocol: "TCP", Port: p}.String()] = listenerOf(p)
	}
	pp.Status.AtProvider.LoadBalancers = []clbv1alpha1.PoolLoadBalancerStatus{lb}
	return pp
}

// ipv6Pool is portPool with lb-1 an IPv6 load balancer of mode
// (IPv6Nat64 or IPv6FullChain), reached at an IPv6 VIP.
func ipv6Pool(mode string) *clbv1alpha1.PortPool {
	pp := portPool()
	lb := &pp.Status.AtProvider.LoadBalancers[0]
	lb.VIPs, lb.AddressIPVersion, lb.IPv6Mode = []string{vip6}, "ipv6", mode
	return pp
}

// dualStackPod is pod(podIP) with the IPv6 address podIP6 too.
func dualStackPod() *corev1.Pod {
	p := pod(podIP)
	p.Status.PodIPs = []corev1.PodIP{{IP: podIP}, {IP: podIP6}}
	return p
}

// pod is Pod team-a/pod-0, an hour old, asking for 80 of pool web, with
// extra annotations and, when ip is set, running at ip.
func pod(ip string, annotations ...string) *corev1.Pod {
	a := map[string]string{podannotation.AnnotationPorts: "80 web"}
	for i := 0; i+1 < len(annotations); i += 2 {
		a[annotations[i]] = annotations[i+1]
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, UID: podUID, Annotations: a,
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	p.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}}
	p.Status.PodIP = ip
	if ip != "" {
		p.Status.Phase = corev1.PodRunning
	}
	return p
}

// tkeAnnotations ask for 80/TCP of pool team-a/web in tke-extend's
// syntax, with extra annotations.
func tkeAnnotations(extra ...string) []string {
	return append([]string{podannotation.TKEAnnotationEnableMapping, "true", podannotation.TKEAnnotationPortMapping, "80 TCP team-a/web"}, extra...)
}

// tkePod is pod(ip) asking in tke-extend's syntax instead of ours.
func tkePod(ip string, extra ...string) *corev1.Pod {
	p := pod(ip, tkeAnnotations(extra...)...)
	delete(p.Annotations, podannotation.AnnotationPorts)
	return p
}

// region is the fake cloud of lb-1 with the pool's listeners, empty.
func region() *fake.Cloud {
	c := fake.New()
	for _, p := range lbPorts {
		c.SetTargets(lb1, &clbsdk.ListenerBackend{ListenerId: clb.Ptr(listenerOf(p)), Protocol: clb.Ptr("TCP"), Port: clb.Ptr(int64(p))})
	}
	return c
}

// eventLog records Events as "Type Reason kind/name".
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) Event(obj runtime.Object, e event.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, _ := obj.(client.Object)
	l.events = append(l.events, fmt.Sprintf("%s %s %T/%s", e.Type, e.Reason, obj, o.GetName()))
}

func (l *eventLog) WithAnnotations(...string) event.Recorder { return l }

func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// world is a Reconciler on a fake API server and a fake region.
type world struct {
	kube  client.WithWatch
	r     *Reconciler
	cloud *fake.Cloud
	// vpc is the fake VPC region of EIPs; nil for a provider without a
	// VPC client.
	vpc    *eipRegion
	events *eventLog
	now    time.Time
	// stop stops the Reconciler's binder.
	stop func()
	// armed turns on the failures a case injects, once its setup is done.
	armed atomic.Bool
}

func newWorld(t *testing.T, funcs func(*atomic.Bool) interceptor.Funcs, objs ...client.Object) *world {
	t.Helper()
	return newWorldWith(t, nil, funcs, objs...)
}

// newWorldWith is newWorld whose Reconciler moves EIPs in vpc.
func newWorldWith(t *testing.T, vpc *eipRegion, funcs func(*atomic.Bool) interceptor.Funcs, objs ...client.Object) *world {
	t.Helper()
	w := &world{cloud: region(), vpc: vpc, events: &eventLog{}}
	var f interceptor.Funcs
	if funcs != nil {
		f = funcs(&w.armed)
	}
	kube := kfake.NewClientBuilder().WithScheme(kubeScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.PodAddress{}, &corev1.Pod{}, &clbv1alpha1.PortPool{}, &v1alpha1.RemotePod{}).
		WithIndex(&v1alpha1.PodAddress{}, v1alpha1.PoolIndex, v1alpha1.PoolsOf).
		WithInterceptorFuncs(withPodStatusMetadata(withUIDs(f))).Build()
	w.kube = kube
	w.start(t)
	return w
}

// sealKey is the records' key of every world: a restarted provider loads
// the same key again (seal.Load), so it trusts what it sealed before.
var sealKey = []byte("unit-test-seal-key-0123456789abc")

// start runs a new Reconciler on w's API server and region: a fresh
// allocator and binder, as a provider that just started has.
func (w *world) start(t *testing.T) {
	t.Helper()
	reads := &sealedReads{Client: w.kube}
	w.r = NewReconciler(reads, nil, logging.NewNopLogger(), w.events)
	reads.r = w.r
	w.r.records.seal = seal.New(sealKey, true)
	w.r.clock = func() time.Time { return w.now }
	if w.now.IsZero() {
		w.now = now
	}
	w.r.out.podEvents = PodEventsAll
	// As in a provider given no RemotePods option: served at once.
	if err := w.r.remote.served.Served(); err != nil {
		t.Fatal(err)
	}
	w.r.cloud.binder = targets.NewBinderWith(w.kube, func(context.Context, string, string) (targets.API, error) { return w.cloud, nil })
	if w.vpc != nil {
		// As setup wires a provider given a VPC client, without a warmer.
		w.r.eips.machine = eip.NewMachineWith(w.r.kube, func(clients.Config) (eip.API, error) { return w.vpc, nil },
			nil, w.r.eips.grants, w.r.now, w.r.writeStatus)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.r.cloud.binder.Start(ctx) }()
	var once sync.Once
	w.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-stopped; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(w.stop)
}

// restart stops w's Reconciler and starts a new one over the same API
// objects and region: whatever the old one held in memory (allocator,
// binder answers, memos) is lost, as in a provider restart.
func (w *world) restart(t *testing.T) {
	t.Helper()
	w.stop()
	w.start(t)
}

// sealedReads reads PodAddresses as the manager's cache holds them: with
// the records the reconciler's seal does not vouch for dropped
// (seal.Sealer.Transform).
type sealedReads struct {
	client.Client
	r *Reconciler
}

func (c *sealedReads) Get(ctx context.Context, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return seal.Reader(c.Client, c.r.records.seal).Get(ctx, k, obj, opts...)
}

func (c *sealedReads) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	return seal.Reader(c.Client, c.r.records.seal).List(ctx, l, opts...)
}

// forge writes pa's status as someone else than the provider would: not
// sealed by it.
func (w *world) forge(t *testing.T, change func(*v1alpha1.PodAddress)) {
	t.Helper()
	pa := &v1alpha1.PodAddress{}
	if err := w.kube.Get(context.Background(), key, pa); err != nil {
		t.Fatal(err)
	}
	change(pa)
	if err := w.kube.Status().Update(context.Background(), pa); err != nil {
		t.Fatal(err)
	}
}

// foreign is a binding of port 101 to someone else's target 10.9.9.9:80.
func foreign() v1alpha1.PortBinding {
	return v1alpha1.PortBinding{Pool: "team-a/web", Protocol: "TCP", ContainerPort: 80, LoadBalancerID: lb1, Port: 101,
		ListenerIDs: map[string]string{"TCP": listenerOf(101)}, TargetIP: "10.9.9.9", TargetPort: 80}
}

// withUIDs gives created objects a uid and a creation time, as the API
// server does and the fake client does not: a status is sealed with its
// object's uid, and a create record with the time it was made.
func withUIDs(funcs interceptor.Funcs) interceptor.Funcs {
	next := funcs.Create
	funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if obj.GetUID() == "" {
			obj.SetUID(types.UID("uid-" + obj.GetName()))
		}
		if ts := obj.GetCreationTimestamp(); ts.IsZero() {
			obj.SetCreationTimestamp(metav1.Now())
		}
		if next != nil {
			return next(ctx, c, obj, opts...)
		}
		return c.Create(ctx, obj, opts...)
	}
	return funcs
}

// withPodStatusMetadata makes a patch of a Pod's status subresource change
// its metadata too, as the API server's pods/status does and the fake
// client's does not: tellPod writes a condition and the annotations that
// go with it in one such patch.
func withPodStatusMetadata(funcs interceptor.Funcs) interceptor.Funcs {
	next := funcs.SubResourcePatch
	funcs.SubResourcePatch = func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		before, _ := obj.DeepCopyObject().(client.Object)
		var err error
		if next != nil {
			err = next(ctx, c, sub, obj, p, opts...)
		} else {
			err = c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}
		if _, ok := obj.(*corev1.Pod); !ok || sub != "status" || err != nil {
			return err
		}
		// The same patch, computed from the object as it was, on the main
		// resource: its metadata is applied, its status ignored.
		return c.Patch(ctx, before, p)
	}
	return funcs
}

// reconcile reconciles key until it needs nothing more of the binder:
// whenever an operation runs, it waits for the binder's wake and
// reconciles again, as the controller's watch of the binder does.
func (w *world) reconcile(t *testing.T) (reconcile.Result, error) {
	t.Helper()
	return w.reconcileKey(t, key)
}

// reconcileKey is reconcile of the name k.
func (w *world) reconcileKey(t *testing.T, k types.NamespacedName) (reconcile.Result, error) {
	t.Helper()
	for range 10 {
		res, err := w.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: k})
		if w.r.cloud.binder.Idle(k) {
			select {
			case <-w.r.cloud.binder.Wake():
				continue // an answer landed just now
			case <-time.After(20 * time.Millisecond):
				return res, err
			}
		}
		select {
		case <-w.r.cloud.binder.Wake():
		case <-time.After(10 * time.Second):
			t.Fatal("the binder never answered")
		}
	}
	t.Fatal("still reconciling after 10 rounds")
	return reconcile.Result{}, nil
}

// bindFirst reconciles until the PodAddress is Bound: a case's setup.
func (w *world) bindFirst(t *testing.T) {
	t.Helper()
	if _, err := w.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if pa := w.podAddress(t); pa == nil || pa.Status.State != v1alpha1.StateBound {
		t.Fatalf("setup: the PodAddress is not Bound: %+v", pa)
	}
}

// setPodIP gives the Pod another IP, as its sandbox being recreated does.
func (w *world) setPodIP(t *testing.T, ip string) {
	t.Helper()
	p := &corev1.Pod{}
	if err := w.kube.Get(context.Background(), key, p); err != nil {
		t.Fatal(err)
	}
	p.Status.PodIP = ip
	if err := w.kube.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func (w *world) podAddress(t *testing.T) *v1alpha1.PodAddress {
	t.Helper()
	pa := &v1alpha1.PodAddress{}
	if err := w.kube.Get(context.Background(), key, pa); err != nil {
		return nil
	}
	return pa
}

// bound lists the targets the region's listeners hold, as
// "listener ip:port".
func (w *world) bound(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range lbPorts {
		be, err := w.cloud.DescribeTargets(context.Background(), lb1, listenerOf(p))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range be.Targets {
			out = append(out, fmt.Sprintf("%s %s:%d", listenerOf(p), *b.PrivateIpAddresses[0], *b.Port))
		}
	}
	return out
}

// allocated is how many slots of lb-1 the allocator holds.
func (w *world) allocated(t *testing.T) int {
	t.Helper()
	a, _, err := w.r.alloc.pools.Get(context.Background(), "team-a/web")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, st := range a.Stats().LBs {
		n += st.Allocated
	}
	return n
}

func (w *world) deletePod(t *testing.T) {
	t.Helper()
	if err := w.kube.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName}}); err != nil {
		t.Fatal(err)
	}
}

// createPod creates Pod team-a/pod-0 anew, with uid and ip.
func (w *world) createPod(t *testing.T, uid, ip string, annotations ...string) {
	t.Helper()
	w.recreate(t, uid, pod(ip, annotations...))
}

// recreate creates p (Pod team-a/pod-0) anew, with uid.
func (w *world) recreate(t *testing.T, uid string, p *corev1.Pod) {
	t.Helper()
	p.UID = types.UID(uid)
	p.ResourceVersion = ""
	if err := w.kube.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// sharedPool is PortPool shared/web, serving its own namespace only.
func sharedPool() *clbv1alpha1.PortPool {
	pp := portPool()
	pp.Namespace, pp.UID = "shared", "uid-shared"
	return pp
}

// failStatus fails, once armed, the status writes of PodAddresses.
func failStatus(armed *atomic.Bool) interceptor.Funcs {
	return interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if _, ok := obj.(*v1alpha1.PodAddress); ok && armed.Load() {
			return errBoom
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}}
}

// openPool is PortPool shared/web serving every namespace.
func openPool() *clbv1alpha1.PortPool {
	pp := sharedPool()
	pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	return pp
}

// youngPod is pod(podIP) created a minute ago, not on a node (no host IP).
func youngPod(annotations ...string) *corev1.Pod {
	p := pod(podIP, annotations...)
	p.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	return p
}

// onNode is p running on its node (a host IP): a Pod that holds ports in
// pools of other namespaces for good (see pendingForeign).
func onNode(p *corev1.Pod) *corev1.Pod {
	p.Status.HostIP = "192.168.0.9"
	return p
}

// eipPod is pod(podIP) asking for an EIP of attributes instead of ports.
func eipPod(attributes string) *corev1.Pod {
	p := pod(podIP, podannotation.AnnotationEIP, attributes)
	delete(p.Annotations, podannotation.AnnotationPorts)
	return p
}

// grant is EIPGrant g, covering namespace team-a.
func grant() *v1alpha1.EIPGrant {
	g := &v1alpha1.EIPGrant{ObjectMeta: metav1.ObjectMeta{Name: "g"}}
	g.Spec.Namespaces.Names = []string{ns}
	g.Spec.MaxBandwidth, g.Spec.MaxEIPs = 10, 5
	g.Spec.ProviderConfigRef = xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}
	return g
}

// closePool makes PortPool shared/web serve its own namespace only.
func (w *world) closePool(t *testing.T) {
	t.Helper()
	pp := &clbv1alpha1.PortPool{}
	if err := w.kube.Get(context.Background(), types.NamespacedName{Namespace: "shared", Name: "web"}, pp); err != nil {
		t.Fatal(err)
	}
	pp.Spec.Consumers = nil
	if err := w.kube.Update(context.Background(), pp); err != nil {
		t.Fatal(err)
	}
}

// annotatePod sets annotations on Pod team-a/pod-0.
func (w *world) annotatePod(t *testing.T, kv ...string) {
	t.Helper()
	p := &corev1.Pod{}
	if err := w.kube.Get(context.Background(), key, p); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	if err := w.kube.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// admit allocates pod(podIP)'s ports at its admission, as the webhook
// does, the Pod waited for until until.
func (w *world) admit(t *testing.T, until time.Time) {
	t.Helper()
	p := pod(podIP)
	bs, err := w.r.AllocateAtAdmission(context.Background(), p, until)
	if err != nil || len(bs) != 1 {
		t.Fatalf("AllocateAtAdmission: %v, %v", bs, err)
	}
}

var errBoom = fmt.Errorf("boom")

// TestReconcile drives one Pod and its PodAddress through the reconcile,
// on a fake API server and a fake region. setup brings the world to the
// state under test (its events and cloud writes are not the case's);
// then the case reconciles rounds times, each until the binder answered.
func TestReconcile(t *testing.T) {
	type want struct {
		res       reconcile.Result
		err       string
		state     string // of the PodAddress; "" for none
		message   string // a part of its message
		source    string // its spec.source; unchecked when ""
		deleting  bool
		bound     []string
		writes    []string
		events    []string
		allocated int
		forever   bool // Held with no releaseAt
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  func(*atomic.Bool) interceptor.Funcs
		setup  func(t *testing.T, w *world)
		rounds int
		want   want
	}{
		"NothingAsked": {
			reason: "A Pod that asks for nothing gets no PodAddress.",
			objs: []client.Object{ns, portPool(), func() *corev1.Pod {
				p := pod(podIP)
				p.Annotations = nil
				return p
			}()},
		},
		"NoPod": {
			reason: "A name with neither Pod nor PodAddress is nothing to do.",
			objs:   []client.Object{ns, portPool()},
		},
		"CreatedAndBound": {
			reason: "A Pod with an IP asking by annotation gets a PodAddress, Bound, its target registered, and is told.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.5:80"},
				writes:    []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events:    []string{"Normal AddressBound *v1.Pod/pod-0"},
				allocated: 1},
		},
		"PodDeleted": {
			reason: "A Pod deleted: its PodAddress is deleted, its targets deregistered, its slot returned and its finalizer removed.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup:  func(t *testing.T, w *world) { w.bindFirst(t); w.deletePod(t) },
			rounds: 2,
			want:   want{writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}},
		},
		"KeepDuration": {
			reason: "A Pod deleted with a keep duration: its targets go, its ports are Held until the duration ends.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationKeepDuration, "5m")},
			setup:  func(t *testing.T, w *world) { w.bindFirst(t); w.deletePod(t) },
			want: want{res: reconcile.Result{RequeueAfter: 5 * time.Minute}, state: v1alpha1.StateHeld,
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}, allocated: 1},
		},
		"KeepDurationEnded": {
			reason: "Held ports are returned once the keep duration ends.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationKeepDuration, "5m")},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.now = now.Add(6 * time.Minute)
			},
			rounds: 2,
			want:   want{},
		},
		"KeepDurationRunning": {
			reason: "Held ports are looked at again when the keep duration ends, not before.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationKeepDuration, "5m")},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.now = now.Add(time.Minute)
			},
			want: want{res: reconcile.Result{RequeueAfter: 4 * time.Minute}, state: v1alpha1.StateHeld, allocated: 1},
		},
		"Retain": {
			reason: "A tke-extend Pod deleted with retain \"true\": its targets go, its ports are Held with no releaseAt and no requeue.",
			objs:   []client.Object{ns, portPool(), tkePod(podIP, podannotation.TKEAnnotationRetain, "true")},
			setup:  func(t *testing.T, w *world) { w.bindFirst(t); w.deletePod(t) },
			want: want{state: v1alpha1.StateHeld, source: "annotation/tke-extend", message: "kept for a Pod of the same name", forever: true,
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}, allocated: 1},
		},
		"RetainHeldAYearOn": {
			reason: "Retained ports are still Held a year after the Pod went.",
			objs:   []client.Object{ns, portPool(), tkePod(podIP, podannotation.TKEAnnotationRetain, "true")},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.now = now.Add(365 * 24 * time.Hour)
			},
			want: want{state: v1alpha1.StateHeld, allocated: 1, forever: true},
		},
		"RetainTakenOver": {
			reason: "A Pod of the same name takes retained ports over, however late, and is bound to the same port.",
			objs:   []client.Object{ns, portPool(), tkePod(podIP, podannotation.TKEAnnotationRetain, "true")},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.now = now.Add(365 * 24 * time.Hour)
				w.recreate(t, "uid-new", tkePod("10.0.0.6", podannotation.TKEAnnotationRetain, "true"))
			},
			rounds: 3,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.6:80"}, allocated: 1,
				writes: []string{"RegisterTargets lb-1 lbl-100//10.0.0.6:80"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"RetainSetLater": {
			reason: "retain set on a running Pod is followed: the Pod deleted afterwards is Held with no releaseAt.",
			objs:   []client.Object{ns, portPool(), tkePod(podIP)},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.annotatePod(t, podannotation.TKEAnnotationRetain, "true")
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.deletePod(t)
			},
			want: want{state: v1alpha1.StateHeld, writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}, allocated: 1, forever: true},
		},
		"RetainFalse": {
			reason: "retain \"false\": the ports go with the Pod, as without it.",
			objs:   []client.Object{ns, portPool(), tkePod(podIP, podannotation.TKEAnnotationRetain, "false")},
			setup:  func(t *testing.T, w *world) { w.bindFirst(t); w.deletePod(t) },
			rounds: 2,
			want:   want{writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}},
		},
		"RetainInvalid": {
			reason: "A retain that is neither \"true\" nor \"false\" is said on the Pod; no PodAddress is made.",
			objs:   []client.Object{ns, portPool(), tkePod(podIP, podannotation.TKEAnnotationRetain, "forever")},
			want:   want{events: []string{"Warning InvalidAddressRequest *v1.Pod/pod-0"}},
		},
		"Isolated": {
			reason: "An isolated Pod keeps its ports and registers no target.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationIsolated, "true")},
			want:   want{state: v1alpha1.StateIsolated, events: []string{"Normal AddressIsolated *v1.Pod/pod-0"}, allocated: 1},
		},
		"MissingPool": {
			reason: "A Pod asking for a pool that does not exist waits for it.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationPorts, "80 nopool")},
			want:   want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StatePoolNotFound},
		},
		"NoFreePort": {
			reason: "A Pod asking for more ports than the pool has waits, and says so; the ports it got are recorded, so held.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationPorts, "80 web; 81 web; 82 web")},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateNoPortAvailable,
				events: []string{"Warning NoPortAvailable *v1.Pod/pod-0"}, allocated: 2},
		},
		"NoFreePortWriteFails": {
			reason: "When the status that records the ports got fails, they go back to the pool (allocation.Reservation).",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationPorts, "80 web; 81 web; 82 web")},
			funcs:  failStatus,
			want:   want{err: "boom", events: []string{"Warning NoPortAvailable *v1.Pod/pod-0"}},
		},
		"InvalidRequest": {
			reason: "A malformed request is said on the Pod; no PodAddress is made.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationStrategy, "sideways")},
			want:   want{events: []string{"Warning InvalidAddressRequest *v1.Pod/pod-0"}},
		},
		"StatusWriteFails": {
			reason: "A status write that fails to record a new allocation leaves no slot held and nothing registered.",
			objs:   []client.Object{ns, pod(podIP)},
			funcs:  failStatus,
			setup: func(t *testing.T, w *world) {
				// The pool appears after the PodAddress waited for it.
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				if err := w.kube.Create(context.Background(), portPool()); err != nil {
					t.Fatal(err)
				}
			},
			want: want{err: "boom", state: v1alpha1.StatePoolNotFound},
		},
		"CreateFails": {
			reason: "A PodAddress that cannot be created holds no slot.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			funcs: func(armed *atomic.Bool) interceptor.Funcs {
				return interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*v1alpha1.PodAddress); ok && armed.Load() {
						return errBoom
					}
					return c.Create(ctx, obj, opts...)
				}}
			},
			want: want{err: "cannot create PodAddress: boom"},
		},
		"GetFails": {
			reason: "A Pod that cannot be read is an error, and nothing is done.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			funcs: func(armed *atomic.Bool) interceptor.Funcs {
				return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*corev1.Pod); ok && armed.Load() {
						return errBoom
					}
					return c.Get(ctx, k, obj, opts...)
				}}
			},
			want: want{err: "boom", allocated: -1},
		},
		"CloudFails": {
			reason: "A registration the cloud refuses is the reconcile's error; the PodAddress keeps its record and slot.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup:  func(_ *testing.T, w *world) { w.cloud.Errs[lb1] = errBoom },
			want:   want{err: "boom", state: v1alpha1.StateAllocated, allocated: 1},
		},
		"CloudBusy": {
			reason: "A load balancer busy with a task is no error: the reconcile comes back later.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup: func(_ *testing.T, w *world) {
				w.cloud.Errs[lb1] = sdkerrors.NewTencentCloudSDKError("FailedOperation.ResourceInOperating", "busy", "req")
			},
			want: want{res: reconcile.Result{RequeueAfter: time.Second}, allocated: 1},
		},
		"NoLongerAsks": {
			reason: "A Pod that no longer asks loses its addresses: targets deregistered, PodAddress gone.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				p := &corev1.Pod{}
				if err := w.kube.Get(context.Background(), key, p); err != nil {
					t.Fatal(err)
				}
				p.Annotations = nil
				if err := w.kube.Update(context.Background(), p); err != nil {
					t.Fatal(err)
				}
			},
			rounds: 2,
			want:   want{writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}},
		},
		"PoolOfAnotherNamespace": {
			reason: "A pool of another namespace that does not serve the Pod's is refused before anything is allocated.",
			objs:   []client.Object{ns, portPool(), sharedPool(), pod(podIP, podannotation.AnnotationPorts, "80 shared/web")},
			want:   want{state: v1alpha1.StatePoolNotAllowed, events: []string{"Warning PoolNotAllowed *v1.Pod/pod-0"}},
		},
		"UnknownPortName": {
			reason: "A request for a container port name the Pod does not declare is Invalid, naming the port, and said on the Pod; nothing is allocated.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationPorts, "voice web")},
			want:   want{state: v1alpha1.StateInvalid, message: "voice", events: []string{"Warning InvalidAddressRequest *v1.Pod/pod-0"}},
		},
		"Policy": {
			reason: "A Pod without annotations that a PodAddressPolicy selects gets the policy's ports, the PodAddress naming the policy.",
			objs: []client.Object{ns, portPool(), func() *v1alpha1.PodAddressPolicy {
				pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "battle"}}
				pol.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "battle"}}
				pol.Spec.Ports = []v1alpha1.PortRequest{{Port: intstr.FromInt32(80), Pools: []v1alpha1.PoolRef{{Name: "web"}}}}
				return pol
			}(), func() *corev1.Pod {
				p := pod(podIP)
				p.Annotations, p.Labels = nil, map[string]string{"app": "battle"}
				return p
			}()},
			want: want{state: v1alpha1.StateBound, source: v1alpha1.PolicySource("battle"), bound: []string{"lbl-100 10.0.0.5:80"},
				writes:    []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events:    []string{"Normal AddressBound *v1.Pod/pod-0"},
				allocated: 1},
		},
		"HostPortWithoutHostPort": {
			reason: "A request the Pod cannot serve (HostPort without a hostPort) is Invalid, and said on the Pod.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationBackend, "HostPort")},
			want:   want{state: v1alpha1.StateInvalid, events: []string{"Warning InvalidAddressRequest *v1.Pod/pod-0"}},
		},
		"TooManyPorts": {
			reason: "A request over --max-ports-per-pod is Invalid, and allocates nothing.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationPorts, "80 web; 81 web")},
			setup:  func(_ *testing.T, w *world) { w.r.alloc.limits.maxPortsPerPod = 1 },
			want:   want{state: v1alpha1.StateInvalid, events: []string{"Warning InvalidAddressRequest *v1.Pod/pod-0"}},
		},
		"YoungPodWithoutIP": {
			reason: "A Pod a moment old without an IP gets its PodAddress once the IP comes (or the moment ends).",
			objs: []client.Object{ns, portPool(), func() *corev1.Pod {
				// Created now: the API server keeps whole seconds.
				p := pod("")
				p.CreationTimestamp = metav1.NewTime(now)
				return p
			}()},
			want: want{res: reconcile.Result{RequeueAfter: waitBackendQuiet}},
		},
		"PodWithoutIP": {
			reason: "A Pod without an IP for a while gets its ports, and waits for its backend.",
			objs:   []client.Object{ns, portPool(), pod("")},
			want:   want{state: v1alpha1.StateWaitBackend, allocated: 1},
		},
		"NewPodOfTheSameName": {
			reason: "A new Pod of the same name takes the PodAddress over: the old target goes, the new one is registered on the same port.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				w.createPod(t, "uid-new", "10.0.0.6")
			},
			rounds: 3,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.6:80"}, allocated: 1,
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80", "RegisterTargets lb-1 lbl-100//10.0.0.6:80"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"TakeOverWriteFails": {
			reason: "A new Pod of the same name whose PodAddress cannot be updated is an error; the old record, target and slot stay for the next try.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			funcs: func(armed *atomic.Bool) interceptor.Funcs {
				return interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if _, ok := obj.(*v1alpha1.PodAddress); ok && armed.Load() {
						return errBoom
					}
					return c.Update(ctx, obj, opts...)
				}}
			},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				w.createPod(t, "uid-new", "10.0.0.6")
			},
			want: want{err: "cannot update PodAddress for the new Pod: boom", state: v1alpha1.StateBound,
				bound: []string{"lbl-100 10.0.0.5:80"}, allocated: 1},
		},
		"HeldTakenOver": {
			reason: "A held binding is taken over by a new Pod of the same name, which is bound to the same port.",
			objs:   []client.Object{ns, portPool(), pod(podIP, podannotation.AnnotationKeepDuration, "5m")},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.createPod(t, "uid-new", "10.0.0.6", podannotation.AnnotationKeepDuration, "5m")
			},
			rounds: 3,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.6:80"}, allocated: 1,
				writes: []string{"RegisterTargets lb-1 lbl-100//10.0.0.6:80"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"PodIPChanged": {
			reason: "A Pod whose IP changed: the old target is deregistered before the new one is registered.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.setPodIP(t, "10.0.0.6")
			},
			rounds: 2,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.6:80"}, allocated: 1,
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80", "RegisterTargets lb-1 lbl-100//10.0.0.6:80"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"DeregistrationFails": {
			reason: "A deleted PodAddress whose targets cannot be deregistered keeps its finalizer and its slot.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				w.cloud.Errs[lb1] = errBoom
			},
			rounds: 2,
			want:   want{err: "boom", state: v1alpha1.StateBound, deleting: true, bound: []string{"lbl-100 10.0.0.5:80"}, allocated: 1},
		},
		"NotSealedYet": {
			reason: "Nothing acts until the records written before seals are sealed.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup:  func(_ *testing.T, w *world) { w.r.records.seal = seal.New([]byte("key"), false) },
			want:   want{res: reconcile.Result{RequeueAfter: sealWait}, allocated: -1},
		},
		"ForgedRecordOfALivePod": {
			reason: "A status the provider did not seal is ignored and said so: its target is not touched, and the Pod is bound anew.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.cloud.SetTargets(lb1, &clbsdk.ListenerBackend{ListenerId: clb.Ptr("lbl-other"), Protocol: clb.Ptr("TCP"), Port: clb.Ptr(int64(300))})
				if _, err := w.cloud.RegisterTargets(context.Background(), lb1, []clb.Target{{ListenerID: listenerOf(101), EniIP: "10.9.9.9", Port: 80}}); err != nil {
					t.Fatal(err)
				}
				w.forge(t, func(pa *v1alpha1.PodAddress) { pa.Status.Bindings = []v1alpha1.PortBinding{foreign()} })
			},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.5:80", "lbl-101 10.9.9.9:80"}, allocated: 1,
				writes: []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events: []string{"Warning RecordsIgnored *v1alpha1.PodAddress/pod-0", "Normal AddressBound *v1.Pod/pod-0"}},
		},
		"ForgedRecordOfAPodGone": {
			reason: "A forged record of a PodAddress whose Pod is gone takes no slot, and never makes the provider deregister someone else's target.",
			objs:   []client.Object{ns, portPool()},
			setup: func(t *testing.T, w *world) {
				pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: podName, Finalizers: []string{Finalizer}}}
				pa.Spec.PodUID = "uid-gone"
				if err := w.kube.Create(context.Background(), pa); err != nil {
					t.Fatal(err)
				}
				if _, err := w.cloud.RegisterTargets(context.Background(), lb1, []clb.Target{{ListenerID: listenerOf(101), EniIP: "10.9.9.9", Port: 80}}); err != nil {
					t.Fatal(err)
				}
				w.forge(t, func(pa *v1alpha1.PodAddress) {
					pa.Status.State = v1alpha1.StateBound
					pa.Status.Bindings = []v1alpha1.PortBinding{foreign()}
				})
			},
			rounds: 2,
			// Each read of the forged record says so.
			want: want{bound: []string{"lbl-101 10.9.9.9:80"},
				events: []string{"Warning RecordsIgnored *v1alpha1.PodAddress/pod-0", "Warning RecordsIgnored *v1alpha1.PodAddress/pod-0"}},
		},
		"EIPNotGranted": {
			reason: "An EIP no EIPGrant covers is refused, and said on the Pod; no port is allocated.",
			objs: []client.Object{ns, portPool(), func() *corev1.Pod {
				// An EIP instead of ports.
				p := pod(podIP, podannotation.AnnotationEIP, "true")
				delete(p.Annotations, podannotation.AnnotationPorts)
				return p
			}()},
			// Looked at again after a while, besides the grants' watch.
			want: want{res: reconcile.Result{RequeueAfter: time.Minute}, state: v1alpha1.StateNotGranted, events: []string{"Warning EIPNotGranted *v1.Pod/pod-0"}},
		},
		"PendingGivenBack": {
			reason: "A Pod that has not run on a node past --pending-hold gives its ports in pools of other namespaces back: targets deregistered, Pending.",
			objs:   []client.Object{ns, portPool(), openPool(), youngPod(podannotation.AnnotationPorts, "80 shared/web")},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.now = now.Add(DefaultPendingHold)
			},
			want: want{state: v1alpha1.StatePending, message: "pools of other namespaces (shared/web) are given back",
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"}},
		},
		"PendingHeldWhileYoung": {
			reason: "Within --pending-hold the ports stay, and the reconcile comes back when it ends.",
			objs:   []client.Object{ns, portPool(), openPool(), youngPod(podannotation.AnnotationPorts, "80 shared/web")},
			setup:  func(t *testing.T, w *world) { w.bindFirst(t) },
			want: want{res: reconcile.Result{RequeueAfter: DefaultPendingHold - time.Minute}, state: v1alpha1.StateBound,
				bound: []string{"lbl-100 10.0.0.5:80"}},
		},
		"HeldPoolNoLongerServes": {
			reason: "Held ports in a pool that no longer serves the namespace are released at once, not kept for a Pod that could not use them.",
			objs:   []client.Object{ns, portPool(), openPool(), onNode(pod(podIP, podannotation.AnnotationPorts, "80 shared/web", podannotation.AnnotationKeepDuration, "5m"))},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.deletePod(t)
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				if pa := w.podAddress(t); pa == nil || pa.Status.State != v1alpha1.StateHeld {
					t.Fatalf("setup: the PodAddress is not Held: %+v", pa)
				}
				w.closePool(t)
			},
			rounds: 2,
			want:   want{},
		},
		"LoadBalancerDraining": {
			reason: "A binding on a load balancer that left its pool (draining) is deregistered and moves; with no other, the Pod waits for a port.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				pp := &clbv1alpha1.PortPool{}
				if err := w.kube.Get(context.Background(), types.NamespacedName{Namespace: ns.Name, Name: "web"}, pp); err != nil {
					t.Fatal(err)
				}
				pp.Status.AtProvider.LoadBalancers[0].State = clbv1alpha1.PoolLBDraining
				if err := w.kube.Status().Update(context.Background(), pp); err != nil {
					t.Fatal(err)
				}
			},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateNoPortAvailable,
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events: []string{"Normal AddressMoved *v1.Pod/pod-0", "Warning NoPortAvailable *v1.Pod/pod-0"}},
		},
		"IsolatedOnceBound": {
			reason: "A bound Pod isolated: its target is deregistered, its port kept.",
			objs:   []client.Object{ns, portPool(), pod(podIP)},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.annotatePod(t, podannotation.AnnotationIsolated, "true")
			},
			rounds: 2,
			want: want{state: v1alpha1.StateIsolated, allocated: 1, writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events: []string{"Normal AddressIsolated *v1.Pod/pod-0"}},
		},
		"AdmittedThenCreated": {
			reason: "The Pod admitted is created: it takes its PodAddress over and is bound to the port allocated at admission.",
			objs:   []client.Object{ns, portPool()},
			setup: func(t *testing.T, w *world) {
				w.admit(t, now.Add(30*time.Second))
				w.createPod(t, podUID, podIP)
			},
			rounds: 2,
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.5:80"}, allocated: 1,
				writes: []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"EIPWithoutVPC": {
			reason: "An EIP a grant covers, on a provider without a VPC client, waits Pending and says why; nothing is allocated.",
			objs:   []client.Object{ns, portPool(), grant(), eipPod("true")},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StatePending,
				message: "runs without a VPC client"},
		},
		"EIPFellBack": {
			reason: "A PodAddress recorded as fallen back from an EIP binds ports of its fallback pool instead, and says so.",
			objs:   []client.Object{ns, portPool(), eipPod("fallbackPool=web")},
			setup: func(t *testing.T, w *world) {
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				pa := w.podAddress(t)
				pa.Status.EIP = &v1alpha1.EIPBinding{State: v1alpha1.EIPFallback, Reason: "quota"}
				if err := w.r.writeStatus(context.Background(), pa); err != nil {
					t.Fatal(err)
				}
			},
			want: want{state: v1alpha1.StateFallbackPort, message: "no EIP (quota)", bound: []string{"lbl-100 10.0.0.5:80"}, allocated: 1,
				writes: []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"EIPNeverReleasedNoneHad": {
			reason: "A Pod gone that asked for an EIP kept for ever but never had one holds nothing: its PodAddress goes.",
			objs:   []client.Object{ns, portPool(), eipPod("releasePolicy=Never")},
			setup: func(t *testing.T, w *world) {
				if _, err := w.reconcile(t); err != nil {
					t.Fatal(err)
				}
				w.deletePod(t)
			},
			rounds: 2,
			want:   want{},
		},
		"PoolNotAllowedOnceBound": {
			reason: "A pool of another namespace that stops serving it: the binding's target is deregistered, its port returned, and the Pod told why.",
			objs:   []client.Object{ns, portPool(), openPool(), onNode(pod(podIP, podannotation.AnnotationPorts, "80 shared/web"))},
			setup: func(t *testing.T, w *world) {
				w.bindFirst(t)
				w.closePool(t)
			},
			want: want{state: v1alpha1.StatePoolNotAllowed, message: "shared/web",
				writes: []string{"DeregisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events: []string{"Warning PoolNotAllowed *v1.Pod/pod-0"}},
		},
		"ProtocolNotServed": {
			reason: "A port whose protocol the pool has no listener for is Invalid before anything is allocated.",
			objs: []client.Object{ns, portPool(), func() *corev1.Pod {
				p := pod(podIP)
				p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP
				return p
			}()},
			want: want{state: v1alpha1.StateInvalid, message: "UDP", events: []string{"Warning InvalidAddressRequest *v1.Pod/pod-0"}},
		},
		"EIPGrantsUnreadable": {
			reason: "EIPGrants that cannot be listed are an error; nothing is allocated.",
			objs:   []client.Object{ns, portPool(), grant(), eipPod("true")},
			funcs: func(armed *atomic.Bool) interceptor.Funcs {
				return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					if _, ok := l.(*v1alpha1.EIPGrantList); ok && armed.Load() {
						return errBoom
					}
					return c.List(ctx, l, opts...)
				}}
			},
			want: want{err: "cannot list EIPGrants: boom"},
		},
		"HostPort": {
			reason: "The HostPort backend registers the node's IP and the container's hostPort.",
			objs: []client.Object{ns, portPool(), func() *corev1.Pod {
				p := pod(podIP, podannotation.AnnotationBackend, "HostPort")
				p.Spec.Containers[0].Ports[0].HostPort = 7000
				p.Status.HostIP = "192.168.0.9"
				return p
			}()},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 192.168.0.9:7000"}, allocated: 1,
				writes: []string{"RegisterTargets lb-1 lbl-100//192.168.0.9:7000"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"TwoPools": {
			reason: "A port asked of two pools (two load balancers, say of two ISPs) gets a binding in each, both registered.",
			objs: func() []client.Object {
				// web serves lb-1's port 100, web2 its port 101.
				web, web2 := portPool(), portPool()
				web.Spec.ForProvider.EndPort = 100
				delete(web.Status.AtProvider.LoadBalancers[0].Listeners, clbv1alpha1.ListenerKey{Protocol: "TCP", Port: 101}.String())
				web2.Name, web2.UID = "web2", "uid-pool-2"
				web2.Spec.ForProvider.StartPort = 101
				delete(web2.Status.AtProvider.LoadBalancers[0].Listeners, clbv1alpha1.ListenerKey{Protocol: "TCP", Port: 100}.String())
				return []client.Object{ns, web, web2, pod(podIP, podannotation.AnnotationPorts, "80 web,web2")}
			}(),
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.5:80", "lbl-101 10.0.0.5:80"}, allocated: 1,
				writes: []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80", "RegisterTargets lb-1 lbl-101//10.0.0.5:80"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"HostPortOnePort": {
			reason: "A bcs /hostport line marks its port only: that port registers the node's IP and hostPort, the Pod's other port its IP.",
			objs: []client.Object{ns, portPool(), func() *corev1.Pod {
				p := pod(podIP, podannotation.BCSAnnotationEnabled, "true", podannotation.BCSAnnotationPorts, "web TCP 80/hostport;web TCP 81")
				delete(p.Annotations, podannotation.AnnotationPorts)
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 7000, Protocol: corev1.ProtocolTCP}, {ContainerPort: 81, Protocol: corev1.ProtocolTCP}}
				p.Status.HostIP = "192.168.0.9"
				return p
			}()},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 192.168.0.9:7000", "lbl-101 10.0.0.5:81"}, allocated: 2,
				writes: []string{"RegisterTargets lb-1 lbl-100//192.168.0.9:7000 lbl-101//10.0.0.5:81"},
				events: []string{"Normal AddressBound *v1.Pod/pod-0"}},
		},
		"IPv6FullChain": {
			reason: "An IPv6FullChain load balancer forwards to the Pod's IPv6 address (from status.podIPs).",
			objs:   []client.Object{ns, ipv6Pool(clb.IPv6ModeFullChain), dualStackPod()},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 fd00:10::5:80"},
				writes:    []string{"RegisterTargets lb-1 lbl-100//fd00:10::5:80"},
				events:    []string{"Normal AddressBound *v1.Pod/pod-0"},
				allocated: 1},
		},
		"IPv6FullChainPodWithoutIPv6": {
			reason: "An IPv6FullChain load balancer and a Pod with no IPv6 address: the PodAddress waits in WaitBackend saying why, and nothing is registered.",
			objs:   []client.Object{ns, ipv6Pool(clb.IPv6ModeFullChain), pod(podIP)},
			want:   want{state: v1alpha1.StateWaitBackend, message: "forwards to IPv6 addresses only", allocated: 1},
		},
		"IPv6FullChainHostPort": {
			reason: "An IPv6FullChain load balancer and the HostPort backend: the node's IPv6 address (from status.hostIPs) and the hostPort.",
			objs: []client.Object{ns, ipv6Pool(clb.IPv6ModeFullChain), func() *corev1.Pod {
				p := pod(podIP, podannotation.AnnotationBackend, v1alpha1.BackendHostPort)
				p.Spec.Containers[0].Ports[0].HostPort = 7000
				p.Status.HostIP = "192.168.0.9"
				p.Status.HostIPs = []corev1.HostIP{{IP: "192.168.0.9"}, {IP: "fd00:20::9"}}
				return p
			}()},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 fd00:20::9:7000"},
				writes:    []string{"RegisterTargets lb-1 lbl-100//fd00:20::9:7000"},
				events:    []string{"Normal AddressBound *v1.Pod/pod-0"},
				allocated: 1},
		},
		"IPv6NAT64": {
			reason: "An IPv6 (NAT64) load balancer translates its IPv6 VIP to the Pod's IPv4 address.",
			objs:   []client.Object{ns, ipv6Pool(clb.IPv6ModeNAT64), dualStackPod()},
			want: want{state: v1alpha1.StateBound, bound: []string{"lbl-100 10.0.0.5:80"},
				writes:    []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80"},
				events:    []string{"Normal AddressBound *v1.Pod/pod-0"},
				allocated: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.funcs, tc.objs...)
			if tc.setup != nil {
				tc.setup(t, w)
			}
			w.armed.Store(true)
			w.events.take()
			before := len(w.cloud.Writes())
			var res reconcile.Result
			var err error
			for range max(tc.rounds, 1) {
				res, err = w.reconcile(t)
			}
			if got := fmt.Sprint(err); (tc.want.err == "") != (err == nil) || !strings.Contains(got, tc.want.err) {
				t.Errorf("\n%s\nReconcile(...): error %v, want %q", tc.reason, err, tc.want.err)
			}
			if res != tc.want.res {
				t.Errorf("\n%s\nReconcile(...): %+v, want %+v", tc.reason, res, tc.want.res)
			}
			state, deleting, message, source := "", false, "", ""
			if pa := w.podAddress(t); pa != nil {
				state, deleting, message, source = pa.Status.State, pa.DeletionTimestamp != nil, pa.Status.Message, pa.Spec.Source
				// Only a held PodAddress is released at a time: one taken
				// over, or never held, carries no releaseAt.
				if pa.Status.State != v1alpha1.StateHeld && pa.Status.ReleaseAt != nil {
					t.Errorf("\n%s\nPodAddress %s carries releaseAt %s", tc.reason, pa.Status.State, pa.Status.ReleaseAt)
				}
				if tc.want.forever && pa.Status.ReleaseAt != nil {
					t.Errorf("\n%s\nPodAddress held until %s, want no time limit", tc.reason, pa.Status.ReleaseAt)
				}
				if pa.Status.State != "" {
					if err := w.r.records.seal.Check(pa); err != nil {
						t.Errorf("\n%s\nthe status written is not sealed: %v", tc.reason, err)
					}
				}
			}
			if state != tc.want.state || deleting != tc.want.deleting {
				t.Errorf("\n%s\nPodAddress state %q (deleting %v), want %q (deleting %v)", tc.reason, state, deleting, tc.want.state, tc.want.deleting)
			}
			if tc.want.source != "" && source != tc.want.source {
				t.Errorf("\n%s\nPodAddress source %q, want %q", tc.reason, source, tc.want.source)
			}
			if !strings.Contains(message, tc.want.message) {
				t.Errorf("\n%s\nPodAddress message %q, want it to say %q", tc.reason, message, tc.want.message)
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
			if tc.want.allocated >= 0 {
				if got := w.allocated(t); got != tc.want.allocated {
					t.Errorf("\n%s\nslots allocated: %d, want %d", tc.reason, got, tc.want.allocated)
				}
			}
		})
	}
}

// TestAnswerOutlivesAFailedWrite: the binder's answer that a reconcile
// read stands until a reconcile ends well. When recording Bound fails,
// the next reconcile reads the same answer: the registration is sent
// once, not again.
func TestAnswerOutlivesAFailedWrite(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	var failed atomic.Int32
	failBound := func(*atomic.Bool) interceptor.Funcs {
		return interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if pa, ok := obj.(*v1alpha1.PodAddress); ok && pa.Status.State == v1alpha1.StateBound && failed.Add(1) == 1 {
				return errBoom
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}
	}
	w := newWorld(t, failBound, ns, portPool(), pod(podIP))
	if _, err := w.reconcile(t); err == nil || !strings.Contains(err.Error(), errBoom.Error()) {
		t.Fatalf("first reconcile: %v, want the failed write (%v)", err, errBoom)
	}
	if !w.r.cloud.binder.Idle(key) {
		t.Fatal("an operation still runs after the answer was read")
	}
	if _, err := w.reconcile(t); err != nil {
		t.Fatalf("second reconcile: %v", err)
	}
	if pa := w.podAddress(t); pa == nil || pa.Status.State != v1alpha1.StateBound {
		t.Fatalf("the PodAddress is not Bound after the retry: %+v", pa)
	}
	want := []string{"RegisterTargets lb-1 lbl-100//10.0.0.5:80"}
	if diff := cmp.Diff(want, w.cloud.Writes()); diff != "" {
		t.Errorf("cloud writes: -want, +got:\n%s", diff)
	}
}

// TestIPv6Binding: a Pod bound through an IPv6FullChain load balancer is
// told its address with the IPv6 VIP in brackets, and its binding records
// the load balancer's version and mode and the IPv6 target.
func TestIPv6Binding(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	w := newWorld(t, nil, ns, ipv6Pool(clb.IPv6ModeFullChain), dualStackPod())
	w.bindFirst(t)
	pa := w.podAddress(t)
	b := pa.Status.Bindings[0]
	if b.Address != "[fdc1:b000::1]:100" || b.AddressIPVersion != "ipv6" || b.IPv6Mode != clb.IPv6ModeFullChain || b.TargetIP != podIP6 {
		t.Errorf("binding %+v", b)
	}
	p := &corev1.Pod{}
	if err := w.kube.Get(context.Background(), key, p); err != nil {
		t.Fatal(err)
	}
	if got := p.Annotations[podannotation.AnnotationAddresses]; !strings.Contains(got, `"address":"[fdc1:b000::1]:100"`) {
		t.Errorf("the Pod's %s: %s", podannotation.AnnotationAddresses, got)
	}
}
