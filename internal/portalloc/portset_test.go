package portalloc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPortSetEdges(t *testing.T) {
	cases := map[string]struct {
		reason  string
		add     []int32
		remove  []int32
		wantMin int32
		wantAll []int32
	}{
		"Empty": {
			reason: "an empty set has no minimum",
		},
		"Extremes": {
			reason:  "the first and last ports live in the first and last words and summaries",
			add:     []int32{65535, 1},
			wantMin: 1,
			wantAll: []int32{1, 65535},
		},
		"WordBoundaries": {
			reason:  "ports either side of a 64-port and a 4096-port boundary",
			add:     []int32{4096, 4095, 64, 63},
			wantMin: 63,
			wantAll: []int32{63, 64, 4095, 4096},
		},
		"RemoveClearsSummaries": {
			reason:  "removing the only port of a word and of a summary word must let min move on",
			add:     []int32{100, 30000},
			remove:  []int32{100},
			wantMin: 30000,
			wantAll: []int32{30000},
		},
		"DuplicatesCountOnce": {
			reason:  "adding a member twice and removing a non-member change nothing",
			add:     []int32{7, 7},
			remove:  []int32{8},
			wantMin: 7,
			wantAll: []int32{7},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &portSet{}
			for _, p := range tc.add {
				s.add(p)
			}
			for _, p := range tc.remove {
				s.remove(p)
			}
			if err := setErr(s); err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			gotMin, _ := s.min()
			if diff := cmp.Diff(tc.wantMin, gotMin); diff != "" {
				t.Errorf("%s\nmin: -want, +got:\n%s", tc.reason, diff)
			}
			var all []int32
			s.each(func(p int32) { all = append(all, p) })
			if diff := cmp.Diff(tc.wantAll, all); diff != "" {
				t.Errorf("%s\neach: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPortSetAgainstMap runs random adds and removes against a map.
func TestPortSetAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := &portSet{}
	m := map[int32]bool{}
	for i := range 50000 {
		// Cluster ports in a few regions so that words fill and empty.
		p := int32(1 + r.IntN(3)*20000 + r.IntN(300))
		if r.IntN(2) == 0 {
			if s.add(p) == m[p] {
				t.Fatalf("step %d: add(%d) reported %v with member=%v", i, p, !m[p], m[p])
			}
			m[p] = true
		} else {
			if s.remove(p) != m[p] {
				t.Fatalf("step %d: remove(%d) disagrees with the map", i, p)
			}
			delete(m, p)
		}
		if i%997 == 0 {
			if err := setErr(s); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
	}
	want := make([]int32, 0, len(m))
	for p := range m {
		want = append(want, p)
	}
	slices.Sort(want)
	var got []int32
	s.each(func(p int32) { got = append(got, p) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("members: -want, +got:\n%s", diff)
	}
	if lo, ok := s.min(); !ok || lo != want[0] {
		t.Fatalf("min = %d, %v; want %d", lo, ok, want[0])
	}
}

// TestFreeAnywhere: the mask of a pool holds the ports free on a load
// balancer that takes new allocations, whichever; FreeAt agrees with
// AllocateAt; masks of two pools intersect to the ports free in both.
func TestFreeAnywhere(t *testing.T) {
	a := NewPool(PolicyLeastUsed)
	a.SetLB("lb-1", []int32{100, 101, 102})
	a.SetLB("lb-2", []int32{101, 103, 65535})
	a.SetLB("lb-3", []int32{104})
	a.SetBlacklist([]string{"lb-3"})
	if _, err := a.AllocateAt("x", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AllocateAt("y", 101); err != nil {
		t.Fatal(err)
	}
	var m PortMask
	a.FreeAnywhere(&m)
	var got []int32
	for p := int32(1); p <= maxPort; p++ {
		if m.Has(p) {
			got = append(got, p)
		}
	}
	// 100 is taken; 101 is taken on one load balancer and free on the
	// other; 104 is only on a blacklisted one.
	if want := []int32{101, 102, 103, 65535}; fmt.Sprint(got) != fmt.Sprint(want) || m.Len() != len(want) {
		t.Errorf("FreeAnywhere = %v (Len %d), want %v", got, m.Len(), want)
	}
	for port, want := range map[int32]bool{100: false, 101: true, 104: false, 65535: true, 0: false, 70000: false} {
		if got := a.FreeAt("new", port); got != want {
			t.Errorf("FreeAt(new, %d) = %t, want %t", port, got, want)
		}
	}
	if !a.FreeAt("x", 100) || a.FreeAt("x", 102) {
		t.Error("FreeAt of an owner: its own port only")
	}

	b := NewPool(PolicyInOrder)
	b.SetLB("lb-9", []int32{99, 102, 103})
	if _, err := b.AllocateAt("z", 102); err != nil { // taken: 103 is left the only common port
		t.Fatal(err)
	}
	var mb PortMask
	b.FreeAnywhere(&mb)
	m.And(&mb)
	if low, ok := m.Lowest(); !ok || low != 103 || m.Len() != 1 {
		t.Errorf("intersection: lowest %d %t, Len %d; want 103 alone", low, ok, m.Len())
	}
	m.Remove(103)
	if _, ok := m.Lowest(); ok {
		t.Error("an emptied mask has a lowest port")
	}
	m.Add(0)
	m.Add(7)
	if m.Has(0) || !m.Has(7) {
		t.Error("Add: port 0 is not a port, 7 is")
	}
}
