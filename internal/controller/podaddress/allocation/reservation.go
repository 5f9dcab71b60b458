package allocation

import (
	"context"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// A Reservation holds the slots taken for one PodAddress until the write
// that records them: Commit once that write succeeded, Drop otherwise.
// Callers defer Drop as soon as they reserve; Drop after Commit gives
// nothing back. The rule "allocate, record, give back if the record
// failed" lives here alone.
type Reservation struct {
	pools *Pools
	pa    *v1alpha1.PodAddress
	fresh []Port
}

// Reserve starts a reservation for pa.
func (p *Pools) Reserve(pa *v1alpha1.PodAddress) *Reservation {
	return &Reservation{pools: p, pa: pa}
}

// Allocate takes a slot for w (Pools.Allocate); a slot new to the
// PodAddress is held by the reservation until Commit.
func (r *Reservation) Allocate(ctx context.Context, w Port) (v1alpha1.PortBinding, string, error) {
	b, isNew, state, err := r.pools.Allocate(ctx, r.pa, w)
	if isNew {
		r.fresh = append(r.fresh, w)
	}
	return b, state, err
}

// AllocateGroup takes slots for the ports of g (one of Groups) that the
// bindings in have do not hold, and returns their bindings in g's order. A same-port
// group (samePortAcrossPools) is taken as a whole: one public port in all
// of its pools, or nothing and the error; its slots new to the
// PodAddress are then held by the reservation, committed or dropped with
// the rest.
func (r *Reservation) AllocateGroup(ctx context.Context, g []Port, have []v1alpha1.PortBinding) ([]v1alpha1.PortBinding, string, error) {
	if !samePort(g) {
		var bs []v1alpha1.PortBinding
		for _, w := range g {
			if w.In(have) {
				continue
			}
			b, state, err := r.Allocate(ctx, w)
			if err != nil {
				return nil, state, err
			}
			bs = append(bs, b)
		}
		return bs, "", nil
	}
	bs, fresh, state, err := r.pools.allocateSame(ctx, r.pa, g, have)
	if err != nil {
		return nil, state, err
	}
	r.fresh = append(r.fresh, fresh...)
	return bs, "", nil
}

// AllocateAll allocates a slot for each of ps (a same-port group as one)
// and returns their bindings, in the order of ps; on a failure it gives
// back the slots it took itself (not those the reservation held before)
// and returns the error.
func (r *Reservation) AllocateAll(ctx context.Context, ps []Port) ([]v1alpha1.PortBinding, error) {
	got := make(map[Port]v1alpha1.PortBinding, len(ps))
	before := len(r.fresh)
	for _, g := range Groups(ps) {
		bs, _, err := r.AllocateGroup(ctx, g, nil)
		if err != nil {
			r.pools.releasePorts(r.pa, r.fresh[before:])
			if r.fresh = r.fresh[:before]; before == 0 {
				r.fresh = nil
			}
			return nil, err
		}
		for i, b := range bs {
			got[g[i]] = b
		}
	}
	bs := make([]v1alpha1.PortBinding, len(ps))
	for i, w := range ps {
		bs[i] = got[w]
	}
	return bs, nil
}

// Fresh reports whether the reservation holds slots not yet recorded.
func (r *Reservation) Fresh() bool { return len(r.fresh) > 0 }

// Commit says the record holding the reserved slots was written: they are
// the PodAddress's from now on.
func (r *Reservation) Commit() { r.fresh = nil }

// Drop gives back the slots not committed; a retry allocates them again.
// Slots the PodAddress held before the reservation are kept: a failed
// write from a stale copy does not mean they were never recorded.
func (r *Reservation) Drop() {
	r.pools.releasePorts(r.pa, r.fresh)
	r.fresh = nil
}
