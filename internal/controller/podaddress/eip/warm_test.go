package eip

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc/fake"
)

// warmPolicy is policy ns/web asking for EIPs of 10 Mbps, warm of them.
func warmPolicy(warm *int32) *v1alpha1.PodAddressPolicy {
	p := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "web"}}
	p.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	p.Spec.EIP, p.Spec.EIPWarm = bw10(), warm
	return p
}

// pooled is an EIP of warm pool ns/web in the cloud.
func pooled(id, status string, bw int64) *vpc.Address {
	ad := warmEIP(id, bw)
	ad.Status = status
	if status == vpc.StatusBindENI {
		ad.ENIID, ad.PrivateIP = eni, podIP
	}
	return &ad
}

func TestRefill(t *testing.T) {
	const pool = "ns/web"
	recording := holding("pod-3", "g")
	recording.Status.EIP.AddressID = "w3"
	standard := func(c *fake.Cloud) {
		c.Addresses["w1"] = pooled("w1", vpc.StatusUnbind, 10)
		c.Addresses["w2"] = pooled("w2", vpc.StatusUnbind, 20) // the policy asked for 20 before
		c.Addresses["w3"] = pooled("w3", vpc.StatusUnbind, 10) // a PodAddress records it
		c.Addresses["w4"] = pooled("w4", vpc.StatusBindENI, 10)
		c.Addresses["w5"] = pooled("w5", vpc.StatusCreating, 10)
		c.Addresses["w6"] = pooled("w6", vpc.StatusUnbind, 10)
		c.Addresses["w7"] = pooled("w7", vpc.StatusUnbind, 10) // this process handed it out
	}

	type want struct {
		err     string
		free    []string // the pool's free EIPs after
		counted *int32   // the pool's warm count under the grant; nil for none
		writes  []string
	}
	cases := map[string]struct {
		reason    string
		policy    *v1alpha1.PodAddressPolicy
		grant     *v1alpha1.EIPGrant // nil for none
		kubeFuncs interceptor.Funcs
		apiFuncs  interceptor.Funcs
		cloud     func(*fake.Cloud)
		errs      map[string]error
		clientErr error
		// known pools: the warmer kept a pool for the policy before, counted
		// under grant g at n.
		known bool
		want  want
	}{
		"Fill": {
			reason: "An empty pool is filled to eipWarm in one call, with the policy's attributes and the pool's tag; the new EIPs are free at once.",
			policy: warmPolicy(ptr.To[int32](2)),
			grant:  grant(10, 5),
			want: want{free: []string{"eip-1", "eip-3"}, counted: ptr.To[int32](2),
				writes: []string{"Allocate [eip-1 eip-3] warm ns/web"}},
		},
		"KeepAndRelease": {
			reason: "Free EIPs with the policy's attributes are kept up to eipWarm (one still being created too); those of other attributes or beyond it are released; those a Pod holds are left alone.",
			policy: warmPolicy(ptr.To[int32](2)),
			grant:  grant(10, 5),
			cloud:  standard,
			want:   want{free: []string{"w1", "w5"}, counted: ptr.To[int32](2), writes: []string{"Release [w2 w6]"}},
		},
		"CappedByGrant": {
			reason: "The grant's maxWarm bounds the pool, whatever the policy asks.",
			policy: warmPolicy(ptr.To[int32](5)),
			grant:  grant(10, 1),
			want:   want{free: []string{"eip-1"}, counted: ptr.To[int32](1), writes: []string{"Allocate [eip-1] warm ns/web"}},
		},
		"NotGranted": {
			reason: "A policy no grant pays for keeps no pool and nothing is sent to the cloud.",
			policy: warmPolicy(ptr.To[int32](2)),
			cloud:  standard,
		},
		"NoLongerGranted": {
			reason: "A pool whose grant went is emptied through the config it was paid with.",
			policy: warmPolicy(ptr.To[int32](2)),
			cloud:  func(c *fake.Cloud) { c.Addresses["w1"] = pooled("w1", vpc.StatusUnbind, 10) },
			known:  true,
			want:   want{counted: ptr.To[int32](0), writes: []string{"Release [w1]"}},
		},
		"WarmTurnedOff": {
			reason: "A policy whose eipWarm was removed has its known pool emptied.",
			policy: warmPolicy(nil),
			grant:  grant(10, 5),
			cloud:  func(c *fake.Cloud) { c.Addresses["w1"] = pooled("w1", vpc.StatusUnbind, 10) },
			known:  true,
			want:   want{counted: ptr.To[int32](0), writes: []string{"Release [w1]"}},
		},
		"NeverWarm": {
			reason: "A policy without eipWarm and no pool known is not looked at: not even the statuses are read.",
			policy: warmPolicy(nil),
			grant:  grant(10, 5),
			cloud:  standard,
			// The statuses would fail, were they read.
			apiFuncs: failList(&v1alpha1.PodAddressList{}, errBoom),
		},
		"ListPoliciesError": {
			reason:    "Without the policies nothing is refilled.",
			policy:    warmPolicy(ptr.To[int32](2)),
			grant:     grant(10, 5),
			kubeFuncs: failList(&v1alpha1.PodAddressPolicyList{}, errBoom),
			want:      want{err: "cannot list PodAddressPolicies"},
		},
		"ListStatusesError": {
			reason:   "Without the statuses no EIP is known to be free, so none is handed out or released.",
			policy:   warmPolicy(ptr.To[int32](2)),
			grant:    grant(10, 5),
			cloud:    standard,
			apiFuncs: failList(&v1alpha1.PodAddressList{}, errBoom),
			want:     want{err: "cannot list PodAddresses"},
		},
		"ListGrantsError": {
			reason:    "An error choosing the grant is returned.",
			policy:    warmPolicy(ptr.To[int32](2)),
			grant:     grant(10, 5),
			kubeFuncs: failList(&v1alpha1.EIPGrantList{}, errBoom),
			want:      want{err: "cannot list EIPGrants"},
		},
		"NoSuchConfig": {
			reason: "A grant whose provider config does not exist is an error.",
			policy: warmPolicy(ptr.To[int32](2)),
			grant: func() *v1alpha1.EIPGrant {
				gr := grant(10, 5)
				gr.Spec.ProviderConfigRef = cpcRef("missing")
				return gr
			}(),
			want: want{err: "cannot get ClusterProviderConfig missing", counted: ptr.To[int32](2)},
		},
		"ClientError": {
			reason:    "A client that cannot be built is an error.",
			policy:    warmPolicy(ptr.To[int32](2)),
			grant:     grant(10, 5),
			clientErr: errBoom,
			want:      want{err: "boom", counted: ptr.To[int32](2)},
		},
		"DescribeError": {
			reason: "A pool that cannot be listed is an error.",
			policy: warmPolicy(ptr.To[int32](2)),
			grant:  grant(10, 5),
			errs:   map[string]error{"DescribeByTag": errBoom},
			want:   want{err: "cannot list warm pool ns/web", counted: ptr.To[int32](2)},
		},
		"ReleaseError": {
			reason: "Surplus that cannot be released is an error.",
			policy: warmPolicy(ptr.To[int32](2)),
			grant:  grant(10, 5),
			cloud:  standard,
			errs:   map[string]error{"Release": errBoom},
			want:   want{err: "cannot release surplus warm EIPs of ns/web", free: []string{"w1", "w5"}, counted: ptr.To[int32](2)},
		},
		"ReleaseRefusedBusy": {
			reason: "Surplus the cloud will not release now is released in a later round; the missing EIPs are allocated meanwhile.",
			policy: warmPolicy(ptr.To[int32](3)),
			grant:  grant(10, 5),
			cloud: func(c *fake.Cloud) {
				c.Addresses["w2"] = pooled("w2", vpc.StatusUnbind, 20)
			},
			errs: map[string]error{"Release": errNotPermit},
			want: want{free: []string{"eip-1", "eip-3", "eip-5"}, counted: ptr.To[int32](3), writes: []string{"Allocate [eip-1 eip-3 eip-5] warm ns/web"}},
		},
		"Quota": {
			reason: "With the account's quota reached the pool counts what it has, so that Pods may allocate within the grant.",
			policy: warmPolicy(ptr.To[int32](3)),
			grant:  grant(10, 5),
			cloud:  func(c *fake.Cloud) { c.Addresses["w1"] = pooled("w1", vpc.StatusUnbind, 10) },
			errs:   map[string]error{"Allocate": errQuota},
			want:   want{err: "warm pool ns/web: cannot allocate 2 EIPs", free: []string{"w1"}, counted: ptr.To[int32](1)},
		},
		"AllocateError": {
			reason: "An allocation that may have landed keeps the pool counted at eipWarm until the next round lists it.",
			policy: warmPolicy(ptr.To[int32](3)),
			grant:  grant(10, 5),
			cloud:  func(c *fake.Cloud) { c.Addresses["w1"] = pooled("w1", vpc.StatusUnbind, 10) },
			errs:   map[string]error{"Allocate": errBoom},
			want:   want{err: "warm pool ns/web", free: []string{"w1"}, counted: ptr.To[int32](3)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			objs := append([]client.Object{tc.policy}, config("default", "ap-default")...)
			if tc.grant != nil {
				objs = append(objs, tc.grant)
			}
			kube := newKube(t, tc.kubeFuncs, objs...)
			api := newKube(t, tc.apiFuncs, recording)
			c := fake.New()
			if tc.cloud != nil {
				tc.cloud(c)
			}
			g := NewGrants(kube, api, logging.NewNopLogger())
			w := NewWarmer(kube, api, nil, g, logging.NewNopLogger(), time.Hour)
			w.vpc = regions(&region{Cloud: c, errs: tc.errs}, tc.clientErr, nil)
			w.taken["w7"] = true
			if tc.known {
				w.free[pool] = nil
				g.warm[pool] = warmCount{grant: "g", ref: cpcRef("default"), n: 1}
			}

			err := w.refill(ctx)

			if tc.want.err == "" && err != nil {
				t.Fatalf("%s\nrefill: %v", tc.reason, err)
			}
			if tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nrefill: error %v, want one containing %q", tc.reason, err, tc.want.err)
			}
			var free []string
			for _, ad := range w.free[pool] {
				free = append(free, ad.ID)
			}
			if diff := cmp.Diff(tc.want.free, free, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nfree warm EIPs: -want +got:\n%s", tc.reason, diff)
			}
			var counted *int32
			if wc, ok := g.warm[pool]; ok {
				counted = &wc.n
			}
			if diff := cmp.Diff(tc.want.counted, counted); diff != "" {
				t.Errorf("%s\nthe pool's warm count: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.writes, c.Log(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
			// Only a round that listed every policy knows the warm counts.
			if listed := tc.want.err != "cannot list PodAddressPolicies" && tc.want.err != "cannot list PodAddresses"; g.warmKnown != listed {
				t.Errorf("%s\nwarm counts known %t, want %t", tc.reason, g.warmKnown, listed)
			}
		})
	}
}

// TestRefillAllocatesWhatItTagged: the EIPs a refill allocates carry the
// pool's tag and the policy's attributes, so that the next round finds
// and keeps them rather than allocating again.
func TestRefillAllocatesWhatItTagged(t *testing.T) {
	ctx := context.Background()
	kube := newKube(t, interceptor.Funcs{}, append([]client.Object{warmPolicy(ptr.To[int32](2)), grant(10, 5)}, config("default", "ap-default")...)...)
	c := fake.New()
	g := NewGrants(kube, kube, logging.NewNopLogger())
	w := NewWarmer(kube, kube, nil, g, logging.NewNopLogger(), time.Hour)
	w.vpc = regions(&region{Cloud: c}, nil, nil)
	for range 2 {
		if err := w.refill(ctx); err != nil {
			t.Fatal(err)
		}
		c.Settle()
	}
	if diff := cmp.Diff([]string{"Allocate [eip-1 eip-3] warm ns/web"}, c.Log()); diff != "" {
		t.Errorf("two rounds: -want +got:\n%s", diff)
	}
	if n := len(w.free["ns/web"]); n != 2 {
		t.Errorf("%d free after the second round, want 2", n)
	}
}

// TestRefillCountsWhileAllocating: while a pool's allocation is out, the
// grant counts the pool at what it will hold, so that Pods reserving at
// the same time cannot take the places the new EIPs will fill.
func TestRefillCountsWhileAllocating(t *testing.T) {
	ctx := context.Background()
	kube := newKube(t, interceptor.Funcs{}, append([]client.Object{warmPolicy(ptr.To[int32](3)), grant(4, 5)}, config("default", "ap-default")...)...)
	c := fake.New()
	c.Addresses["w1"] = pooled("w1", vpc.StatusUnbind, 10)
	g := NewGrants(kube, kube, logging.NewNopLogger())
	w := NewWarmer(kube, kube, nil, g, logging.NewNopLogger(), time.Hour)
	var during *int32
	w.vpc = regions(&region{Cloud: c, during: func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		during = ptr.To(g.warm["ns/web"].n)
	}}, nil, nil)
	if err := w.refill(ctx); err != nil {
		t.Fatal(err)
	}
	if during == nil || *during != 3 {
		t.Fatalf("the pool counted %d while its allocation was out (-1: never asked), want 3", ptr.Deref(during, -1))
	}
	// A Pod reserving meanwhile finds one place of the grant's 4 left.
	gr := grant(4, 5)
	if err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: testNS, Name: "a"}, ""); err != nil {
		t.Fatalf("the one place left: %v", err)
	}
	if err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: testNS, Name: "b"}, ""); err == nil {
		t.Error("a fifth EIP under a grant of 4")
	}
}

// logged is a logger that keeps the messages of Info.
type logged struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logged) Info(msg string, _ ...any)        { l.mu.Lock(); l.msgs = append(l.msgs, msg); l.mu.Unlock() }
func (l *logged) Debug(string, ...any)             {}
func (l *logged) WithValues(...any) logging.Logger { return l }
func (l *logged) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// listed signals each List of the list type of like, after failing it.
func listed(like client.ObjectList, calls chan<- struct{}) interceptor.Funcs {
	return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		if sameKind(l, like) {
			calls <- struct{}{}
			return errBoom
		}
		return c.List(ctx, l, opts...)
	}}
}

// TestWarmerStart: the warmer refills at once, again when kicked (a warm
// EIP was taken), logs a failed round and stops with its context.
func TestWarmerStart(t *testing.T) {
	calls := make(chan struct{}, 10)
	kube := newKube(t, listed(&v1alpha1.PodAddressPolicyList{}, calls))
	log := &logged{}
	w := NewWarmer(kube, kube, nil, NewGrants(kube, kube, log), log, time.Hour)
	if !w.NeedLeaderElection() {
		t.Error("the warmer allocates: it needs the leader")
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- w.Start(ctx) }()
	wait(t, calls, "the first round")
	w.kick <- struct{}{}
	wait(t, calls, "the round after a kick")
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not stop with its context")
	}
	if got := log.messages(); len(got) == 0 || got[0] != "Cannot refill the warm EIP pools" {
		t.Errorf("logged %q, want the failed first round logged (a round cut short by the stop may not be)", got)
	}
}

func wait(t *testing.T, calls <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-calls:
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s", what)
	}
}

func TestWarmKey(t *testing.T) {
	pa := testPA(nil, nil)
	if k, ok := WarmKey(pa); ok {
		t.Errorf("a PodAddress a Pod asked for takes from pool %q", k)
	}
	pa.Spec.Source = v1alpha1.PolicySource("web")
	if k, ok := WarmKey(pa); !ok || k != "ns/web" {
		t.Errorf("WarmKey = %q, %t; want ns/web of its policy", k, ok)
	}
}
