package portalloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestConcurrent has goroutines allocate, release and look up while another
// republishes ports and blacklists, with more demand than supply. Run it
// with -race. Afterwards every goroutine's own record of what it holds must
// match the pool, no slot may have two owners, and Stats must add up.
func TestConcurrent(t *testing.T) {
	for _, pol := range []Policy{PolicyLeastUsed, PolicyInOrder, PolicyRandom} {
		t.Run(string(pol), func(t *testing.T) {
			p := NewPool(pol)
			const lbs, ports, workers, ownersEach, ops = 6, 200, 8, 250, 4000
			all := make([]int32, ports)
			for i := range all {
				all[i] = int32(20000 + i)
			}
			for i := range lbs {
				p.SetLB(fmt.Sprintf("lb-%d", i), all)
			}

			held := make([]map[string]Slot, workers)
			var wg sync.WaitGroup
			for w := range workers {
				held[w] = map[string]Slot{}
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), 99))
					mine := held[w]
					for range ops {
						o := fmt.Sprintf("w%d-o%d", w, r.IntN(ownersEach))
						var (
							s   Slot
							err error
						)
						switch r.IntN(4) {
						case 0:
							s, err = p.Allocate(o)
						case 1:
							s, err = p.AllocateAt(o, all[r.IntN(ports)])
						case 2:
							if got, ok := p.Release(o); ok != (mine[o] != Slot{}) || got != mine[o] {
								t.Errorf("Release(%s) = %v, %v; this goroutine recorded %v", o, got, ok, mine[o])
							}
							delete(mine, o)
							continue
						case 3:
							if got, _ := p.Lookup(o); got != mine[o] {
								t.Errorf("Lookup(%s) = %v, recorded %v", o, got, mine[o])
							}
							continue
						}
						switch {
						case err == nil:
							if prev, ok := mine[o]; ok && prev != s {
								t.Errorf("%s moved from %v to %v", o, prev, s)
							}
							mine[o] = s
						case errors.Is(err, ErrNoPortAvailable), errors.Is(err, ErrTaken), errors.Is(err, ErrOwnerHoldsOther):
						default:
							t.Errorf("unexpected error: %v", err)
						}
					}
				})
			}
			// Churn the pool's shape meanwhile: shrink and restore one load
			// balancer's ports, blacklist and lift.
			wg.Go(func() {
				for i := range 200 {
					p.SetLB("lb-0", all[:ports/2+i%(ports/2)])
					if i%3 == 0 {
						p.SetBlacklist([]string{"lb-1"})
					} else {
						p.SetBlacklist(nil)
					}
					_ = p.Stats()
				}
				p.SetLB("lb-0", all)
			})
			wg.Wait()
			checkInvariants(t, p)

			bySlot := map[Slot]string{}
			total := 0
			for _, mine := range held {
				for o, s := range mine {
					if got, ok := p.Lookup(o); !ok || got != s {
						t.Errorf("Lookup(%s) = %v, %v; want %v", o, got, ok, s)
					}
					if other, dup := bySlot[s]; dup {
						t.Errorf("slot %v held by %s and %s", s, other, o)
					}
					bySlot[s] = o
					total++
				}
			}
			st := p.Stats()
			sumA, sumF := 0, 0
			for _, l := range st.LBs {
				sumA += l.Allocated
				sumF += l.Free
			}
			if st.Allocated != total || sumA != total || sumF != st.Free || st.Free+total != lbs*ports {
				t.Errorf("stats %+v: allocated %d (sum %d), free %d (sum %d); %d held, %d slots",
					st, st.Allocated, sumA, st.Free, sumF, total, lbs*ports)
			}
			if total < lbs*ports/2 {
				t.Errorf("only %d of %d slots held at the end; the test did not contend", total, lbs*ports)
			}
		})
	}
}
