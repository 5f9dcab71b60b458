package portalloc

import (
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
