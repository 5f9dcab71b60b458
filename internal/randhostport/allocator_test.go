package randhostport

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestParseRange(t *testing.T) {
	if r, err := ParseRange(" 29001 - 29323 "); err != nil || r != (Range{29001, 29323}) || r.Size() != 323 {
		t.Errorf("ParseRange: %v %v", r, err)
	}
	for _, bad := range []string{"", "29001", "2-1", "0-10", "1-65536", "x-10"} {
		if _, err := ParseRange(bad); err == nil {
			t.Errorf("ParseRange(%q): want an error", bad)
		}
	}
}

// TestTakeLeastUsedLowestFirst: a fresh range hands out its ports in
// order; a counted port is passed over until the others catch up; one Pod
// never gets a port twice.
func TestTakeLeastUsedLowestFirst(t *testing.T) {
	a := NewAllocator(Range{100, 104})
	if got, _ := a.Take(2); !slices.Equal(got, []int32{100, 101}) {
		t.Errorf("first Pod: %v, want [100 101]", got)
	}
	a.Add(1, 102, 999) // 999 is out of the range: ignored
	if got, _ := a.Take(2); !slices.Equal(got, []int32{103, 104}) {
		t.Errorf("second Pod: %v, want the unused [103 104]", got)
	}
	a.Add(-1, 100) // a Pod of 100 went away
	if got, _ := a.Take(1); !slices.Equal(got, []int32{100}) {
		t.Errorf("third Pod: %v, want the freed 100", got)
	}
	if got, _ := a.Take(5); len(slices.Compact(slices.Sorted(slices.Values(got)))) != 5 {
		t.Errorf("five ports of five: %v, want all distinct", got)
	}
	if _, err := a.Take(6); err == nil {
		t.Error("six ports of a range of five: want an error")
	}
	a.Add(-10, 101)
	if c := a.Count(101); c != 0 {
		t.Errorf("count below zero: %d", c)
	}
}

// TestBalanced1000Pods: 1000 Pods of the seed's example (two ports each)
// on a range of 323 ports keep every port's count within one of every
// other's, after each Pod; Pods going away and coming back do not pile
// Pods on any port either.
func TestBalanced1000Pods(t *testing.T) {
	a := NewAllocator(Range{29001, 29323})
	var pods [][]int32
	for i := range 1000 {
		ports, err := a.Take(2)
		if err != nil {
			t.Fatal(err)
		}
		if ports[0] == ports[1] {
			t.Fatalf("Pod %d got port %d twice", i, ports[0])
		}
		pods = append(pods, ports)
		if lo, hi := a.Spread(); hi-lo > 1 {
			t.Fatalf("after %d Pods: counts from %d to %d, want max - min <= 1", i+1, lo, hi)
		}
	}
	// 2000 ports over 323: 61 ports hold 7 Pods, the other 262 hold 6.
	if lo, hi := a.Spread(); lo != 6 || hi != 7 {
		t.Errorf("counts from %d to %d, want 6 to 7", lo, hi)
	}

	// Churn: 300 random Pods go away, 300 come. Every new Pod takes ports
	// of the least count, so the spread never grows beyond what the
	// deletions made, and ends within one once the holes are filled.
	rng := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // a reproducible test
	for range 300 {
		i := rng.IntN(len(pods))
		a.Add(-1, pods[i]...)
		pods = slices.Delete(pods, i, i+1)
	}
	for range 300 {
		lo, _ := a.Spread()
		ports, _ := a.Take(2)
		if c := a.Count(ports[0]); c != lo+1 {
			t.Fatalf("a new Pod took port %d holding %d Pods, want one of the least used (%d)", ports[0], c-1, lo)
		}
		pods = append(pods, ports)
	}
	if lo, hi := a.Spread(); hi-lo > 1 {
		t.Errorf("after churn: counts from %d to %d, want max - min <= 1", lo, hi)
	}
}

func BenchmarkTake(b *testing.B) {
	a := NewAllocator(DefaultRange())
	for b.Loop() {
		_, _ = a.Take(2)
	}
}
