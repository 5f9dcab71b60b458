package eip

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc/fake"
)

func kubeScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.AddToScheme, clusterv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// newKube is a fake API server holding objs, with the EIPGrant status
// subresource and funcs' errors injected.
func newKube(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	return kfake.NewClientBuilder().WithScheme(kubeScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.EIPGrant{}).WithInterceptorFuncs(funcs).Build()
}

// config is a ClusterProviderConfig of region with its credentials.
func config(name, region string) []client.Object {
	pc := &clusterv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
	pc.Spec.Region = region
	pc.Spec.Credentials.SecretRef = clusterv1alpha1.CredentialsSecretRef{Name: "creds-" + name, Namespace: "crossplane-system"}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "creds-" + name},
		Data: map[string][]byte{"secretId": []byte("AKID"), "secretKey": []byte("key")}}
	return []client.Object{pc, s}
}

func cpcRef(name string) xpv2.ProviderConfigReference {
	return xpv2.ProviderConfigReference{Kind: clusterv1alpha1.ClusterProviderConfigKind, Name: name}
}

// grant is an EIPGrant g of namespace ns paid through ClusterProviderConfig
// "default".
func grant(maxEIPs, maxWarm int32) *v1alpha1.EIPGrant {
	gr := testGrant(maxEIPs, maxWarm)
	gr.Spec.ProviderConfigRef = cpcRef("default")
	return gr
}

// failList fails the List of the list type of like.
func failList(like client.ObjectList, err error) interceptor.Funcs {
	return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		if sameKind(l, like) {
			return err
		}
		return c.List(ctx, l, opts...)
	}}
}

func sameKind(a, b client.ObjectList) bool {
	switch a.(type) {
	case *v1alpha1.PodAddressList:
		_, ok := b.(*v1alpha1.PodAddressList)
		return ok
	case *v1alpha1.PodAddressPolicyList:
		_, ok := b.(*v1alpha1.PodAddressPolicyList)
		return ok
	case *v1alpha1.EIPGrantList:
		_, ok := b.(*v1alpha1.EIPGrantList)
		return ok
	}
	return false
}

// regions hands out one fake region for every provider config and
// remembers the region of each config asked for.
func regions(r API, err error, asked *[]string) Clients {
	return func(cfg clients.Config) (API, error) {
		if asked != nil {
			*asked = append(*asked, cfg.Region)
		}
		return r, err
	}
}

// warmEIP is a free warm EIP of pool ns/web, as the warmer lists it.
func warmEIP(id string, bw int64) vpc.Address {
	return vpc.Address{ID: id, Status: vpc.StatusUnbind, PublicIP: "198.51.100.1", ISP: "BGP", ChargeType: "TRAFFIC_POSTPAID_BY_HOUR", Bandwidth: bw,
		Tags: map[string]string{TagWarmPool: "ns/web"}}
}

func TestStart(t *testing.T) {
	ctx := context.Background()
	const pool = "ns/web"
	ref := cpcRef("default")
	fromPolicy := func(req *v1alpha1.EIPRequest) *v1alpha1.PodAddress {
		pa := testPA(req, nil)
		pa.Spec.Source = v1alpha1.PolicySource("web")
		return pa
	}
	allocating := &v1alpha1.EIPBinding{State: v1alpha1.EIPAllocating, OwnerTag: paUID, Region: "ap-x", Grant: "g", ProviderConfigRef: &ref,
		ISP: "BGP", ChargeType: "TRAFFIC_POSTPAID_BY_HOUR", Bandwidth: 10}
	takenWarm := &v1alpha1.EIPBinding{State: v1alpha1.EIPAllocating, AddressID: "eip-w", OwnerTag: paUID, WarmPool: pool, Region: "ap-x", Grant: "g",
		ProviderConfigRef: &ref, PublicIP: "198.51.100.1", ISP: "BGP", ChargeType: "TRAFFIC_POSTPAID_BY_HOUR", Bandwidth: 10}

	type want struct {
		fresh   bool
		err     string
		quota   bool // the error is a GrantQuotaError
		eip     *v1alpha1.EIPBinding
		records int
		free    []string // the pool's free warm EIPs after
		held    int32    // EIPs the grant counts held after
		warm    int32    // and warm
	}
	cases := map[string]struct {
		reason string
		pa     *v1alpha1.PodAddress
		// warm is the warm pool's free EIPs; nil for a Machine without a
		// Warmer.
		warm      []vpc.Address
		warmGrant string // the grant the pool is counted under
		holders   []client.Object
		apiFuncs  interceptor.Funcs
		recErr    error
		maxEIPs   int32
		want      want
	}{
		"Allocate": {
			reason:  "Without a warm pool an allocation is recorded, with the request's attributes, the grant and its config, before any cloud call.",
			pa:      testPA(bw10(), nil),
			maxEIPs: 2,
			want:    want{fresh: true, eip: allocating, records: 1, held: 1},
		},
		"GrantFull": {
			reason:  "A grant whose maxEIPs is in use refuses the EIP: nothing is recorded.",
			pa:      testPA(bw10(), nil),
			holders: []client.Object{holding("other", "g")},
			maxEIPs: 1,
			want:    want{err: "EIPGrant g allows 1 EIPs at once", quota: true, held: 1},
		},
		"RecordError": {
			reason:  "An allocation that cannot be recorded is not counted against the grant.",
			pa:      testPA(bw10(), nil),
			recErr:  errBoom,
			maxEIPs: 2,
			want:    want{err: "cannot record the EIP allocation", records: 1},
		},
		"TakeWarm": {
			reason:    "A Pod of a policy with a warm pool under the same grant takes a free warm EIP with its attributes; it moves from warm to held.",
			pa:        fromPolicy(bw10()),
			warm:      []vpc.Address{warmEIP("eip-other", 20), warmEIP("eip-w", 10)},
			warmGrant: "g",
			maxEIPs:   5,
			want:      want{eip: takenWarm, records: 1, free: []string{"eip-other"}, held: 1, warm: 1},
		},
		"TakeWarmRecordError": {
			reason:    "A warm EIP whose take cannot be recorded goes back to the pool, and the grant forgets the holder.",
			pa:        fromPolicy(bw10()),
			warm:      []vpc.Address{warmEIP("eip-w", 10)},
			warmGrant: "g",
			recErr:    errBoom,
			maxEIPs:   5,
			want:      want{err: "cannot record the warm EIP taken", records: 1, free: []string{"eip-w"}, warm: 1},
		},
		"TakeWarmCountError": {
			reason:    "A warm EIP that cannot be counted goes back to the pool: nothing is recorded.",
			pa:        fromPolicy(bw10()),
			warm:      []vpc.Address{warmEIP("eip-w", 10)},
			warmGrant: "g",
			apiFuncs:  failList(&v1alpha1.PodAddressList{}, errBoom),
			maxEIPs:   5,
			want:      want{err: "cannot list PodAddresses to count", free: []string{"eip-w"}, warm: 1},
		},
		"WarmOfAnotherGrant": {
			reason:    "A warm pool paid by another grant is not taken from: the EIP is allocated under the grant chosen.",
			pa:        fromPolicy(bw10()),
			warm:      []vpc.Address{warmEIP("eip-w", 10)},
			warmGrant: "h",
			maxEIPs:   5,
			want:      want{fresh: true, eip: allocating, records: 1, free: []string{"eip-w"}, held: 1},
		},
		"NoWarmWithTheAttributes": {
			reason:    "Warm EIPs of other attributes are not taken.",
			pa:        fromPolicy(&v1alpha1.EIPRequest{Bandwidth: ptr.To[int64](10), ISP: "CMCC"}),
			warm:      []vpc.Address{warmEIP("eip-w", 10)},
			warmGrant: "g",
			maxEIPs:   5,
			want: want{fresh: true, eip: with(allocating.DeepCopy(), func(e *v1alpha1.EIPBinding) { e.ISP = "CMCC" }),
				records: 1, free: []string{"eip-w"}, held: 1, warm: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gr := grant(tc.maxEIPs, 5)
			api := newKube(t, tc.apiFuncs, tc.holders...)
			g := NewGrants(newKube(t, interceptor.Funcs{}), api, logging.NewNopLogger())
			var w *Warmer
			if tc.warm != nil {
				w = NewWarmer(nil, nil, nil, g, logging.NewNopLogger(), time.Hour)
				w.free[pool] = tc.warm
				// The pool as the warmer's last round counted it.
				g.warm[pool] = warmCount{grant: tc.warmGrant, ref: ref, n: int32(len(tc.warm))}
			}
			g.WarmCounted(map[string]bool{pool: true})
			r := &recorder{err: tc.recErr}
			m := NewMachine(nil, nil, w, g, func() time.Time { return testClock }, r.record)

			fresh, err := m.Start(ctx, tc.pa, "ap-x", gr)

			if tc.want.err == "" && err != nil {
				t.Fatalf("%s\nStart(...): %v", tc.reason, err)
			}
			if tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nStart(...): error %v, want one containing %q", tc.reason, err, tc.want.err)
			}
			var full *GrantQuotaError
			if errors.As(err, &full) != tc.want.quota {
				t.Errorf("%s\nStart(...): error %v; a GrantQuotaError: %t", tc.reason, err, tc.want.quota)
			}
			if fresh != tc.want.fresh {
				t.Errorf("%s\nStart(...): fresh %t, want %t", tc.reason, fresh, tc.want.fresh)
			}
			if diff := cmp.Diff(tc.want.eip, tc.pa.Status.EIP); diff != "" {
				t.Errorf("%s\nstatus.eip: -want +got:\n%s", tc.reason, diff)
			}
			if len(r.records) != tc.want.records {
				t.Errorf("%s\n%d status writes, want %d", tc.reason, len(r.records), tc.want.records)
			}
			if w != nil {
				var free []string
				for _, ad := range w.free[pool] {
					free = append(free, ad.ID)
					if w.taken[ad.ID] {
						t.Errorf("%s\nfree warm EIP %s is marked taken", tc.reason, ad.ID)
					}
				}
				if diff := cmp.Diff(tc.want.free, free, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s\nfree warm EIPs: -want +got:\n%s", tc.reason, diff)
				}
			}
			g.mu.Lock()
			held, warm := g.counts(gr)
			g.mu.Unlock()
			if held != tc.want.held || warm != tc.want.warm {
				t.Errorf("%s\ngrant counts held %d, warm %d; want %d, %d", tc.reason, held, warm, tc.want.held, tc.want.warm)
			}
		})
	}
}

func TestClient(t *testing.T) {
	ctx := context.Background()
	objs := append(append(config("default", "ap-default"), config("spec", "ap-spec")...), config("status", "ap-status")...)
	withRefs := func(spec, status string) *v1alpha1.PodAddress {
		pa := testPA(&v1alpha1.EIPRequest{}, &v1alpha1.EIPBinding{State: v1alpha1.EIPAllocated})
		if spec != "" {
			pa.Spec.EIP.ProviderConfigRef = ptr.To(cpcRef(spec))
		}
		if status != "" {
			pa.Status.EIP.ProviderConfigRef = ptr.To(cpcRef(status))
		}
		return pa
	}
	cases := map[string]struct {
		reason    string
		pa        *v1alpha1.PodAddress
		noVPC     bool
		clientErr error
		region    string
		err       string
	}{
		"Default": {
			reason: "A PodAddress that names no provider config (recorded before grants) uses ClusterProviderConfig default.",
			pa:     withRefs("", ""),
			region: "ap-default",
		},
		"Requested": {
			reason: "The provider config the request names.",
			pa:     withRefs("spec", ""),
			region: "ap-spec",
		},
		"Recorded": {
			reason: "The provider config the status records (the grant's when allocated) wins over the request's.",
			pa:     withRefs("spec", "status"),
			region: "ap-status",
		},
		"NoSuchConfig": {
			reason: "A provider config that does not exist is an error.",
			pa:     withRefs("", "gone"),
			err:    "cannot get ClusterProviderConfig gone",
		},
		"NoVPC": {
			reason: "A provider run without a VPC client says so rather than failing on a nil client.",
			pa:     withRefs("", ""),
			noVPC:  true,
			err:    "runs without a VPC client",
		},
		"ClientError": {
			reason:    "A client that cannot be built is an error naming the region.",
			pa:        withRefs("", ""),
			clientErr: errBoom,
			err:       "cannot build a VPC client for region ap-default",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := &region{Cloud: fake.New()}
			var asked []string
			m := &Machine{kube: newKube(t, interceptor.Funcs{}, objs...), vpc: regions(want, tc.clientErr, &asked)}
			if tc.noVPC {
				m.vpc = nil
			}
			c, region, err := m.Client(ctx, tc.pa)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s\nClient(...): error %v, want one containing %q", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nClient(...): %v", tc.reason, err)
			}
			if region != tc.region || c != API(want) || len(asked) != 1 || asked[0] != tc.region {
				t.Errorf("%s\nClient(...): region %q (clients asked for %v), want %q", tc.reason, region, asked, tc.region)
			}
		})
	}
}

// TestReleaseDetach: the deletion and gone-Pod paths drive an active EIP
// through its provider config's client, and leave a PodAddress without
// one alone.
func TestReleaseDetach(t *testing.T) {
	ctx := context.Background()
	bound := func() *v1alpha1.PodAddress {
		return testPA(bw10(), with(rec(v1alpha1.EIPAssociated, "eip-1"), func(e *v1alpha1.EIPBinding) { e.ENIID, e.PrivateIP = eni, podIP }))
	}
	cases := map[string]struct {
		reason  string
		pa      *v1alpha1.PodAddress
		detach  bool
		vpc     Clients
		done    bool
		wait    time.Duration
		err     string
		writes  []string
		records int
	}{
		"NoEIP": {
			reason: "Nothing to release: done, without a client.",
			pa:     testPA(nil, nil),
			done:   true,
		},
		"FellBack": {
			reason: "A PodAddress that fell back to ports holds no EIP.",
			pa:     testPA(bw10(), &v1alpha1.EIPBinding{State: v1alpha1.EIPFallback}),
			detach: true,
			done:   true,
		},
		"ClientError": {
			reason: "Without a client nothing is driven.",
			pa:     bound(),
			vpc:    regions(nil, errBoom, nil),
			err:    "cannot build a VPC client",
		},
		"Release": {
			reason:  "Release disassociates the EIP first.",
			pa:      bound(),
			wait:    TaskPoll,
			writes:  []string{"Disassociate eip-1"},
			records: 2,
		},
		"Detach": {
			reason:  "Detach disassociates the EIP of a gone Pod too, and keeps it.",
			pa:      bound(),
			detach:  true,
			wait:    TaskPoll,
			writes:  []string{"Disassociate eip-1"},
			records: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.New()
			c.Addresses["eip-1"] = addr("eip-1", vpc.StatusBindENI, eni, podIP)
			r := &recorder{}
			m := &Machine{kube: newKube(t, interceptor.Funcs{}, config("default", "ap-default")...), vpc: regions(&region{Cloud: c}, nil, nil),
				clock: func() time.Time { return testClock }, record: r.record}
			if tc.vpc != nil {
				m.vpc = tc.vpc
			}
			if tc.done {
				m.vpc = nil // no client is needed
			}
			drive := m.Release
			if tc.detach {
				drive = m.Detach
			}
			done, wait, err := drive(ctx, tc.pa)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("%s\nerror %v, want %q", tc.reason, err, tc.err)
			}
			if done != tc.done || wait != tc.wait {
				t.Errorf("%s\ndone %t, wait %s; want %t, %s", tc.reason, done, wait, tc.done, tc.wait)
			}
			if diff := cmp.Diff(tc.writes, c.Log(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
			if len(r.records) != tc.records {
				t.Errorf("%s\n%d status writes, want %d", tc.reason, len(r.records), tc.records)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	cases := map[string]struct {
		e    *v1alpha1.EIPBinding
		want string
	}{
		"None":      {nil, "not allocated"},
		"StateOnly": {&v1alpha1.EIPBinding{State: v1alpha1.EIPAllocating}, "Allocating"},
		"WithTask":  {&v1alpha1.EIPBinding{State: v1alpha1.EIPAssociating, AddressID: "eip-1", TaskID: "7"}, "eip-1 Associating (task 7)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Progress(tc.e); got != tc.want {
				t.Errorf("Progress(%v) = %q, want %q", tc.e, got, tc.want)
			}
		})
	}
}
