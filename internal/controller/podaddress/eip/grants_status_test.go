package eip

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
)

func TestChoose(t *testing.T) {
	bySelector := func(name string, labels map[string]string) *v1alpha1.EIPGrant {
		gr := grant(5, 0)
		gr.SetName(name)
		gr.Spec.Namespaces = v1alpha1.GrantNamespaces{Selector: &metav1.LabelSelector{MatchLabels: labels}}
		return gr
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{"team": "a"}}}
	cases := map[string]struct {
		reason   string
		grants   []client.Object
		funcs    interceptor.Funcs
		apiFuncs interceptor.Funcs
		want     string // the grant chosen
		err      string
		refused  bool // the error is a NotGrantedError
	}{
		"ByName": {
			reason: "A grant that names the namespace and admits the request.",
			grants: []client.Object{grant(5, 0)},
			want:   "g",
		},
		"BySelector": {
			reason: "A grant whose selector matches the namespace's labels, read from the API server.",
			grants: []client.Object{bySelector("other", map[string]string{"team": "b"}), bySelector("team-a", map[string]string{"team": "a"})},
			want:   "team-a",
		},
		"NamespaceError": {
			reason: "A selector that cannot be matched is an error, not a refusal.",
			grants: []client.Object{bySelector("team-a", map[string]string{"team": "a"})},
			apiFuncs: interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errBoom
			}},
			err: "cannot get namespace ns to match EIPGrant selectors",
		},
		"NoneCovers": {
			reason:  "No grant: a NotGrantedError that says how to get one.",
			err:     "no EIPGrant covers namespace ns",
			refused: true,
		},
		"ListError": {
			reason: "Without the grants nothing is chosen.",
			funcs:  failList(&v1alpha1.EIPGrantList{}, errBoom),
			err:    "cannot list EIPGrants",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewGrants(newKube(t, tc.funcs, tc.grants...), newKube(t, tc.apiFuncs, nsObj), logging.NewNopLogger())
			gr, err := g.Choose(context.Background(), testNS, bw10())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s\nChoose: error %v, want one containing %q", tc.reason, err, tc.err)
				}
				var refused *NotGrantedError
				if errors.As(err, &refused) != tc.refused {
					t.Errorf("%s\nChoose: error %T, a NotGrantedError: %t", tc.reason, err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nChoose: %v", tc.reason, err)
			}
			if gr.GetName() != tc.want {
				t.Errorf("%s\nChoose: %s, want %s", tc.reason, gr.GetName(), tc.want)
			}
		})
	}
}

// counted is the status counts of a grant.
type counted struct{ EIPs, Warm int32 }

func TestWriteStatuses(t *testing.T) {
	withStatus := func(name string, eips, warm int32) *v1alpha1.EIPGrant {
		gr := grant(10, 5)
		gr.SetName(name)
		gr.Status.EIPs, gr.Status.Warm = eips, warm
		return gr
	}
	cases := map[string]struct {
		reason   string
		funcs    interceptor.Funcs
		apiFuncs interceptor.Funcs
		err      string
		writes   int
		want     map[string]counted
	}{
		"Changed": {
			reason: "Each grant's status gets its held and warm counts; a grant whose status says them already is not written.",
			writes: 1,
			want:   map[string]counted{"g": {EIPs: 2, Warm: 1}, "h": {EIPs: 1}},
		},
		"ListError": {
			reason: "Without the grants nothing is written.",
			funcs:  failList(&v1alpha1.EIPGrantList{}, errBoom),
			err:    "cannot list EIPGrants",
			want:   map[string]counted{"g": {}, "h": {EIPs: 1}},
		},
		"CountError": {
			reason:   "Counts that cannot be loaded are not written.",
			apiFuncs: failList(&v1alpha1.PodAddressList{}, errBoom),
			err:      "cannot list PodAddresses to count",
			want:     map[string]counted{"g": {}, "h": {EIPs: 1}},
		},
		"GrantGone": {
			reason: "A grant deleted since it was listed is no error.",
			funcs: interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				return kerrors.NewNotFound(schema.GroupResource{Resource: "eipgrants"}, "g")
			}},
			writes: 1,
			want:   map[string]counted{"g": {}, "h": {EIPs: 1}},
		},
		"UpdateError": {
			reason: "A failed write is returned, naming the grant.",
			funcs: interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				return errBoom
			}},
			err:    "cannot write the status of EIPGrant g",
			writes: 1,
			want:   map[string]counted{"g": {}, "h": {EIPs: 1}},
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
			kube := newKube(t, funcs, withStatus("g", 0, 0), withStatus("h", 1, 0))
			api := newKube(t, tc.apiFuncs, holding("a", "g"), holding("b", "g"), holding("c", "h"))
			g := NewGrants(kube, api, logging.NewNopLogger())
			g.warm["ns/web"] = warmCount{grant: "g", n: 1}
			g.WarmCounted(map[string]bool{"ns/web": true})

			err := g.writeStatuses(context.Background())

			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("%s\nwriteStatuses: error %v, want %q", tc.reason, err, tc.err)
			}
			if writes != tc.writes {
				t.Errorf("%s\n%d status writes, want %d", tc.reason, writes, tc.writes)
			}
			got := map[string]counted{}
			for _, name := range []string{"g", "h"} {
				gr := &v1alpha1.EIPGrant{}
				if err := kube.Get(context.Background(), types.NamespacedName{Name: name}, gr); err != nil {
					t.Fatal(err)
				}
				got[name] = counted{EIPs: gr.Status.EIPs, Warm: gr.Status.Warm}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nstatuses: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestGrantsStart: the status writer writes at once, again after a
// count changes, logs a failed round and stops with its context.
func TestGrantsStart(t *testing.T) {
	calls := make(chan struct{}, 10)
	kube := newKube(t, listed(&v1alpha1.EIPGrantList{}, calls))
	log := &logged{}
	g := NewGrants(kube, kube, log)
	if !g.NeedLeaderElection() {
		t.Error("the grants' statuses are written by the leader")
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- g.Start(ctx) }()
	wait(t, calls, "first round")
	g.WarmHas("unknown", 3) // a pool never counted changes nothing
	g.WarmCounted(nil)      // a count changed: another round, a second later
	wait(t, calls, "round after a change")
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not stop with its context")
	}
	if got := log.messages(); len(got) == 0 || got[0] != "Cannot write the status of EIPGrants" {
		t.Errorf("logged %q, want the failed first round logged (a round cut short by the stop may not be)", got)
	}
}

func TestWarmHasAndGrant(t *testing.T) {
	g := NewGrants(nil, nil, logging.NewNopLogger())
	if _, _, ok := g.WarmGrant("ns/web"); ok {
		t.Fatal("a pool never counted has a grant")
	}
	g.WarmHas("ns/web", 3)
	if _, ok := g.warm["ns/web"]; ok {
		t.Fatal("WarmHas counted a pool WarmAllowed never did")
	}
	g.warm["ns/web"] = warmCount{grant: "g", ref: cpcRef("default"), n: 1}
	g.WarmHas("ns/web", 3)
	name, ref, ok := g.WarmGrant("ns/web")
	if !ok || name != "g" || ref != cpcRef("default") || g.warm["ns/web"].n != 3 {
		t.Errorf("WarmGrant = %s, %v, %t with %d warm; want g, default, true with 3", name, ref, ok, g.warm["ns/web"].n)
	}
	if e := (&NotGrantedError{Msg: "no EIPGrant"}); e.Error() != "no EIPGrant" {
		t.Errorf("NotGrantedError says %q", e.Error())
	}
}

// TestPoolClients: the Machine and Warmer get the pool's shared client of
// each config, and no clients without a pool.
func TestPoolClients(t *testing.T) {
	if poolClients(nil) != nil {
		t.Fatal("clients without a pool")
	}
	get := poolClients(vpc.NewPool(vpc.Options{}))
	cfg := clients.Config{SecretID: "AKID", SecretKey: "key", Region: "ap-x", Scheme: "https"}
	a, err := get(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := get(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*vpc.Client); !ok || a != b {
		t.Errorf("clients %T %p and %p; want the pool's one *vpc.Client", a, a, b)
	}
}
