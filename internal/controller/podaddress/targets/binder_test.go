package targets

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pkgerrors "github.com/pkg/errors"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	providerv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
)

const (
	pool  = "team-a/web"
	lbA   = "lb-a"
	lblA  = "lbl-a"
	lblA2 = "lbl-a2"
	ip    = "10.0.0.7"
)

var (
	errBoom  = errors.New("boom")
	paKey    = types.NamespacedName{Namespace: "team-a", Name: "pa"}
	errGone  = kerrors.NewNotFound(schema.GroupResource{Group: "clb", Resource: "portpools"}, "web")
	refusal  = sdkerrors.NewTencentCloudSDKError("InvalidParameter", "refused", "req")
	notFound = sdkerrors.NewTencentCloudSDKError("InvalidParameter.ListenerIdNotFound", "listener not found", "req")
)

// region is a fake region holding lb-a with listeners lbl-a and lbl-a2,
// lbl-a holding the targets bound.
func region(bound ...string) *fake.Cloud {
	c := fake.New()
	be := &clbsdk.ListenerBackend{ListenerId: clb.Ptr(lblA), Protocol: clb.Ptr("TCP"), Port: clb.Ptr(int64(100))}
	for _, b := range bound {
		be.Targets = append(be.Targets, &clbsdk.Backend{PrivateIpAddresses: []*string{clb.Ptr(b)}, Port: clb.Ptr(int64(8080))})
	}
	c.SetTargets(lbA, be)
	c.SetTargets(lbA, &clbsdk.ListenerBackend{ListenerId: clb.Ptr(lblA2), Protocol: clb.Ptr("UDP"), Port: clb.Ptr(int64(100))})
	return c
}

func bindingOn(listeners map[string]string) v1alpha1.PortBinding {
	return v1alpha1.PortBinding{Pool: pool, LoadBalancerID: lbA, ListenerIDs: listeners, TargetIP: ip, TargetPort: 8080}
}

func tcp() v1alpha1.PortBinding { return bindingOn(map[string]string{"TCP": lblA}) }

// naiveAPI is a region reached as clb.CallsNaive reaches it.
type naiveAPI struct{ API }

func (naiveAPI) Naive() bool { return true }

// taskAPI answers TaskStatus as told, whatever the region says.
type taskAPI struct {
	API
	states []clb.TaskState
	err    error
	calls  int
}

func (t *taskAPI) TaskStatus(context.Context, string) (clb.TaskState, string, error) {
	t.calls++
	if t.err != nil {
		return clb.TaskRunning, "", t.err
	}
	s := t.states[min(t.calls-1, len(t.states)-1)]
	return s, "quota", nil
}

func (t *taskAPI) Naive() bool { return true }

// describeFails fails DescribeTargets.
type describeFails struct{ API }

func (describeFails) DescribeTargets(context.Context, string, string) (*clbsdk.ListenerBackend, error) {
	return nil, errBoom
}

// refuses refuses every write with err, as the cloud refuses a listener's
// group; reads go to the region.
type refuses struct {
	API
	err error
}

func (r refuses) RegisterTargets(context.Context, string, []clb.Target) (string, error) {
	return "", r.err
}

func (r refuses) DeregisterTargets(context.Context, string, []clb.Target) (string, error) {
	return "", r.err
}

// started is a Binder on clients, started under a context the test ends.
func started(t *testing.T, clients Clients) *Binder {
	t.Helper()
	b := NewBinderWith(nil, clients)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return b
}

// drive runs ops for pa until the binder answers, waiting for each wake.
func drive(t *testing.T, b *Binder, ops []Op) (wakes int, err error) {
	t.Helper()
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: paKey.Namespace, Name: paKey.Name}}
	for range 5 {
		if a := b.Send(context.Background(), pa, ops); a.State != Running {
			// A client that cannot be built fails Send before anything
			// is sent: nothing to wait for.
			return wakes, a.Err
		}
		select {
		case ev := <-b.Wake():
			if ev.Object.GetNamespace() != paKey.Namespace || ev.Object.GetName() != paKey.Name {
				t.Fatalf("woke %s/%s, want %s", ev.Object.GetNamespace(), ev.Object.GetName(), paKey)
			}
			wakes++
		case <-time.After(10 * time.Second):
			t.Fatal("the binder never answered")
		}
	}
	t.Fatal("the binder answered but Send never said done")
	return 0, nil
}

// bound lists the targets the region's listener holds, as ip:port.
func bound(t *testing.T, c API, listener string) []string {
	t.Helper()
	be, err := c.DescribeTargets(context.Background(), lbA, listener)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range be.Targets {
		out = append(out, String(clb.Target{EniIP: *b.PrivateIpAddresses[0], Port: *b.Port}))
	}
	return out
}

func TestRun(t *testing.T) {
	type want struct {
		err    string // a substring; "" for success
		wakes  int
		writes []string
		a, a2  []string // targets on lbl-a and lbl-a2 after
	}
	cases := map[string]struct {
		reason  string
		cloud   *fake.Cloud
		api     func(*fake.Cloud) API
		clients func(c API) Clients
		ops     []Op
		want    want
	}{
		"Register": {
			reason: "A registration is sent in the background, wakes the PodAddress, and binds the targets of every listener of the binding.",
			cloud:  region(),
			ops:    Register([]v1alpha1.PortBinding{bindingOn(map[string]string{"TCP": lblA, "UDP": lblA2})}),
			want: want{wakes: 1, writes: []string{"RegisterTargets lb-a lbl-a//10.0.0.7:8080 lbl-a2//10.0.0.7:8080"},
				a: []string{"10.0.0.7:8080"}, a2: []string{"10.0.0.7:8080"}},
		},
		"Deregister": {
			reason: "A deregistration removes the recorded targets and leaves the others.",
			cloud:  region(ip, "10.0.0.8"),
			ops:    Deregister([]v1alpha1.PortBinding{tcp()}),
			want:   want{wakes: 1, writes: []string{"DeregisterTargets lb-a lbl-a//10.0.0.7:8080"}, a: []string{"10.0.0.8:8080"}},
		},
		"NothingToDo": {
			reason: "No op is done at once, without a cloud call.",
			cloud:  region(),
			ops:    Deregister([]v1alpha1.PortBinding{{Pool: pool, LoadBalancerID: lbA, ListenerIDs: map[string]string{"TCP": lblA}}}),
			want:   want{},
		},
		"DeregisterFromAPoolGone": {
			reason: "A deregistration from a pool that is gone is dropped: its listeners went with it.",
			cloud:  region(ip),
			clients: func(API) Clients {
				return func(context.Context, string, string) (API, error) { return nil, errGone }
			},
			ops:  Deregister([]v1alpha1.PortBinding{tcp()}),
			want: want{a: []string{"10.0.0.7:8080"}},
		},
		"RegisterOnAPoolGone": {
			reason: "A registration on a pool that is gone is an error, with no cloud call.",
			cloud:  region(),
			clients: func(API) Clients {
				return func(context.Context, string, string) (API, error) { return nil, errGone }
			},
			ops:  Register([]v1alpha1.PortBinding{tcp()}),
			want: want{err: "not found"},
		},
		"ClientFails": {
			reason: "A client that cannot be built fails even a deregistration.",
			cloud:  region(ip),
			clients: func(API) Clients {
				return func(context.Context, string, string) (API, error) { return nil, errBoom }
			},
			ops:  Deregister([]v1alpha1.PortBinding{tcp()}),
			want: want{err: "boom", a: []string{"10.0.0.7:8080"}},
		},
		"CloudFails": {
			reason: "A write the cloud fails is the answer, once.",
			cloud: func() *fake.Cloud {
				c := region()
				c.Errs[lbA] = errBoom
				return c
			}(),
			ops:  Register([]v1alpha1.PortBinding{tcp()}),
			want: want{err: "boom", wakes: 1},
		},
		"RefusedButAlreadyBound": {
			reason: "A registration refused while the target is already bound (registered before a restart) is success.",
			cloud:  region(ip),
			api:    func(c *fake.Cloud) API { return refuses{API: c, err: refusal} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{wakes: 1, a: []string{"10.0.0.7:8080"}},
		},
		"RefusedAndNotBound": {
			reason: "A registration refused while the target is not bound is the refusal.",
			cloud:  region(),
			api:    func(c *fake.Cloud) API { return refuses{API: c, err: refusal} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{err: "refused", wakes: 1},
		},
		"RefusedAndUnreadable": {
			reason: "A refusal whose state cannot be read is the refusal.",
			cloud:  region(ip),
			api:    func(c *fake.Cloud) API { return describeFails{refuses{API: c, err: refusal}} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{err: "refused", wakes: 1, a: []string{"10.0.0.7:8080"}},
		},
		"OtherErrorNotConfirmed": {
			reason: "An error that is no refusal is not checked against the cloud's state.",
			cloud:  region(ip),
			api:    func(c *fake.Cloud) API { return refuses{API: c, err: errBoom} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{err: "boom", wakes: 1, a: []string{"10.0.0.7:8080"}},
		},
		"DeregisterFromAListenerGone": {
			reason: "A deregistration refused because the listener is gone is success: its targets went with it.",
			cloud:  region(),
			api:    func(c *fake.Cloud) API { return refuses{API: c, err: notFound} },
			ops:    Deregister([]v1alpha1.PortBinding{bindingOn(map[string]string{"TCP": "lbl-gone"})}),
			want:   want{wakes: 1},
		},
		"NaiveRegister": {
			reason: "In the naive mode the reconcile sends the op itself and waits for its task: done at once, without a wake.",
			cloud:  region(),
			api:    func(c *fake.Cloud) API { return naiveAPI{c} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{writes: []string{"RegisterTargets lb-a lbl-a//10.0.0.7:8080"}, a: []string{"10.0.0.7:8080"}},
		},
		"NaiveConfirmed": {
			reason: "In the naive mode a refusal the cloud's state answers has no task to wait for.",
			cloud:  region(ip),
			api:    func(c *fake.Cloud) API { return &taskAPI{API: refuses{API: c, err: refusal}, err: errBoom} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{a: []string{"10.0.0.7:8080"}},
		},
		"NaiveRefused": {
			reason: "In the naive mode a refusal is returned at once.",
			cloud:  region(),
			api:    func(c *fake.Cloud) API { return naiveAPI{refuses{API: c, err: errBoom}} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{err: "boom"},
		},
		"NaiveTaskFails": {
			reason: "In the naive mode a task that fails is an error naming its load balancer.",
			cloud:  region(),
			api:    func(c *fake.Cloud) API { return &taskAPI{API: c, states: []clb.TaskState{clb.TaskFailed}} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{err: "on load balancer lb-a failed: quota", writes: []string{"RegisterTargets lb-a lbl-a//10.0.0.7:8080"}, a: []string{"10.0.0.7:8080"}},
		},
		"NaiveTaskPolled": {
			reason: "In the naive mode a running task is polled until it ends.",
			cloud:  region(),
			api: func(c *fake.Cloud) API {
				return &taskAPI{API: c, states: []clb.TaskState{clb.TaskRunning, clb.TaskSucceeded}}
			},
			ops:  Register([]v1alpha1.PortBinding{tcp()}),
			want: want{writes: []string{"RegisterTargets lb-a lbl-a//10.0.0.7:8080"}, a: []string{"10.0.0.7:8080"}},
		},
		"NaiveTaskForgotten": {
			reason: "In the naive mode a task the cloud no longer knows is taken as ended.",
			cloud:  region(),
			api:    func(c *fake.Cloud) API { return &taskAPI{API: c, err: notFound} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{writes: []string{"RegisterTargets lb-a lbl-a//10.0.0.7:8080"}, a: []string{"10.0.0.7:8080"}},
		},
		"NaiveTaskUnreadable": {
			reason: "In the naive mode a task whose state cannot be read is an error.",
			cloud:  region(),
			api:    func(c *fake.Cloud) API { return &taskAPI{API: c, err: errBoom} },
			ops:    Register([]v1alpha1.PortBinding{tcp()}),
			want:   want{err: "boom", writes: []string{"RegisterTargets lb-a lbl-a//10.0.0.7:8080"}, a: []string{"10.0.0.7:8080"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var api API = tc.cloud
			if tc.api != nil {
				api = tc.api(tc.cloud)
			}
			var asked []string
			clients := func(_ context.Context, p, r string) (API, error) {
				asked = append(asked, p+"@"+r)
				return api, nil
			}
			if tc.clients != nil {
				clients = tc.clients(api)
			}
			b := started(t, clients)
			wakes, err := drive(t, b, tc.ops)
			if got := errString(err); (tc.want.err == "") != (got == "") || !strings.Contains(got, tc.want.err) {
				t.Errorf("\n%s\nRun(...): error %q, want %q", tc.reason, got, tc.want.err)
			}
			if wakes != tc.want.wakes {
				t.Errorf("\n%s\nRun(...): %d wakes, want %d", tc.reason, wakes, tc.want.wakes)
			}
			if diff := cmp.Diff(tc.want.writes, tc.cloud.Writes()); diff != "" {
				t.Errorf("\n%s\nRun(...): -want writes, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.a, bound(t, tc.cloud, lblA)); diff != "" {
				t.Errorf("\n%s\nRun(...): -want targets on lbl-a, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.a2, bound(t, tc.cloud, lblA2)); diff != "" {
				t.Errorf("\n%s\nRun(...): -want targets on lbl-a2, +got:\n%s", tc.reason, diff)
			}
			for _, a := range asked {
				if a != pool+"@" {
					t.Errorf("\n%s\nRun(...) asked for the client of %s, want %s in the config's region", tc.reason, a, pool)
				}
			}
			if !b.Idle(paKey) {
				t.Errorf("\n%s\nan operation still runs after the answer", tc.reason)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestSendRetriesAfterAFailure: a failed answer is reported once; the
// next Send of the same ops sends them again. Once the cloud accepts
// them, the answer stands while no reconcile that read it has ended well
// (a failed status write reads it again), and Settle drops it, after
// which the same ops (a repair) are sent anew.
func TestSendRetriesAfterAFailure(t *testing.T) {
	c := region()
	c.Errs[lbA] = errBoom
	b := started(t, func(context.Context, string, string) (API, error) { return c, nil })
	ops := Register([]v1alpha1.PortBinding{tcp()})
	if _, err := drive(t, b, ops); !errors.Is(err, errBoom) {
		t.Fatalf("first try: %v, want %v", err, errBoom)
	}
	c.Errs[lbA] = nil
	if wakes, err := drive(t, b, ops); err != nil || wakes != 1 {
		t.Fatalf("retry: %d wakes, %v; want one wake and success", wakes, err)
	}
	// Read, not settled: the reconcile that read it failed.
	if wakes, err := drive(t, b, ops); err != nil || wakes != 0 {
		t.Fatalf("answered again: %d wakes, %v; want the kept answer", wakes, err)
	}
	if got := len(c.Writes()); got != 1 {
		t.Fatalf("%d writes before Settle, want 1: %v", got, c.Writes())
	}
	b.Settle(paKey)
	if wakes, err := drive(t, b, ops); err != nil || wakes != 1 {
		t.Fatalf("after Settle: %d wakes, %v; want the ops sent again", wakes, err)
	}
	if got := len(c.Writes()); got != 2 {
		t.Errorf("%d writes after Settle, want 2: %v", got, c.Writes())
	}
}

// TestSettleKeepsAnUnreadAnswer: an answer that arrives while the
// reconcile that sent the ops is still running is not that reconcile's to
// settle; the reconcile it wakes reads it, and nothing is sent twice.
func TestSettleKeepsAnUnreadAnswer(t *testing.T) {
	c := region()
	b := started(t, func(context.Context, string, string) (API, error) { return c, nil })
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: paKey.Namespace, Name: paKey.Name}}
	ops := Register([]v1alpha1.PortBinding{tcp()})
	if a := b.Send(context.Background(), pa, ops); a.State != Running {
		t.Fatalf("Send = %+v, want Running", a)
	}
	select {
	case <-b.Wake():
	case <-time.After(10 * time.Second):
		t.Fatal("the binder never answered")
	}
	b.Settle(paKey) // the sending reconcile ends after the answer came
	if a := b.Send(context.Background(), pa, ops); a.State != Done {
		t.Fatalf("Send after an early Settle = %+v; want the unread answer (Done)", a)
	}
	if got := len(c.Writes()); got != 1 {
		t.Errorf("%d writes, want 1: %v", got, c.Writes())
	}
}

// TestRunBeforeStart: ops asked for before the manager starts the binder
// wait for Start, then run and wake their PodAddress.
func TestRunBeforeStart(t *testing.T) {
	c := region()
	b := NewBinderWith(nil, func(context.Context, string, string) (API, error) { return c, nil })
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: paKey.Namespace, Name: paKey.Name}}
	ops := Register([]v1alpha1.PortBinding{tcp()})
	if a := b.Send(context.Background(), pa, ops); a.State != Running {
		t.Fatalf("Send before Start: %+v; want to wait", a)
	}
	if b.Idle(paKey) {
		t.Error("the queued op is not counted as running")
	}
	if len(c.Writes()) != 0 {
		t.Fatalf("sent before Start: %v", c.Writes())
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- b.Start(ctx) }()
	select {
	case <-b.Wake():
	case <-time.After(10 * time.Second):
		t.Fatal("the queued op never ran")
	}
	if a := b.Send(context.Background(), pa, ops); a.State != Done {
		t.Errorf("Send after the answer: %+v; want done", a)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	// Once stopped, nothing new starts.
	b.Settle(paKey)
	if a := b.Send(context.Background(), pa, ops); a.State != Running {
		t.Errorf("Send after Stop: %+v; want to wait (nothing sent)", a)
	}
	if got := c.Writes(); len(got) != 1 {
		t.Errorf("writes = %v, want the one registration", got)
	}
	if !b.NeedLeaderElection() {
		t.Error("the binder runs without the leader election")
	}
}

// TestNotifyAfterStop: a wake with nobody reading any more returns once
// its context ends rather than blocking.
func TestNotifyAfterStop(t *testing.T) {
	ch := make(chan event.TypedGenericEvent[*v1alpha1.PodAddress])
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { Notify(ctx, ch, paKey); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Notify blocked after its context ended")
	}
}

// TestClientFor: the binder builds the client of a pool's provider config
// in the region asked for; a missing pool is an error its Run tells apart.
func TestClientFor(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.AddToScheme, clbv1alpha1.AddToScheme, providerv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	pp.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: providerv1alpha1.ProviderConfigKind, Name: "default"}
	pc := &providerv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "default"}}
	pc.Spec.Region = "ap-guangzhou"
	pc.Spec.Credentials.SecretRef.Name = "creds"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "creds"},
		Data: map[string][]byte{"secretId": []byte("AKID"), "secretKey": []byte("key")}}
	kube := kfake.NewClientBuilder().WithScheme(s).WithObjects(pp, pc, secret).Build()
	b := NewBinder(kube, clb.NewPool(clb.Options{}))
	ctx := context.Background()

	for _, r := range []string{"", "ap-shanghai"} {
		c, err := b.cloud(ctx, pool, r)
		if err != nil {
			t.Fatalf("clients(%s, %q) = %v", pool, r, err)
		}
		if cc, ok := c.(*clb.Client); !ok || cc == nil || naive(c) {
			t.Errorf("clients(%s, %q) = %T %v, want the pool's batching *clb.Client", pool, r, c, c)
		}
	}
	c, err := b.cloud(ctx, "team-a/missing", "")
	if c != nil || !kerrors.IsNotFound(pkgerrors.Cause(err)) {
		t.Errorf("clients of a missing pool = %#v, %v; want a nil API and a not-found error", c, err)
	}
	if _, err := NewBinderWith(kube, nil).ClientFor(ctx, pool, ""); err == nil {
		t.Error("ClientFor without a pool of clients: no error")
	}
}

// TestHelpers: the small functions the reconcile and the audit share.
func TestHelpers(t *testing.T) {
	b := tcp()
	ops := Register([]v1alpha1.PortBinding{b})
	if diff := cmp.Diff([]clb.Target{{ListenerID: lblA, EniIP: ip, Port: 8080}}, ops[0].Targets()); diff != "" {
		t.Errorf("Targets: -want, +got:\n%s", diff)
	}
	cvm := v1alpha1.PortBinding{ListenerIDs: map[string]string{"TCP": lblA}, InstanceID: "ins-1", TargetPort: 80}
	ts := Of(cvm)
	if len(ts) != 1 || ts[0].InstanceID != "ins-1" || ts[0].EniIP != "" || String(ts[0]) != "ins-1:80" {
		t.Errorf("Of(CVM binding) = %+v (%s), want the instance ins-1:80", ts, String(ts[0]))
	}
	if !Recorded(b) || !Recorded(cvm) {
		t.Error("a binding with a target is not recorded")
	}
	Clear(&b)
	if Recorded(b) || b.TargetPort != 0 {
		t.Errorf("Clear left %+v", b)
	}
	bes := []*clbsdk.Backend{
		nil,
		{Port: clb.Ptr(int64(80)), InstanceId: clb.Ptr("ins-2")},
		{Port: clb.Ptr(int64(80)), InstanceId: clb.Ptr("ins-1")},
		{Port: clb.Ptr(int64(8080)), PrivateIpAddresses: []*string{nil, clb.Ptr(ip)}},
	}
	if got := FindBackend(bes, ts[0]); got != bes[2] {
		t.Errorf("FindBackend(instance) = %v, want the backend of ins-1", got)
	}
	eni := clb.Target{ListenerID: lblA, EniIP: ip, Port: 8080}
	if got := FindBackend(bes, eni); got != bes[3] {
		t.Errorf("FindBackend(ENI) = %v, want the backend of %s", got, ip)
	}
	if got := FindBackend(bes, clb.Target{EniIP: "10.9.9.9", Port: 8080}); got != nil {
		t.Errorf("FindBackend(absent) = %v, want none", got)
	}
	if !slices.IsSortedFunc([]clb.Target{{ListenerID: "a"}, {ListenerID: "a", LocationID: "l"}, {ListenerID: "b"}}, Compare) {
		t.Error("Compare does not order by listener, then rule")
	}
}
