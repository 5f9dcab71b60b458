package portalloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// step is one call on a Pool in a scripted test.
type step struct {
	do    string // setlb, remove, blacklist, policy, alloc, at, assign, release, lookup
	owner string
	lb    string
	port  int32
	ports []int32
	lbs   []string
}

// outcome is what a step returned; fields a call does not return stay zero.
type outcome struct {
	Slot   Slot
	OK     bool
	Err    error
	Owners []string
}

func setLB(lb string, ports ...int32) step  { return step{do: "setlb", lb: lb, ports: ports} }
func removeLB(lb string) step               { return step{do: "remove", lb: lb} }
func blacklist(lbs ...string) step          { return step{do: "blacklist", lbs: lbs} }
func policy(p Policy) step                  { return step{do: "policy", lb: string(p)} }
func alloc(owner string) step               { return step{do: "alloc", owner: owner} }
func allocAt(owner string, port int32) step { return step{do: "at", owner: owner, port: port} }
func assign(owner, lb string, port int32) step {
	return step{do: "assign", owner: owner, lb: lb, port: port}
}
func release(owner string) step { return step{do: "release", owner: owner} }
func lookup(owner string) step  { return step{do: "lookup", owner: owner} }

func run(p *Pool, s step) outcome {
	switch s.do {
	case "setlb":
		p.SetLB(s.lb, s.ports)
	case "remove":
		return outcome{Owners: p.RemoveLB(s.lb)}
	case "blacklist":
		p.SetBlacklist(s.lbs)
	case "policy":
		p.SetPolicy(Policy(s.lb))
	case "alloc":
		sl, err := p.Allocate(s.owner)
		return outcome{Slot: sl, Err: err}
	case "at":
		sl, err := p.AllocateAt(s.owner, s.port)
		return outcome{Slot: sl, Err: err}
	case "assign":
		return outcome{Err: p.Assign(s.owner, Slot{LB: s.lb, Port: s.port})}
	case "release":
		sl, ok := p.Release(s.owner)
		return outcome{Slot: sl, OK: ok}
	case "lookup":
		sl, ok := p.Lookup(s.owner)
		return outcome{Slot: sl, OK: ok}
	default:
		panic("unknown step " + s.do)
	}
	return outcome{}
}

func slot(lb string, port int32) outcome { return outcome{Slot: Slot{LB: lb, Port: port}} }
func found(lb string, port int32) outcome {
	return outcome{Slot: Slot{LB: lb, Port: port}, OK: true}
}
func failed(err error) outcome { return outcome{Err: err} }

// none is the outcome of a call that returns nothing.
var none = outcome{}

type scriptCase struct {
	reason    string
	policy    Policy
	steps     []step
	want      []outcome
	wantStats *Stats
}

func runScripts(t *testing.T, cases map[string]scriptCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if len(tc.steps) != len(tc.want) {
				t.Fatalf("bad case: %d steps, %d outcomes", len(tc.steps), len(tc.want))
			}
			p := NewPool(tc.policy, WithRand(rand.New(rand.NewPCG(7, 7))))
			got := make([]outcome, len(tc.steps))
			for i, s := range tc.steps {
				got[i] = run(p, s)
				checkInvariants(t, p)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateErrors(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\noutcomes: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.wantStats != nil {
				if diff := cmp.Diff(*tc.wantStats, p.Stats(), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s\nstats: -want, +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}

func TestAllocate(t *testing.T) {
	runScripts(t, map[string]scriptCase{
		"LeastUsedAlternates": {
			reason: "LeastUsed (the default) spreads over load balancers, ties going to the one given first",
			steps:  []step{setLB("lb-a", 1, 2, 3), setLB("lb-b", 1, 2, 3), alloc("o1"), alloc("o2"), alloc("o3"), alloc("o4")},
			want:   []outcome{none, none, slot("lb-a", 1), slot("lb-b", 1), slot("lb-a", 2), slot("lb-b", 2)},
		},
		"LeastUsedCountsAssignedAndUnusable": {
			reason: "owners recorded by Assign count as used, even on a port that is not usable",
			policy: PolicyLeastUsed,
			steps: []step{setLB("lb-a", 1, 2, 3), setLB("lb-b", 1, 2, 3),
				assign("x", "lb-a", 1), assign("y", "lb-a", 99), alloc("o1"), alloc("o2"), alloc("o3")},
			want: []outcome{none, none, none, none, slot("lb-b", 1), slot("lb-b", 2), slot("lb-a", 2)},
		},
		"LeastUsedSkipsFull": {
			reason: "a full load balancer is not picked even though it is least used",
			steps:  []step{setLB("lb-a", 1), setLB("lb-b", 1, 2, 3), alloc("o1"), alloc("o2"), alloc("o3")},
			want:   []outcome{none, none, slot("lb-a", 1), slot("lb-b", 1), slot("lb-b", 2)},
		},
		"InOrderFillsFirst": {
			reason: "InOrder fills the first load balancer before the second",
			policy: PolicyInOrder,
			steps:  []step{setLB("lb-a", 1, 2), setLB("lb-b", 1, 2), alloc("o1"), alloc("o2"), alloc("o3")},
			want:   []outcome{none, none, slot("lb-a", 1), slot("lb-a", 2), slot("lb-b", 1)},
		},
		"InOrderKeepsFirstPlace": {
			reason: "republishing a load balancer's ports does not move it in the order",
			policy: PolicyInOrder,
			steps:  []step{setLB("lb-b", 1), setLB("lb-a", 1), setLB("lb-b", 1, 2), alloc("o1"), alloc("o2"), alloc("o3")},
			want:   []outcome{none, none, none, slot("lb-b", 1), slot("lb-b", 2), slot("lb-a", 1)},
		},
		"InOrderRefillsReleased": {
			reason: "a slot released on an earlier load balancer is used before later ones",
			policy: PolicyInOrder,
			steps:  []step{setLB("lb-a", 1), setLB("lb-b", 1, 2), alloc("o1"), alloc("o2"), release("o1"), alloc("o3")},
			want:   []outcome{none, none, slot("lb-a", 1), slot("lb-b", 1), found("lb-a", 1), slot("lb-a", 1)},
		},
		"LowestPortFirst": {
			reason: "the lowest free port is taken, whatever order SetLB listed them in",
			steps:  []step{setLB("lb-a", 30010, 30000, 30005), alloc("o1"), alloc("o2"), alloc("o3")},
			want:   []outcome{none, slot("lb-a", 30000), slot("lb-a", 30005), slot("lb-a", 30010)},
		},
		"Idempotent": {
			reason: "an owner asking again gets its slot back and no second one",
			steps:  []step{setLB("lb-a", 1, 2), alloc("o1"), alloc("o1"), alloc("o2")},
			want:   []outcome{none, slot("lb-a", 1), slot("lb-a", 1), slot("lb-a", 2)},
		},
		"IdempotentOnBlacklisted": {
			reason: "an owner keeps its slot on a load balancer blacklisted since",
			steps:  []step{setLB("lb-a", 1, 2), alloc("o1"), blacklist("lb-a"), alloc("o1"), alloc("o2")},
			want:   []outcome{none, slot("lb-a", 1), none, slot("lb-a", 1), failed(ErrNoPortAvailable)},
		},
		"ExhaustedThenReleased": {
			reason: "a full pool says ErrNoPortAvailable until a slot is released",
			steps:  []step{setLB("lb-a", 1), alloc("o1"), alloc("o2"), release("o1"), alloc("o2"), release("o1")},
			want:   []outcome{none, slot("lb-a", 1), failed(ErrNoPortAvailable), found("lb-a", 1), slot("lb-a", 1), none},
		},
		"EmptyPool": {
			reason: "a pool without load balancers has nothing to give",
			steps:  []step{alloc("o1")},
			want:   []outcome{failed(ErrNoPortAvailable)},
		},
		"EmptyOwner": {
			reason: "an empty owner would make every caller share one slot",
			steps:  []step{setLB("lb-a", 1), alloc("")},
			want:   []outcome{none, failed(ErrInvalid)},
		},
		"PolicyChangeApplies": {
			reason: "SetPolicy changes where the next allocation goes",
			policy: PolicyInOrder,
			steps:  []step{setLB("lb-a", 1, 2), setLB("lb-b", 1, 2), alloc("o1"), policy(PolicyLeastUsed), alloc("o2"), policy(PolicyInOrder), alloc("o3")},
			want:   []outcome{none, none, slot("lb-a", 1), none, slot("lb-b", 1), none, slot("lb-a", 2)},
		},
		"UnknownPolicyIsLeastUsed": {
			reason: "an unknown policy falls back to LeastUsed",
			policy: "Sideways",
			steps:  []step{setLB("lb-a", 1, 2), setLB("lb-b", 1, 2), alloc("o1"), alloc("o2")},
			want:   []outcome{none, none, slot("lb-a", 1), slot("lb-b", 1)},
		},
	})
}

func TestAllocateAt(t *testing.T) {
	runScripts(t, map[string]scriptCase{
		"InOrderFirstWhereFree": {
			reason: "InOrder takes the port on the first load balancer where it is free",
			policy: PolicyInOrder,
			steps:  []step{setLB("lb-a", 1, 2), setLB("lb-b", 1, 2), allocAt("o1", 2), allocAt("o2", 2), allocAt("o3", 1)},
			want:   []outcome{none, none, slot("lb-a", 2), slot("lb-b", 2), slot("lb-a", 1)},
		},
		"LeastUsedPicksLeastUsed": {
			reason: "LeastUsed takes the port on the least used load balancer that has it free",
			steps:  []step{setLB("lb-a", 1, 2), setLB("lb-b", 1, 2), alloc("o1"), allocAt("o2", 2)},
			want:   []outcome{none, none, slot("lb-a", 1), slot("lb-b", 2)},
		},
		"TakenEverywhere": {
			reason: "the port exists but every load balancer gave it away",
			steps:  []step{setLB("lb-a", 1, 2), allocAt("o1", 1), allocAt("o2", 1)},
			want:   []outcome{none, slot("lb-a", 1), failed(ErrTaken)},
		},
		"NoListener": {
			reason: "no load balancer has a listener on the port",
			steps:  []step{setLB("lb-a", 1, 2), allocAt("o1", 3)},
			want:   []outcome{none, failed(ErrNoPortAvailable)},
		},
		"OnlyOnBlacklisted": {
			reason: "the only load balancer with the port free is blacklisted",
			steps:  []step{setLB("lb-a", 1), setLB("lb-b", 2), blacklist("lb-a"), allocAt("o1", 1), allocAt("o2", 2)},
			want:   []outcome{none, none, none, failed(ErrNoPortAvailable), slot("lb-b", 2)},
		},
		"SamePortAgain": {
			reason: "an owner asking again for its port gets its slot back",
			steps:  []step{setLB("lb-a", 1, 2), allocAt("o1", 2), allocAt("o1", 2)},
			want:   []outcome{none, slot("lb-a", 2), slot("lb-a", 2)},
		},
		"OtherPort": {
			reason: "an owner that holds another port must release it first",
			steps:  []step{setLB("lb-a", 1, 2), allocAt("o1", 2), allocAt("o1", 1), alloc("o1")},
			want:   []outcome{none, slot("lb-a", 2), failed(ErrOwnerHoldsOther), slot("lb-a", 2)},
		},
		"InvalidPort": {
			reason: "ports outside 1-65535 are refused",
			steps:  []step{setLB("lb-a", 1), allocAt("o1", 0), allocAt("o1", -3), allocAt("o1", 65536)},
			want:   []outcome{none, failed(ErrInvalid), failed(ErrInvalid), failed(ErrInvalid)},
		},
		"MixesWithDynamic": {
			reason: "a port taken by AllocateAt is not handed out by Allocate",
			steps:  []step{setLB("lb-a", 1, 2, 3), allocAt("o1", 1), alloc("o2")},
			want:   []outcome{none, slot("lb-a", 1), slot("lb-a", 2)},
		},
	})
}

func TestAssign(t *testing.T) {
	runScripts(t, map[string]scriptCase{
		"BeforeSetLB": {
			reason: "a slot recorded before its load balancer is known stays owned when SetLB lists it",
			steps: []step{assign("o1", "lb-a", 1), setLB("lb-a", 1, 2), alloc("o2"), alloc("o3"),
				lookup("o1")},
			want: []outcome{none, none, slot("lb-a", 2), failed(ErrNoPortAvailable), found("lb-a", 1)},
		},
		"UnknownLBInStats": {
			reason: "a load balancer only Assign named shows in Stats, after the known ones",
			steps:  []step{setLB("lb-z", 5), assign("o1", "lb-y", 7), assign("o2", "lb-x", 7)},
			want:   []outcome{none, none, none},
			wantStats: &Stats{
				LBs: []LBStats{
					{LB: "lb-z", Free: 1, Usable: 1, Known: true},
					{LB: "lb-x", Allocated: 1},
					{LB: "lb-y", Allocated: 1},
				},
				Allocated: 2, Free: 1,
			},
		},
		"ReleaseForgetsUnknownLB": {
			reason:    "an unknown load balancer whose last owner left disappears",
			steps:     []step{assign("o1", "lb-y", 7), release("o1")},
			want:      []outcome{none, found("lb-y", 7)},
			wantStats: &Stats{},
		},
		"Conflict": {
			reason: "a slot another owner holds cannot be assigned",
			steps:  []step{setLB("lb-a", 1), alloc("o1"), assign("o2", "lb-a", 1), assign("o3", "lb-b", 9), assign("o4", "lb-b", 9)},
			want:   []outcome{none, slot("lb-a", 1), failed(ErrTaken), none, failed(ErrTaken)},
		},
		"SameSlotTwice": {
			reason: "assigning what the owner holds is a no-op, whether from Allocate or Assign",
			steps:  []step{setLB("lb-a", 1), alloc("o1"), assign("o1", "lb-a", 1), assign("o2", "lb-b", 3), assign("o2", "lb-b", 3)},
			want:   []outcome{none, slot("lb-a", 1), none, none, none},
		},
		"OwnerHoldsOther": {
			reason: "an owner holds one slot; a second is refused rather than silently moved",
			steps:  []step{assign("o1", "lb-a", 1), assign("o1", "lb-a", 2), lookup("o1")},
			want:   []outcome{none, failed(ErrOwnerHoldsOther), found("lb-a", 1)},
		},
		"IgnoresBlacklist": {
			reason: "recording existing ownership is not a new allocation",
			steps:  []step{blacklist("lb-a"), setLB("lb-a", 1, 2), assign("o1", "lb-a", 2), alloc("o2")},
			want:   []outcome{none, none, none, failed(ErrNoPortAvailable)},
		},
		"Invalid": {
			reason: "empty owner or port out of range",
			steps:  []step{assign("", "lb-a", 1), assign("o1", "lb-a", 0), assign("o1", "lb-a", 70000)},
			want:   []outcome{failed(ErrInvalid), failed(ErrInvalid), failed(ErrInvalid)},
		},
	})
}

func TestSetLB(t *testing.T) {
	runScripts(t, map[string]scriptCase{
		"ShrinkKeepsOwners": {
			reason: "a port whose listener went away stays with its owner, and is not free after release",
			steps: []step{setLB("lb-a", 1, 2), alloc("o1"), setLB("lb-a", 2), lookup("o1"), release("o1"),
				alloc("o2"), alloc("o3")},
			want: []outcome{none, slot("lb-a", 1), none, found("lb-a", 1), found("lb-a", 1),
				slot("lb-a", 2), failed(ErrNoPortAvailable)},
		},
		"ShrinkRemovesFree": {
			reason: "a free port no longer listed is not handed out",
			steps:  []step{setLB("lb-a", 1, 2), setLB("lb-a", 2), alloc("o1"), alloc("o2")},
			want:   []outcome{none, none, slot("lb-a", 2), failed(ErrNoPortAvailable)},
		},
		"GrowFreesNewPorts": {
			reason: "ports added later become free; a re-listed owned port stays owned",
			steps: []step{setLB("lb-a", 1), alloc("o1"), setLB("lb-a"), setLB("lb-a", 1, 2, 3),
				alloc("o2"), alloc("o3"), alloc("o4")},
			want: []outcome{none, slot("lb-a", 1), none, none, slot("lb-a", 2), slot("lb-a", 3), failed(ErrNoPortAvailable)},
		},
		"InvalidAndDuplicatePortsIgnored": {
			reason: "ports outside 1-65535 and repeats do not become slots",
			steps:  []step{setLB("lb-a", 0, -1, 65536, 4, 4)},
			want:   []outcome{none},
			wantStats: &Stats{
				LBs: []LBStats{{LB: "lb-a", Free: 1, Usable: 1, Known: true}}, Free: 1,
			},
		},
	})
}

func TestRemoveLB(t *testing.T) {
	runScripts(t, map[string]scriptCase{
		"ReturnsOwners": {
			reason: "the owners of a removed load balancer are returned, sorted, and lose their slots",
			policy: PolicyInOrder,
			steps: []step{setLB("lb-a", 1, 2), setLB("lb-b", 1), alloc("o2"), alloc("o1"), alloc("o3"),
				removeLB("lb-a"), lookup("o1"), lookup("o3"), alloc("o4")},
			want: []outcome{none, none, slot("lb-a", 1), slot("lb-a", 2), slot("lb-b", 1),
				{Owners: []string{"o1", "o2"}}, none, found("lb-b", 1), failed(ErrNoPortAvailable)},
		},
		"IncludesUnusableAndUnknown": {
			reason:    "owners of ports no longer listed, and of load balancers only Assign named, are returned too",
			steps:     []step{setLB("lb-a", 1), alloc("o1"), setLB("lb-a"), assign("o2", "lb-z", 4), removeLB("lb-a"), removeLB("lb-z")},
			want:      []outcome{none, slot("lb-a", 1), none, none, {Owners: []string{"o1"}}, {Owners: []string{"o2"}}},
			wantStats: &Stats{},
		},
		"ReaddedGoesLast": {
			reason: "a load balancer removed and added again joins the end of the order",
			policy: PolicyInOrder,
			steps:  []step{setLB("lb-a", 1), setLB("lb-b", 1), removeLB("lb-a"), setLB("lb-a", 1), alloc("o1")},
			want:   []outcome{none, none, none, none, slot("lb-b", 1)},
		},
		"Unknown": {
			reason: "removing a load balancer the pool never had is harmless",
			steps:  []step{removeLB("lb-q")},
			want:   []outcome{none},
		},
	})
}

func TestBlacklist(t *testing.T) {
	runScripts(t, map[string]scriptCase{
		"NoNewAllocations": {
			reason: "a blacklisted load balancer gets no new owners; existing ones stay; Stats shows it with no free slots",
			steps:  []step{setLB("lb-a", 1, 2), setLB("lb-b", 1), alloc("o1"), blacklist("lb-a"), alloc("o2"), alloc("o3")},
			want:   []outcome{none, none, slot("lb-a", 1), none, slot("lb-b", 1), failed(ErrNoPortAvailable)},
			wantStats: &Stats{
				LBs: []LBStats{
					{LB: "lb-a", Allocated: 1, Usable: 2, Blacklisted: true, Known: true},
					{LB: "lb-b", Allocated: 1, Usable: 1, Known: true},
				},
				Allocated: 2,
			},
		},
		"AppliesToLaterLB": {
			reason: "a name blacklisted before SetLB adds it is blacklisted on arrival",
			steps:  []step{blacklist("lb-b"), setLB("lb-a", 1), setLB("lb-b", 1, 2), alloc("o1"), alloc("o2")},
			want:   []outcome{none, none, none, slot("lb-a", 1), failed(ErrNoPortAvailable)},
		},
		"Lifted": {
			reason: "replacing the blacklist with an empty one makes the load balancer eligible again",
			steps:  []step{setLB("lb-a", 1), blacklist("lb-a"), alloc("o1"), blacklist(), alloc("o1")},
			want:   []outcome{none, none, failed(ErrNoPortAvailable), none, slot("lb-a", 1)},
		},
	})
}

func TestRandomPolicy(t *testing.T) {
	p := NewPool(PolicyRandom, WithRand(rand.New(rand.NewPCG(42, 42))))
	const lbs, perLB, draws = 4, 10000, 8000
	ports := make([]int32, perLB)
	for i := range ports {
		ports[i] = int32(10000 + i)
	}
	for i := range lbs {
		p.SetLB(fmt.Sprintf("lb-%d", i), ports)
	}
	// A full load balancer and a blacklisted one must never be drawn.
	p.SetLB("lb-full", []int32{1})
	if err := p.Assign("squatter", Slot{LB: "lb-full", Port: 1}); err != nil {
		t.Fatal(err)
	}
	p.SetLB("lb-banned", ports)
	p.SetBlacklist([]string{"lb-banned"})

	count := map[string]int{}
	for i := range draws {
		s, err := p.Allocate(fmt.Sprintf("o%d", i))
		if err != nil {
			t.Fatal(err)
		}
		count[s.LB]++
	}
	checkInvariants(t, p)
	// Uniform over the four eligible load balancers: expected 2000 each,
	// standard deviation about 39; 200 is over five of them.
	for i := range lbs {
		lb := fmt.Sprintf("lb-%d", i)
		if c := count[lb]; c < draws/lbs-200 || c > draws/lbs+200 {
			t.Errorf("%s drawn %d times of %d, want about %d: %v", lb, c, draws, draws/lbs, count)
		}
	}
	if count["lb-full"]+count["lb-banned"] != 0 {
		t.Errorf("ineligible load balancers were drawn: %v", count)
	}

	// AllocateAt under Random draws among the load balancers with that
	// port free.
	at := map[string]int{}
	for i := range 40 {
		owner := fmt.Sprintf("at%d", i)
		s, err := p.AllocateAt(owner, 19999)
		switch {
		case i < lbs && err != nil:
			t.Fatalf("AllocateAt #%d: %v", i, err)
		case i >= lbs && err == nil:
			t.Fatalf("AllocateAt #%d got %v; port 19999 exists on only %d load balancers", i, s, lbs)
		}
		at[s.LB]++
	}
	if len(at) != lbs+1 { // the four, and "" for the failures
		t.Errorf("AllocateAt spread = %v, want each load balancer once", at)
	}

	// Over many ports, AllocateAt spreads uniformly too.
	spread := map[string]int{}
	for i := range 4000 {
		s, err := p.AllocateAt(fmt.Sprintf("spread%d", i), int32(14000+i))
		if err != nil {
			t.Fatal(err)
		}
		spread[s.LB]++
	}
	for i := range lbs {
		// Expected 1000, standard deviation about 27.
		if c := spread[fmt.Sprintf("lb-%d", i)]; c < 850 || c > 1150 {
			t.Errorf("AllocateAt spread = %v, want about 1000 each", spread)
			break
		}
	}
}

// TestRandomIsRepeatable proves the injected source decides: two pools fed
// the same seed make the same choices.
func TestRandomIsRepeatable(t *testing.T) {
	draw := func() []Slot {
		p := NewPool(PolicyRandom, WithRand(rand.New(rand.NewPCG(3, 4))))
		for i := range 5 {
			p.SetLB(fmt.Sprintf("lb-%d", i), []int32{1, 2, 3, 4})
		}
		var out []Slot
		for i := range 12 {
			s, err := p.Allocate(fmt.Sprint(i))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	a, b := draw(), draw()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different draws: -first, +second:\n%s", diff)
	}
	lbs := map[string]bool{}
	for _, s := range a {
		lbs[s.LB] = true
	}
	if len(lbs) < 3 {
		t.Fatalf("12 random draws over 5 load balancers used only %v", lbs)
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	a, created := r.Pool("ns/a", PolicyInOrder)
	if !created {
		t.Fatal("first Pool call must create")
	}
	again, created := r.Pool("ns/a", PolicyRandom)
	if created || again != a {
		t.Fatal("second Pool call must return the same pool")
	}
	// The policy given on creation sticks: InOrder fills lb-1 first.
	a.SetLB("lb-1", []int32{1, 2})
	a.SetLB("lb-2", []int32{1, 2})
	for _, o := range []string{"x", "y"} {
		if s, _ := a.Allocate(o); s.LB != "lb-1" {
			t.Fatalf("%s went to %v; the existing pool's InOrder policy must hold", o, s)
		}
	}
	r.Pool("ns/c", "")
	r.Pool("ns/b", "")
	if diff := cmp.Diff([]string{"ns/a", "ns/b", "ns/c"}, r.Keys()); diff != "" {
		t.Errorf("Keys: -want, +got:\n%s", diff)
	}
	if got, ok := r.Get("ns/b"); !ok || got == nil {
		t.Error("Get of an existing key failed")
	}
	r.Delete("ns/a")
	if _, ok := r.Get("ns/a"); ok {
		t.Error("deleted key still there")
	}
	fresh, created := r.Pool("ns/a", "")
	if !created || fresh == a {
		t.Error("a deleted key must get a fresh pool")
	}
	if _, ok := fresh.Lookup("x"); ok {
		t.Error("a fresh pool must not know the old owners")
	}
}

// TestLBStats: one load balancer's usage is the entry Stats lists for it,
// after allocations and a blacklist; an unknown one is not found.
func TestLBStats(t *testing.T) {
	p := NewPool(PolicyLeastUsed)
	p.SetLB("lb-a", []int32{1, 2, 3})
	p.SetLB("lb-b", []int32{1})
	for _, o := range []string{"o1", "o2", "o3"} {
		if _, err := p.Allocate(o); err != nil {
			t.Fatal(err)
		}
	}
	p.SetBlacklist([]string{"lb-b"})
	for _, want := range p.Stats().LBs {
		got, ok := p.LBStats(want.LB)
		if !ok || got != want {
			t.Errorf("LBStats(%s) = %+v, %v; Stats lists %+v", want.LB, got, ok, want)
		}
	}
	if got, _ := p.LBStats("lb-a"); got.Allocated != 2 || got.Free != 1 {
		t.Errorf("lb-a: %+v, want 2 allocated and 1 free", got)
	}
	if _, ok := p.LBStats("lb-c"); ok {
		t.Error("LBStats of an unknown load balancer: found")
	}
}

func TestGroupLimit(t *testing.T) {
	ns := func(o string) string { return strings.SplitN(o, "/", 2)[0] }
	p := NewPool(PolicyLeastUsed, WithGroups(ns))
	p.SetLB("lb-1", []int32{1, 2, 3, 4, 5})
	p.SetGroupLimit(2, "")
	for _, o := range []string{"a/1", "a/2", "b/1"} {
		if _, err := p.Allocate(o); err != nil {
			t.Fatalf("Allocate(%s): %v", o, err)
		}
	}
	if _, err := p.Allocate("a/3"); !errors.Is(err, ErrGroupFull) {
		t.Fatalf("a third slot of group a: err = %v, want ErrGroupFull", err)
	}
	if _, err := p.AllocateAt("a/3", 5); !errors.Is(err, ErrGroupFull) {
		t.Fatalf("AllocateAt of a third slot of group a: err = %v, want ErrGroupFull", err)
	}
	if s, err := p.Allocate("a/1"); err != nil || s.Port != 1 {
		t.Fatalf("an owner of a full group asking again: %v, %v; want its slot", s, err)
	}
	// Assign records what statuses hold, beyond the limit.
	if err := p.Assign("a/4", Slot{LB: "lb-1", Port: 4}); err != nil {
		t.Fatal(err)
	}
	if n := p.GroupSize("a"); n != 3 {
		t.Fatalf("GroupSize(a) = %d, want 3", n)
	}
	p.Release("a/1")
	p.Release("a/2")
	if _, err := p.Allocate("a/3"); err != nil {
		t.Fatalf("group a below its limit again: %v", err)
	}
	if lost := p.RemoveLB("lb-1"); len(lost) != 3 {
		t.Fatalf("RemoveLB lost %v", lost)
	}
	if p.GroupSize("a") != 0 || p.GroupSize("b") != 0 {
		t.Fatalf("groups after RemoveLB: a=%d b=%d", p.GroupSize("a"), p.GroupSize("b"))
	}
	p.SetGroupLimit(0, "")
	p.SetLB("lb-1", []int32{1, 2, 3})
	for _, o := range []string{"a/1", "a/2", "a/3"} {
		if _, err := p.Allocate(o); err != nil {
			t.Fatalf("no limit: Allocate(%s): %v", o, err)
		}
	}
	checkInvariants(t, p)
}

// TestGroupLimitExempt: the exempt group (a shared pool's own namespace)
// is not bounded; the others are.
func TestGroupLimitExempt(t *testing.T) {
	ns := func(o string) string { return strings.SplitN(o, "/", 2)[0] }
	p := NewPool(PolicyLeastUsed, WithGroups(ns))
	p.SetLB("lb-1", []int32{1, 2, 3, 4, 5})
	p.SetGroupLimit(1, "owner")
	for _, o := range []string{"owner/1", "owner/2", "owner/3", "b/1"} {
		if _, err := p.Allocate(o); err != nil {
			t.Fatalf("Allocate(%s): %v", o, err)
		}
	}
	if _, err := p.Allocate("b/2"); !errors.Is(err, ErrGroupFull) {
		t.Fatalf("a second slot of group b: err = %v, want ErrGroupFull", err)
	}
	checkInvariants(t, p)
}

// TestReleaseOwners: every owner under the prefix is freed, no other.
func TestReleaseOwners(t *testing.T) {
	p := NewPool(PolicyRandom)
	p.SetLB("lb-a", []int32{1, 2, 3})
	for _, o := range []string{"ns/gs-0#7777/TCP", "ns/gs-0#7778/UDP", "ns/gs-00#7777/TCP"} {
		if _, err := p.Allocate(o); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.ReleaseOwners("ns/gs-0#"); n != 2 {
		t.Errorf("ReleaseOwners freed %d, want 2", n)
	}
	for o, want := range map[string]bool{"ns/gs-0#7777/TCP": false, "ns/gs-0#7778/UDP": false, "ns/gs-00#7777/TCP": true} {
		if _, ok := p.Lookup(o); ok != want {
			t.Errorf("%s holds a slot: %v, want %v", o, ok, want)
		}
	}
	if n := p.ReleaseOwners("other/"); n != 0 {
		t.Errorf("ReleaseOwners of no owner freed %d", n)
	}
}
