package allocation

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// onePortPools serves the pool team-a/one: one load balancer with one
// ready port, so whether a second PodAddress gets it shows whether the
// first still holds it.
func onePortPools(t *testing.T) *Pools {
	t.Helper()
	s := runtime.NewScheme()
	if err := clbv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "one", UID: "pool-uid"}}
	pp.Spec.ForProvider.StartPort = 100
	pp.Status.AtProvider.LoadBalancers = []clbv1alpha1.PoolLoadBalancerStatus{{ID: "lb-1", State: "Ready", Listeners: map[string]string{"TCP/100": "lbl-1"}}}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(pp).
		WithIndex(&v1alpha1.PodAddress{}, v1alpha1.PoolIndex, v1alpha1.PoolsOf).Build()
	return NewPools(kube, func(string, []portalloc.LBStats) {})
}

// TestReservation: slots a reservation took are the PodAddress's once
// committed and given back when dropped; a slot held before the
// reservation is never given back by it; AllocateAll keeps nothing of a
// request it cannot fill.
func TestReservation(t *testing.T) {
	game := Port{Pool: "team-a/one", ContainerPort: 7777, Protocol: "TCP"}
	missing := Port{Pool: "team-a/none", ContainerPort: 7778, Protocol: "TCP"}
	cases := map[string]struct {
		reason string
		run    func(ctx context.Context, p *Pools) error
		// held: the port is still gs-0's afterwards.
		held bool
	}{
		"CommitKeeps": {
			reason: "A committed slot stays the PodAddress's, Drop after Commit gives nothing back.",
			run: func(ctx context.Context, p *Pools) error {
				r := p.Reserve(podAddress("team-a", "gs-0"))
				defer r.Drop()
				_, _, err := r.Allocate(ctx, game)
				r.Commit()
				return err
			},
			held: true,
		},
		"DropGivesBack": {
			reason: "A slot whose record was never written goes back.",
			run: func(ctx context.Context, p *Pools) error {
				r := p.Reserve(podAddress("team-a", "gs-0"))
				defer r.Drop()
				_, _, err := r.Allocate(ctx, game)
				return err
			},
		},
		"HeldBeforeKept": {
			reason: "A slot held before this reservation is kept when it is dropped: a failed write from a stale copy is no proof it was never recorded.",
			run: func(ctx context.Context, p *Pools) error {
				first := p.Reserve(podAddress("team-a", "gs-0"))
				if _, _, err := first.Allocate(ctx, game); err != nil {
					return err
				}
				first.Commit()
				again := p.Reserve(podAddress("team-a", "gs-0"))
				defer again.Drop()
				if _, _, err := again.Allocate(ctx, game); err != nil {
					return err
				}
				if again.Fresh() {
					t.Error("a slot held before counts as fresh")
				}
				return nil
			},
			held: true,
		},
		"AllocateAllFailure": {
			reason: "A request AllocateAll cannot fill keeps none of its slots.",
			run: func(ctx context.Context, p *Pools) error {
				r := p.Reserve(podAddress("team-a", "gs-0"))
				defer r.Commit() // even a commit after the failure keeps nothing
				if _, err := r.AllocateAll(ctx, []Port{game, missing}); err == nil {
					t.Error("AllocateAll with a missing pool succeeded")
				}
				if r.Fresh() {
					t.Error("fresh slots left after a failed AllocateAll")
				}
				return nil
			},
		},
		"ReleaseWithoutRecord": {
			reason: "Release frees what the PodAddress holds even when its status lists nothing (a record dropped as not the provider's).",
			run: func(ctx context.Context, p *Pools) error {
				pa := podAddress("team-a", "gs-0")
				pa.Spec.Ports = []v1alpha1.PortRequest{{Pools: []v1alpha1.PoolRef{{Name: "one"}}}}
				r := p.Reserve(pa)
				if _, _, err := r.Allocate(ctx, game); err != nil {
					return err
				}
				r.Commit()
				return p.Release(ctx, pa)
			},
		},
		"AllocateAllSuccess": {
			reason: "AllocateAll returns one binding per port, held until committed.",
			run: func(ctx context.Context, p *Pools) error {
				r := p.Reserve(podAddress("team-a", "gs-0"))
				defer r.Drop()
				bs, err := r.AllocateAll(ctx, []Port{game})
				if err != nil {
					return err
				}
				if len(bs) != 1 || bs[0].LoadBalancerID != "lb-1" || bs[0].Port != 100 || !r.Fresh() {
					t.Errorf("AllocateAll = %+v, fresh %v; want lb-1:100, fresh", bs, r.Fresh())
				}
				r.Commit()
				return nil
			},
			held: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			p := onePortPools(t)
			if err := tc.run(ctx, p); err != nil {
				t.Fatalf("%s\n%v", tc.reason, err)
			}
			other := p.Reserve(podAddress("team-a", "gs-1"))
			_, state, err := other.Allocate(ctx, game)
			if held := err != nil; held != tc.held {
				t.Errorf("%s\nport held by gs-0 afterwards: %v (another Pod's allocation: %s %v), want %v", tc.reason, held, state, err, tc.held)
			}
		})
	}
}
