package eip

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func testGrant(max, warm int32) *v1alpha1.EIPGrant {
	return &v1alpha1.EIPGrant{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: v1alpha1.EIPGrantSpec{
		Namespaces: v1alpha1.GrantNamespaces{Names: []string{"ns"}}, MaxBandwidth: 10, MaxEIPs: max, MaxWarm: ptr.To(warm),
	}}
}

// holding is a PodAddress whose status records an EIP of grant.
func holding(name, grant string) *v1alpha1.PodAddress {
	pa := &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	pa.Status.EIP = &v1alpha1.EIPBinding{State: v1alpha1.EIPAssociated, AddressID: "eip-" + name, Grant: grant}
	return pa
}

func newTestGrants(t *testing.T, objs ...*v1alpha1.PodAddress) *Grants {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s)
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	c := b.Build()
	return NewGrants(c, c, logging.NewNopLogger())
}

// TestGrantsCountFromStatuses: the count starts from what the statuses
// record (as after a restart), a reservation is refused at maxEIPs with
// the grant and the counts named, and an EIP let go frees its place.
func TestGrantsCountFromStatuses(t *testing.T) {
	ctx := context.Background()
	g := newTestGrants(t, holding("a", "g"), holding("b", "g"), holding("other", "h"))
	gr := testGrant(3, 0)
	g.WarmCounted(nil)
	if err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: "ns", Name: "c"}, ""); err != nil {
		t.Fatalf("third of 3: %v", err)
	}
	err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: "ns", Name: "d"}, "")
	var full *GrantQuotaError
	if !errors.As(err, &full) || err.Error() != "EIPGrant g allows 3 EIPs at once and all are in use (3 held by PodAddresses, 0 warm)" {
		t.Fatalf("fourth of 3: %v", err)
	}
	// Reserving again for a holder is no new place.
	if err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: "ns", Name: "a"}, ""); err != nil {
		t.Fatalf("a again: %v", err)
	}
	released := holding("a", "g")
	released.Status.EIP = nil
	g.Observe(released)
	if err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: "ns", Name: "d"}, ""); err != nil {
		t.Fatalf("after a let go: %v", err)
	}
	fallback := holding("d", "g")
	fallback.Status.EIP.State = v1alpha1.EIPFallback
	g.Observe(fallback)
	if held, _ := g.counts(gr); held != 2 {
		t.Fatalf("%d held after a fallback, want 2 (b and c)", held)
	}
}

// TestGrantsConcurrentReserve: 50 reconciles reserve at once under a
// grant of 10: exactly 10 get a place.
func TestGrantsConcurrentReserve(t *testing.T) {
	g := newTestGrants(t)
	g.WarmCounted(nil)
	gr := testGrant(10, 0)
	var ok, refused int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := g.Reserve(context.Background(), gr, types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}, "")
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else {
				refused++
			}
		}()
	}
	wg.Wait()
	if ok != 10 || refused != 40 {
		t.Fatalf("%d reserved, %d refused; want 10 and 40", ok, refused)
	}
}

// TestGrantsWarm: warm EIPs count against the quota, within maxWarm for
// all pools together; before the warmer's first round each grant's warm
// EIPs count as its maxWarm; a Pod taking a warm EIP does not grow the
// count.
func TestGrantsWarm(t *testing.T) {
	ctx := context.Background()
	g := newTestGrants(t, holding("a", "g"))
	gr := testGrant(4, 2)
	if held, warm := g.counts(gr); held != 0 || warm != 2 {
		// Not loaded yet: nothing held is known, the warm ones are maxWarm.
		t.Fatalf("before anything: held %d, warm %d", held, warm)
	}
	if n, err := g.WarmAllowed(ctx, gr, "ns/p1", 5); err != nil || n != 2 {
		t.Fatalf("first pool wants 5: allowed %d (%v), want maxWarm 2", n, err)
	}
	if n, _ := g.WarmAllowed(ctx, gr, "ns/p2", 5); n != 0 {
		t.Fatalf("second pool: allowed %d, want 0 (p1 has maxWarm)", n)
	}
	g.WarmCounted(map[string]bool{"ns/p1": true, "ns/p2": true})
	// a + 2 warm = 3 of 4: one more place.
	if err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: "ns", Name: "b"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: "ns", Name: "c"}, ""); err == nil {
		t.Fatal("a fifth EIP under a grant of 4")
	}
	// Taking a warm one moves it from warm to held.
	if err := g.Reserve(ctx, gr, types.NamespacedName{Namespace: "ns", Name: "c"}, "ns/p1"); err != nil {
		t.Fatalf("taking a warm EIP: %v", err)
	}
	if held, warm := g.counts(gr); held != 3 || warm != 1 {
		t.Fatalf("after the take: held %d, warm %d; want 3 and 1", held, warm)
	}
	// The pool is refilled only as far as maxEIPs allows: one.
	if n, _ := g.WarmAllowed(ctx, gr, "ns/p1", 5); n != 1 {
		t.Fatalf("refill allowed %d, want 1 (4 - 3 held)", n)
	}
	g.WarmCounted(map[string]bool{"ns/p2": true})
	if _, warm := g.counts(gr); warm != 0 {
		t.Fatalf("a pool gone still counts: warm %d", warm)
	}
}
