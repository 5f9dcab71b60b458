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

// AllocateAll allocates a slot for each of ps, in order, and returns their
// bindings; on a failure it gives back the slots it took itself (not those
// the reservation held before) and returns the error.
func (r *Reservation) AllocateAll(ctx context.Context, ps []Port) ([]v1alpha1.PortBinding, error) {
	bs := make([]v1alpha1.PortBinding, 0, len(ps))
	before := len(r.fresh)
	for _, w := range ps {
		b, _, err := r.Allocate(ctx, w)
		if err != nil {
			r.pools.releasePorts(r.pa, r.fresh[before:])
			if r.fresh = r.fresh[:before]; before == 0 {
				r.fresh = nil
			}
			return nil, err
		}
		bs = append(bs, b)
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
