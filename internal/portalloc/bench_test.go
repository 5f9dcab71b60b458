package portalloc

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

const (
	benchLBs   = 20
	benchPorts = 5000 // per load balancer: 100 000 slots
	benchFull  = benchLBs * benchPorts * 9 / 10
)

func benchPool(b *testing.B, pol Policy) (*Pool, []string) {
	b.Helper()
	p := NewPool(pol, WithRand(rand.New(rand.NewPCG(1, 1))))
	ports := make([]int32, benchPorts)
	for i := range ports {
		ports[i] = int32(10000 + i)
	}
	for i := range benchLBs {
		p.SetLB(fmt.Sprintf("lb-%02d", i), ports)
	}
	owners := make([]string, benchFull)
	for i := range owners {
		owners[i] = fmt.Sprintf("ns/pod-%d/8000/TCP", i)
		if _, err := p.Allocate(owners[i]); err != nil {
			b.Fatal(err)
		}
	}
	return p, owners
}

// BenchmarkAllocateRelease measures one Release plus one Allocate on a pool
// of 100 000 slots (20 load balancers × 5000 ports) kept 90 % full: each
// iteration frees the slot of the owner allocated longest ago and allocates
// it again, so the free ports wander over the whole pool.
func BenchmarkAllocateRelease(b *testing.B) {
	for _, pol := range []Policy{PolicyLeastUsed, PolicyInOrder, PolicyRandom} {
		b.Run(string(pol), func(b *testing.B) {
			p, owners := benchPool(b, pol)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				o := owners[i]
				if _, ok := p.Release(o); !ok {
					b.Fatal("release failed")
				}
				if _, err := p.Allocate(o); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(owners) {
					i = 0
				}
			}
		})
	}
}

// BenchmarkAllocateAtRelease is the ordinal strategy's pair: release a slot
// and take a given port, on 100 000 slots 90 % full.
func BenchmarkAllocateAtRelease(b *testing.B) {
	p, owners := benchPool(b, PolicyLeastUsed)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		o := owners[i]
		s, _ := p.Release(o)
		if _, err := p.AllocateAt(o, s.Port); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(owners) {
			i = 0
		}
	}
}

// BenchmarkAssignRebuild rebuilds a pool of 100 000 owners from scratch, as
// the provider does from PodAddress status at start-up: either the load
// balancers are published first, or the owners are recorded before the
// PortPool controller has published anything.
func BenchmarkAssignRebuild(b *testing.B) {
	const n = benchLBs * benchPorts
	ports := make([]int32, benchPorts)
	for i := range ports {
		ports[i] = int32(10000 + i)
	}
	owners := make([]string, n)
	slots := make([]Slot, n)
	for i := range owners {
		owners[i] = fmt.Sprintf("ns/pod-%d/8000/TCP", i)
		slots[i] = Slot{LB: fmt.Sprintf("lb-%02d", i%benchLBs), Port: ports[i/benchLBs]}
	}
	for _, lbsFirst := range []bool{true, false} {
		name := "LBsFirst"
		if !lbsFirst {
			name = "OwnersFirst"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p := NewPool(PolicyLeastUsed)
				if lbsFirst {
					for i := range benchLBs {
						p.SetLB(fmt.Sprintf("lb-%02d", i), ports)
					}
				}
				for i, o := range owners {
					if err := p.Assign(o, slots[i]); err != nil {
						b.Fatal(err)
					}
				}
				if !lbsFirst {
					for i := range benchLBs {
						p.SetLB(fmt.Sprintf("lb-%02d", i), ports)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/owner")
		})
	}
}
