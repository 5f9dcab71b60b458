package portalloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// model is the obvious, slow allocator: maps and linear scans. The Pool
// must behave exactly like it (for Random: choose one of the load
// balancers the model allows, then agree on everything else).
type model struct {
	policy    Policy
	order     []string
	usable    map[string]map[int32]bool
	blacklist map[string]bool
	owners    map[string]Slot
	holder    map[Slot]string
}

func newModel(p Policy) *model {
	return &model{policy: normalise(p), usable: map[string]map[int32]bool{}, blacklist: map[string]bool{},
		owners: map[string]Slot{}, holder: map[Slot]string{}}
}

func (m *model) known(lb string) bool { return m.usable[lb] != nil }

func (m *model) allocated(lb string) int {
	n := 0
	for s := range m.holder {
		if s.LB == lb {
			n++
		}
	}
	return n
}

func (m *model) freePorts(lb string) []int32 {
	var out []int32
	for port := range m.usable[lb] {
		if _, taken := m.holder[Slot{lb, port}]; !taken {
			out = append(out, port)
		}
	}
	slices.Sort(out)
	return out
}

func (m *model) open(lb string) bool { return !m.blacklist[lb] }

// choices returns the load balancers the policy may pick among those that
// pass ok, in order; for the deterministic policies exactly one.
func (m *model) choices(ok func(lb string) bool) []string {
	var cands []string
	for _, lb := range m.order {
		if m.open(lb) && ok(lb) {
			cands = append(cands, lb)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	switch m.policy {
	case PolicyInOrder:
		return cands[:1]
	case PolicyRandom:
		return cands
	default:
		best := cands[0]
		for _, lb := range cands[1:] {
			if m.allocated(lb) < m.allocated(best) {
				best = lb
			}
		}
		return []string{best}
	}
}

func (m *model) take(owner string, s Slot) {
	m.owners[owner] = s
	m.holder[s] = owner
}

func (m *model) stats() Stats {
	var out Stats
	add := func(lb string) {
		ls := LBStats{LB: lb, Allocated: m.allocated(lb), Usable: len(m.usable[lb]), Known: m.known(lb)}
		if ls.Known {
			ls.Blacklisted = m.blacklist[lb]
			if !ls.Blacklisted {
				ls.Free = len(m.freePorts(lb))
			}
		}
		out.LBs = append(out.LBs, ls)
		out.Allocated += ls.Allocated
		out.Free += ls.Free
	}
	for _, lb := range m.order {
		add(lb)
	}
	var unknown []string
	for s := range m.holder {
		if !m.known(s.LB) && !slices.Contains(unknown, s.LB) {
			unknown = append(unknown, s.LB)
		}
	}
	slices.Sort(unknown)
	for _, lb := range unknown {
		add(lb)
	}
	return out
}

// kind names the sentinel an error wraps, so that model and Pool errors
// compare by meaning.
func kind(err error) string {
	for _, k := range []error{ErrNoPortAvailable, ErrTaken, ErrOwnerHoldsOther, ErrInvalid} {
		if errors.Is(err, k) {
			return k.Error()
		}
	}
	if err != nil {
		return "unexpected: " + err.Error()
	}
	return ""
}

// bytesIn reads a fuzz input; past its end it yields zeros.
type bytesIn struct {
	b []byte
	i int
}

func (r *bytesIn) next(n int) int {
	if r.i >= len(r.b) {
		return 0
	}
	v := int(r.b[r.i]) % n
	r.i++
	return v
}

// A small universe makes collisions (taken ports, full load balancers,
// owners asking twice) common.
const (
	modelLBs    = 4
	modelPorts  = 10 // ports 1-10; port 0 exercises the invalid path
	modelOwners = 14
)

func runModel(t *testing.T, data []byte) {
	// Long inputs add little over short ones and each step re-checks every
	// invariant, so the fuzzer's occasional megabyte inputs are cut short.
	if len(data) > 4096 {
		data = data[:4096]
	}
	in := &bytesIn{b: data}
	pol := []Policy{PolicyLeastUsed, PolicyInOrder, PolicyRandom}[in.next(3)]
	// Groups are counted (the invariants check the counts) but not
	// limited, so the model needs none.
	p := NewPool(pol, WithRand(rand.New(rand.NewPCG(uint64(len(data)), 1))), WithGroups(lastChar))
	m := newModel(pol)
	lbName := func() string { return fmt.Sprintf("lb-%d", in.next(modelLBs)) }
	owner := func() string {
		if o := in.next(modelOwners + 1); o < modelOwners {
			return fmt.Sprintf("o%d", o)
		}
		return "" // invalid
	}

	for step := 0; in.i < len(in.b); step++ {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("step %d (policy %s): %s", step, pol, fmt.Sprintf(format, args...))
		}
		switch op := in.next(10); op {
		case 0: // SetLB with a subset of the ports
			lb, mask := lbName(), in.next(256)<<2|in.next(4)
			var ports []int32
			set := map[int32]bool{}
			for port := int32(1); port <= modelPorts; port++ {
				if mask&(1<<(port-1)) != 0 {
					ports = append(ports, port)
					set[port] = true
				}
			}
			p.SetLB(lb, ports)
			if !m.known(lb) {
				m.order = append(m.order, lb)
			}
			m.usable[lb] = set
		case 1: // RemoveLB
			lb := lbName()
			got := p.RemoveLB(lb)
			var want []string
			for s, o := range m.holder {
				if s.LB == lb {
					want = append(want, o)
					delete(m.holder, s)
					delete(m.owners, o)
				}
			}
			slices.Sort(want)
			delete(m.usable, lb)
			m.order = slices.DeleteFunc(m.order, func(s string) bool { return s == lb })
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				fail("RemoveLB(%s) owners: -want, +got:\n%s", lb, diff)
			}
		case 2: // SetBlacklist
			var lbs []string
			m.blacklist = map[string]bool{}
			mask := in.next(1 << modelLBs)
			for i := range modelLBs {
				if mask&(1<<i) != 0 {
					lb := fmt.Sprintf("lb-%d", i)
					lbs = append(lbs, lb)
					m.blacklist[lb] = true
				}
			}
			p.SetBlacklist(lbs)
		case 3: // SetPolicy
			pol = []Policy{PolicyLeastUsed, PolicyInOrder, PolicyRandom}[in.next(3)]
			p.SetPolicy(pol)
			m.policy = pol
		case 4, 5: // Allocate
			o := owner()
			got, err := p.Allocate(o)
			var wantErr string
			var okLBs []string
			switch held, ok := m.owners[o]; {
			case o == "":
				wantErr = ErrInvalid.Error()
			case ok:
				okLBs = []string{held.LB}
				if got != held {
					fail("Allocate(%s) = %v, holds %v", o, got, held)
				}
			default:
				okLBs = m.choices(func(lb string) bool { return len(m.freePorts(lb)) > 0 })
				if okLBs == nil {
					wantErr = ErrNoPortAvailable.Error()
				}
			}
			if kind(err) != wantErr {
				fail("Allocate(%q) error %v, want %q", o, err, wantErr)
			}
			if err != nil {
				break
			}
			if !slices.Contains(okLBs, got.LB) {
				fail("Allocate(%s) went to %s, want one of %v", o, got.LB, okLBs)
			}
			if _, held := m.owners[o]; !held {
				if want := m.freePorts(got.LB)[0]; got.Port != want {
					fail("Allocate(%s) took port %d on %s, lowest free is %d", o, got.Port, got.LB, want)
				}
				m.take(o, got)
			}
		case 6: // AllocateAt
			o, port := owner(), int32(in.next(modelPorts+1))
			got, err := p.AllocateAt(o, port)
			var wantErr string
			var okLBs []string
			held, holds := m.owners[o]
			switch {
			case o == "" || port == 0:
				wantErr = ErrInvalid.Error()
			case holds && held.Port == port:
				okLBs = []string{held.LB}
			case holds:
				wantErr = ErrOwnerHoldsOther.Error()
			default:
				okLBs = m.choices(func(lb string) bool {
					_, taken := m.holder[Slot{lb, port}]
					return m.usable[lb][port] && !taken
				})
				if okLBs == nil {
					wantErr = ErrNoPortAvailable.Error()
					for _, lb := range m.order {
						if m.open(lb) && m.usable[lb][port] {
							wantErr = ErrTaken.Error()
						}
					}
				}
			}
			if kind(err) != wantErr {
				fail("AllocateAt(%q, %d) error %v, want %q", o, port, err, wantErr)
			}
			if err != nil {
				break
			}
			if !slices.Contains(okLBs, got.LB) || got.Port != port {
				fail("AllocateAt(%s, %d) = %v, want port %d on one of %v", o, port, got, port, okLBs)
			}
			if !holds {
				m.take(o, got)
			}
		case 7: // Assign, sometimes to a load balancer SetLB never named
			o := owner()
			s := Slot{LB: fmt.Sprintf("lb-%d", in.next(modelLBs+2)), Port: int32(in.next(modelPorts + 1))}
			err := p.Assign(o, s)
			var wantErr string
			held, holds := m.owners[o]
			other, taken := m.holder[s]
			switch {
			case o == "" || s.Port == 0:
				wantErr = ErrInvalid.Error()
			case holds && held == s:
			case holds:
				wantErr = ErrOwnerHoldsOther.Error()
			case taken && other != o:
				wantErr = ErrTaken.Error()
			default:
				m.take(o, s)
			}
			if kind(err) != wantErr {
				fail("Assign(%q, %v) error %v, want %q", o, s, err, wantErr)
			}
		case 8: // Release
			o := owner()
			got, ok := p.Release(o)
			want, wantOK := m.owners[o]
			if got != want || ok != wantOK {
				fail("Release(%q) = %v, %v; want %v, %v", o, got, ok, want, wantOK)
			}
			delete(m.owners, o)
			delete(m.holder, want)
		case 9: // Lookup
			o := owner()
			got, ok := p.Lookup(o)
			want, wantOK := m.owners[o]
			if got != want || ok != wantOK {
				fail("Lookup(%q) = %v, %v; want %v, %v", o, got, ok, want, wantOK)
			}
		}
		if err := invariantErr(p); err != nil {
			fail("invariant: %v", err)
		}
		// Compare plainly; cmp (reflection) only to explain a difference.
		if want, got := m.stats(), p.Stats(); !sameStats(want, got) {
			fail("Stats: -model, +pool:\n%s", cmp.Diff(want, got))
		}
	}
}

func sameStats(a, b Stats) bool {
	return a.Allocated == b.Allocated && a.Free == b.Free && slices.Equal(a.LBs, b.LBs)
}

// FuzzPoolModel runs random operations on a Pool and on the model side by
// side. Under plain `go test` it runs its seed corpus: 100 pseudo-random
// programs of about 330 operations each.
func FuzzPoolModel(f *testing.F) {
	r := rand.New(rand.NewPCG(2024, 11))
	for range 100 {
		b := make([]byte, 1000)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(runModel)
}

// lastChar groups the model's owners o0…o13 by their last digit.
func lastChar(o string) string {
	if o == "" {
		return ""
	}
	return o[len(o)-1:]
}
