package portalloc

import (
	"fmt"
	"maps"
	"math/bits"
	"testing"
)

// checkInvariants verifies the Pool's internal bookkeeping against itself:
// every fast structure must agree with the plain facts it summarises.
func checkInvariants(t *testing.T, p *Pool) {
	t.Helper()
	if err := invariantErr(p); err != nil {
		t.Fatal(err)
	}
}

func invariantErr(p *Pool) error {
	p.mu.Lock()
	defer p.mu.Unlock()

	owned := 0
	for id, st := range p.lbs {
		if st.id != id {
			return fmt.Errorf("lbs[%q] has id %q", id, st.id)
		}
		if err := setErr(&st.usable); err != nil {
			return fmt.Errorf("%s usable: %w", id, err)
		}
		if err := setErr(&st.free); err != nil {
			return fmt.Errorf("%s free: %w", id, err)
		}
		// free == usable minus owned, exactly.
		var bad error
		st.usable.each(func(port int32) {
			_, isOwned := st.owned[port]
			if st.free.has(port) == isOwned && bad == nil {
				bad = fmt.Errorf("%s port %d: owned=%v free=%v", id, port, isOwned, st.free.has(port))
			}
		})
		st.free.each(func(port int32) {
			if !st.usable.has(port) && bad == nil {
				bad = fmt.Errorf("%s port %d is free but not usable", id, port)
			}
		})
		if bad != nil {
			return bad
		}
		for port, owner := range st.owned {
			if s, ok := p.owners[owner]; !ok || s != (Slot{LB: id, Port: port}) {
				return fmt.Errorf("%s port %d owned by %q, whose slot is %v (%v)", id, port, owner, s, ok)
			}
		}
		owned += len(st.owned)
		if !st.known && (len(st.owned) == 0 || st.usable.n != 0 || st.eligible) {
			return fmt.Errorf("%s: unknown load balancer with %d owners, %d usable, eligible=%v", id, len(st.owned), st.usable.n, st.eligible)
		}
		if st.known && st.blacklisted != p.blacklist[id] {
			return fmt.Errorf("%s: blacklisted=%v, blacklist says %v", id, st.blacklisted, p.blacklist[id])
		}
		want := st.known && !st.blacklisted && st.free.n > 0
		if st.eligible != want {
			return fmt.Errorf("%s: eligible=%v, want %v", id, st.eligible, want)
		}
		in := [3]bool{st.leastPos >= 0, st.orderPos >= 0, st.randPos >= 0}
		if in != [3]bool{want, want, want} {
			return fmt.Errorf("%s: membership %v, eligible %v", id, in, want)
		}
		if want && (p.least.items[st.leastPos] != st || p.inOrder.items[st.orderPos] != st || p.avail[st.randPos] != st) {
			return fmt.Errorf("%s: stale position", id)
		}
	}
	if owned != len(p.owners) {
		return fmt.Errorf("%d owned ports, %d owners", owned, len(p.owners))
	}
	for owner, s := range p.owners {
		st := p.lbs[s.LB]
		if st == nil || st.owned[s.Port] != owner {
			return fmt.Errorf("owner %q's slot %v does not name it", owner, s)
		}
	}
	if p.groupOf != nil {
		want := map[string]int{}
		for owner := range p.owners {
			want[p.groupOf(owner)]++
		}
		if !maps.Equal(want, p.groups) {
			return fmt.Errorf("group counts %v, owners give %v", p.groups, want)
		}
	}
	known := 0
	for i, st := range p.order {
		if !st.known || p.lbs[st.id] != st {
			return fmt.Errorf("order[%d] = %s is not a known member", i, st.id)
		}
		if i > 0 && p.order[i-1].seq >= st.seq {
			return fmt.Errorf("order is not by seq at %d", i)
		}
	}
	for _, st := range p.lbs {
		if st.known {
			known++
		}
	}
	if known != len(p.order) {
		return fmt.Errorf("%d known load balancers, %d in order", known, len(p.order))
	}
	for _, h := range []*lbHeap{&p.least, &p.inOrder} {
		if len(h.items) != len(p.avail) {
			return fmt.Errorf("heap has %d items, avail %d", len(h.items), len(p.avail))
		}
		for i := 1; i < len(h.items); i++ {
			if h.less(h.items[i], h.items[(i-1)/2]) {
				return fmt.Errorf("heap order broken at %d", i)
			}
		}
	}
	return nil
}

// setErr checks a portSet's summaries and count against its words.
func setErr(s *portSet) error {
	n := 0
	for w, word := range s.words {
		n += bits.OnesCount64(word)
		if (word != 0) != (s.mid[w/64]&(1<<(w%64)) != 0) {
			return fmt.Errorf("mid bit of word %d is wrong", w)
		}
	}
	for m, mid := range s.mid {
		if (mid != 0) != (s.top&(1<<m) != 0) {
			return fmt.Errorf("top bit %d is wrong", m)
		}
	}
	if s.top>>nMid != 0 {
		return fmt.Errorf("top has bits above %d", nMid)
	}
	if n != s.n {
		return fmt.Errorf("count %d, %d bits set", s.n, n)
	}
	return nil
}
