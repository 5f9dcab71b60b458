// Package portalloc hands out the public ports of a PortPool to owners
// (one owner per Pod port request). It is pure bookkeeping: no cloud calls,
// no Kubernetes. The PortPool controller tells a Pool which slot ports have
// their listeners on each load balancer; the PodAddress controller allocates
// and releases, and rebuilds the Pool from PodAddress status at start-up.
//
// A slot is one load balancer and the first public port of a segment (the
// only port when segments are one port long). Allocate, Release, Assign and
// Lookup are O(1) in the number of ports and O(log n) in the number of load
// balancers; AllocateAt is O(n). Nothing scans the port range.
package portalloc

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// ErrNoPortAvailable means no load balancer that takes new bindings has a
// free slot (or, for AllocateAt, has a listener on the port asked for).
var ErrNoPortAvailable = errors.New("no port available")

// ErrTaken means the slot belongs to another owner.
var ErrTaken = errors.New("slot is taken by another owner")

// ErrOwnerHoldsOther means the owner already holds a different slot; an
// owner holds at most one slot per pool.
var ErrOwnerHoldsOther = errors.New("owner already holds another slot")

// ErrGroupFull means the owner's group holds as many slots as the pool's
// group limit allows.
var ErrGroupFull = errors.New("the owner's group holds all the slots it may")

// ErrInvalid means an empty owner or a port outside 1-65535.
var ErrInvalid = errors.New("invalid owner or port")

// A Slot is one public port (the first of its segment) on one load balancer.
type Slot struct {
	LB   string
	Port int32
}

// A Policy chooses the load balancer of a new allocation.
type Policy string

// Policies. The values match the PortPool's allocationPolicy.
const (
	// PolicyLeastUsed picks the load balancer with the fewest allocated
	// slots (ties go to the one given first), spreading Pods and the blast
	// radius of an attack on one VIP.
	PolicyLeastUsed Policy = "LeastUsed"
	// PolicyInOrder fills load balancers in the order SetLB first named
	// them.
	PolicyInOrder Policy = "InOrder"
	// PolicyRandom picks uniformly among the load balancers with a free
	// slot.
	PolicyRandom Policy = "Random"
)

func normalise(p Policy) Policy {
	switch p {
	case PolicyInOrder, PolicyRandom:
		return p
	default:
		return PolicyLeastUsed
	}
}

// An Option configures a Pool.
type Option func(*Pool)

// WithRand makes the Random policy (and AllocateAt under it) draw from r,
// so that tests are repeatable. The Pool uses r only under its own lock;
// do not share r with anything else.
func WithRand(r *rand.Rand) Option {
	return func(p *Pool) { p.rng = r }
}

// WithGroups sorts owners into groups (e.g. by namespace) whose slots the
// pool counts, so that SetGroupLimit can bound them.
func WithGroups(groupOf func(owner string) string) Option {
	return func(p *Pool) { p.groupOf = groupOf }
}

// lbState is one load balancer of a pool.
type lbState struct {
	id string
	// known is false while only Assign has named the load balancer: its
	// owners are recorded but it has no usable ports and is not in order.
	known       bool
	seq         uint64 // when SetLB first named it: InOrder order and ties
	blacklisted bool

	usable portSet // slot ports whose listeners exist
	free   portSet // usable and not owned
	owned  map[int32]string

	// eligible: known, not blacklisted and with a free slot; only eligible
	// load balancers sit in the selection structures below.
	eligible                    bool
	leastPos, orderPos, randPos int
}

// A Pool allocates the slots of one PortPool. It is safe for concurrent
// use.
type Pool struct {
	mu        sync.Mutex
	policy    Policy
	rng       *rand.Rand
	lbs       map[string]*lbState
	order     []*lbState // known load balancers, in SetLB order
	nextSeq   uint64
	blacklist map[string]bool
	owners    map[string]Slot

	// groupOf sorts owners into groups (nil: no groups); groups counts
	// each group's slots, and a new owner of a group that holds
	// groupLimit slots gets none (0: no limit).
	groupOf    func(string) string
	groups     map[string]int
	groupLimit int
	// groupExempt is the one group groupLimit does not bound ("": none).
	groupExempt string

	// Three views of the eligible load balancers, all kept current so that
	// SetPolicy costs nothing: by allocated count, by SetLB order, and an
	// array to draw from uniformly.
	least, inOrder lbHeap
	avail          []*lbState
}

// NewPool returns an empty Pool. An unknown policy means LeastUsed.
func NewPool(policy Policy, opts ...Option) *Pool {
	p := &Pool{
		policy:    normalise(policy),
		lbs:       map[string]*lbState{},
		blacklist: map[string]bool{},
		owners:    map[string]Slot{},
		groups:    map[string]int{},
		least: lbHeap{
			less: func(a, b *lbState) bool {
				if len(a.owned) != len(b.owned) {
					return len(a.owned) < len(b.owned)
				}
				return a.seq < b.seq
			},
			pos: func(s *lbState) *int { return &s.leastPos },
		},
		inOrder: lbHeap{
			less: func(a, b *lbState) bool { return a.seq < b.seq },
			pos:  func(s *lbState) *int { return &s.orderPos },
		},
	}
	for _, o := range opts {
		o(p)
	}
	if p.rng == nil {
		p.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return p
}

// SetPolicy changes the policy of later allocations. An unknown policy
// means LeastUsed.
func (p *Pool) SetPolicy(policy Policy) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.policy = normalise(policy)
}

// SetGroupLimit bounds the slots one group may hold: Allocate and
// AllocateAt give a new owner of a group that holds n slots
// ErrGroupFull. Owners keep what they hold when n shrinks, and Assign
// records slots beyond it. 0 (or a pool without groups) means no limit.
// The group exempt ("" for none) is not bounded.
func (p *Pool) SetGroupLimit(n int, exempt string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groupLimit, p.groupExempt = n, exempt
}

// GroupSize is how many slots the owners of group hold.
func (p *Pool) GroupSize(group string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.groups[group]
}

// groupFull returns ErrGroupFull when a new owner's group may hold no
// more slots. Caller holds p.mu.
func (p *Pool) groupFull(owner string) error {
	if p.groupOf == nil || p.groupLimit <= 0 {
		return nil
	}
	if g := p.groupOf(owner); g != p.groupExempt && p.groups[g] >= p.groupLimit {
		return fmt.Errorf("%w: %q holds %d (the limit)", ErrGroupFull, g, p.groups[g])
	}
	return nil
}

// count adds d to the slots of owner's group. Caller holds p.mu.
func (p *Pool) count(owner string, d int) {
	if p.groupOf == nil {
		return
	}
	g := p.groupOf(owner)
	if p.groups[g] += d; p.groups[g] <= 0 {
		delete(p.groups, g)
	}
}

// SetLB sets the usable slot ports of a load balancer: those whose
// listeners exist. A new load balancer joins at the end of the InOrder
// order; a known one keeps its place. New ports become free unless owned;
// ports no longer listed stop being free, but their owners keep them.
// Ports outside 1-65535 are ignored.
func (p *Pool) SetLB(lb string, ports []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.lbs[lb]
	if st == nil {
		st = p.newLB(lb)
	}
	if !st.known {
		st.known = true
		st.seq = p.nextSeq
		p.nextSeq++
		st.blacklisted = p.blacklist[lb]
		p.order = append(p.order, st)
	}
	next := &portSet{}
	for _, port := range ports {
		if validPort(port) {
			next.add(port)
		}
	}
	// Only the words that differ are walked: a republished, unchanged port
	// set costs 1024 comparisons.
	for w := range st.usable.words {
		old, now := st.usable.words[w], next.words[w]
		if old == now {
			continue
		}
		for gone := old &^ now; gone != 0; gone &= gone - 1 {
			st.free.remove(int32(w*64 + bits.TrailingZeros64(gone)))
		}
		for added := now &^ old; added != 0; added &= added - 1 {
			port := int32(w*64 + bits.TrailingZeros64(added))
			if _, owned := st.owned[port]; !owned {
				st.free.add(port)
			}
		}
	}
	st.usable = *next
	p.refresh(st)
}

// RemoveLB drops a load balancer from the pool. Its owners lose their
// slots; they are returned, sorted, so that the caller can bind them
// elsewhere.
func (p *Pool) RemoveLB(lb string) (lostOwners []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.lbs[lb]
	if st == nil {
		return nil
	}
	for _, owner := range st.owned {
		lostOwners = append(lostOwners, owner)
		delete(p.owners, owner)
		p.count(owner, -1)
	}
	slices.Sort(lostOwners)
	if st.eligible {
		p.unlist(st)
	}
	if st.known {
		p.order = slices.DeleteFunc(p.order, func(s *lbState) bool { return s == st })
	}
	delete(p.lbs, lb)
	return lostOwners
}

// SetBlacklist replaces the load balancers that get no new allocations.
// Their owners keep their slots. Names not (yet) in the pool are kept and
// apply when SetLB adds them.
func (p *Pool) SetBlacklist(lbs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blacklist = make(map[string]bool, len(lbs))
	for _, lb := range lbs {
		p.blacklist[lb] = true
	}
	for _, st := range p.order {
		st.blacklisted = p.blacklist[st.id]
		p.refresh(st)
	}
}

// Allocate gives owner a free slot on the load balancer the policy picks,
// the lowest free port there. An owner that already holds a slot gets that
// slot back, wherever it is.
func (p *Pool) Allocate(owner string) (Slot, error) {
	if owner == "" {
		return Slot{}, fmt.Errorf("%w: empty owner", ErrInvalid)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.owners[owner]; ok {
		return s, nil
	}
	if err := p.groupFull(owner); err != nil {
		return Slot{}, err
	}
	var st *lbState
	switch p.policy {
	case PolicyInOrder:
		st = p.inOrder.top()
	case PolicyRandom:
		if len(p.avail) > 0 {
			st = p.avail[p.rng.IntN(len(p.avail))]
		}
	default:
		st = p.least.top()
	}
	if st == nil {
		return Slot{}, fmt.Errorf("%w: every load balancer that takes new bindings is full", ErrNoPortAvailable)
	}
	port, _ := st.free.min() // eligible implies a free port
	return p.take(st, port, owner), nil
}

// AllocateAt gives owner the given port (the ordinal strategy computes it)
// on the first load balancer, in policy order, where that port is free:
// InOrder takes the first in SetLB order, LeastUsed the least used, Random
// any of them. It costs O(load balancers). An owner that already holds
// that port keeps its slot; one that holds another port gets
// ErrOwnerHoldsOther. ErrTaken means every load balancer that has the port
// has given it to someone else; ErrNoPortAvailable means none has it.
func (p *Pool) AllocateAt(owner string, port int32) (Slot, error) {
	if owner == "" || !validPort(port) {
		return Slot{}, fmt.Errorf("%w: owner %q, port %d", ErrInvalid, owner, port)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.owners[owner]; ok {
		if s.Port == port {
			return s, nil
		}
		return Slot{}, fmt.Errorf("%w: %q holds port %d on %s, not %d", ErrOwnerHoldsOther, owner, s.Port, s.LB, port)
	}
	if err := p.groupFull(owner); err != nil {
		return Slot{}, err
	}
	var (
		pick       *lbState
		candidates int
		holder     *lbState // a load balancer where someone else has the port
	)
	for _, st := range p.order {
		if st.blacklisted || !st.usable.has(port) {
			continue
		}
		if !st.free.has(port) {
			if holder == nil {
				holder = st
			}
			continue
		}
		candidates++
		switch p.policy {
		case PolicyInOrder:
			if pick == nil {
				pick = st
			}
		case PolicyRandom:
			// Reservoir sampling: each candidate ends up chosen with
			// probability 1/candidates, without collecting them.
			if p.rng.IntN(candidates) == 0 {
				pick = st
			}
		default:
			if pick == nil || p.least.less(st, pick) {
				pick = st
			}
		}
	}
	switch {
	case pick != nil:
		return p.take(pick, port, owner), nil
	case holder != nil:
		return Slot{}, fmt.Errorf("%w: port %d is held by %q on %s", ErrTaken, port, holder.owned[port], holder.id)
	default:
		return Slot{}, fmt.Errorf("%w: no load balancer that takes new bindings has a listener on port %d", ErrNoPortAvailable, port)
	}
}

// FreeAnywhere adds to m every port free on at least one load balancer
// that takes new allocations (known, not blacklisted): the ports
// AllocateAt could give a new owner. It costs O(load balancers with a
// free slot × their non-empty words), never a scan of the port range.
func (p *Pool) FreeAnywhere(m *PortMask) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.avail {
		m.or(&st.free)
	}
}

// FreeAt reports whether port is free on a load balancer that takes new
// allocations, or is owner's already: whether AllocateAt(owner, port)
// would succeed now, the group limit aside. O(load balancers).
func (p *Pool) FreeAt(owner string, port int32) bool {
	if !validPort(port) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.owners[owner]; ok {
		return s.Port == port
	}
	for _, st := range p.avail {
		if st.free.has(port) {
			return true
		}
	}
	return false
}

// Assign records that owner holds s, as found in PodAddress status when the
// provider starts. The load balancer and port need not be known through
// SetLB yet (or still): the slot is never handed to anyone else while
// owner holds it. The blacklist does not apply. Assigning the slot an
// owner already holds is a no-op.
func (p *Pool) Assign(owner string, s Slot) error {
	if owner == "" || !validPort(s.Port) {
		return fmt.Errorf("%w: owner %q, port %d", ErrInvalid, owner, s.Port)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if held, ok := p.owners[owner]; ok {
		if held == s {
			return nil
		}
		return fmt.Errorf("%w: %q holds port %d on %s, not port %d on %s",
			ErrOwnerHoldsOther, owner, held.Port, held.LB, s.Port, s.LB)
	}
	st := p.lbs[s.LB]
	if st == nil {
		st = p.newLB(s.LB)
	}
	if other, ok := st.owned[s.Port]; ok {
		return fmt.Errorf("%w: port %d on %s is held by %q", ErrTaken, s.Port, s.LB, other)
	}
	p.take(st, s.Port, owner)
	return nil
}

// Release frees owner's slot and returns it; false if owner held none.
func (p *Pool) Release(owner string) (Slot, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.owners[owner]
	if !ok {
		return Slot{}, false
	}
	delete(p.owners, owner)
	p.count(owner, -1)
	st := p.lbs[s.LB]
	delete(st.owned, s.Port)
	if st.usable.has(s.Port) {
		st.free.add(s.Port)
	}
	if !st.known && len(st.owned) == 0 {
		// Only Assign knew it, and nothing references it any more.
		delete(p.lbs, s.LB)
		return s, true
	}
	p.refresh(st)
	return s, true
}

// ReleaseOwners frees the slots of every owner whose name starts with
// prefix and returns how many it freed.
func (p *Pool) ReleaseOwners(prefix string) int {
	p.mu.Lock()
	var names []string
	for o := range p.owners {
		if strings.HasPrefix(o, prefix) {
			names = append(names, o)
		}
	}
	p.mu.Unlock()
	n := 0
	for _, o := range names {
		if _, ok := p.Release(o); ok {
			n++
		}
	}
	return n
}

// Lookup returns owner's slot.
func (p *Pool) Lookup(owner string) (Slot, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.owners[owner]
	return s, ok
}

// LBStats is the usage of one load balancer.
type LBStats struct {
	LB string
	// Allocated slots, including owned ports that are not (or no longer)
	// usable.
	Allocated int
	// Free slots: usable, unowned, and the load balancer takes new
	// bindings. Zero when blacklisted.
	Free int
	// Usable slot ports: those whose listeners exist.
	Usable int
	// Blacklisted load balancers get no new allocations.
	Blacklisted bool
	// Known is false for a load balancer only Assign has named.
	Known bool
}

// Stats is the usage of a pool.
type Stats struct {
	// LBs in SetLB order, then those only Assign named, by id.
	LBs       []LBStats
	Allocated int
	Free      int
}

func (st *lbState) stats() LBStats {
	ls := LBStats{LB: st.id, Allocated: len(st.owned), Usable: st.usable.n, Blacklisted: st.blacklisted, Known: st.known}
	if st.known && !st.blacklisted {
		ls.Free = st.free.n
	}
	return ls
}

// LBStats returns the usage of one load balancer of the pool, as Stats
// lists it; false if the pool does not know it. It costs O(1): an
// allocation changes one load balancer, and a pool has hundreds.
func (p *Pool) LBStats(id string) (LBStats, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.lbs[id]
	if !ok {
		return LBStats{}, false
	}
	return st.stats(), true
}

// Stats returns the pool's usage. It costs O(load balancers).
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out Stats
	add := func(st *lbState) {
		ls := st.stats()
		out.LBs = append(out.LBs, ls)
		out.Allocated += ls.Allocated
		out.Free += ls.Free
	}
	for _, st := range p.order {
		add(st)
	}
	if len(p.lbs) > len(p.order) {
		var unknown []*lbState
		for _, st := range p.lbs {
			if !st.known {
				unknown = append(unknown, st)
			}
		}
		slices.SortFunc(unknown, func(a, b *lbState) int { return strings.Compare(a.id, b.id) })
		for _, st := range unknown {
			add(st)
		}
	}
	return out
}

func (p *Pool) newLB(id string) *lbState {
	st := &lbState{id: id, owned: map[int32]string{}, leastPos: -1, orderPos: -1, randPos: -1}
	p.lbs[id] = st
	return st
}

// take records owner on port of st; the caller checked it is not owned.
func (p *Pool) take(st *lbState, port int32, owner string) Slot {
	st.owned[port] = owner
	st.free.remove(port)
	s := Slot{LB: st.id, Port: port}
	p.owners[owner] = s
	p.count(owner, 1)
	p.refresh(st)
	return s
}

// refresh puts st into or out of the selection structures after its free
// count, allocated count or blacklisting changed.
func (p *Pool) refresh(st *lbState) {
	want := st.known && !st.blacklisted && st.free.n > 0
	switch {
	case want && !st.eligible:
		st.eligible = true
		p.least.push(st)
		p.inOrder.push(st)
		st.randPos = len(p.avail)
		p.avail = append(p.avail, st)
	case !want && st.eligible:
		p.unlist(st)
	case want:
		p.least.fix(st) // allocated count may have changed
	}
}

func (p *Pool) unlist(st *lbState) {
	st.eligible = false
	p.least.remove(st)
	p.inOrder.remove(st)
	last := len(p.avail) - 1
	moved := p.avail[last]
	p.avail[st.randPos] = moved
	moved.randPos = st.randPos
	p.avail[last] = nil
	p.avail = p.avail[:last]
	st.randPos = -1
}

func validPort(p int32) bool { return p >= 1 && p <= maxPort }
