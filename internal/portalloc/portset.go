package portalloc

import "math/bits"

// The port space is fixed (0-65535), so a set of ports is a bitmap of 1024
// words with two summary levels above it. Each level has at most 64 entries,
// so add, remove and "lowest member" are a handful of word operations,
// whatever the number of ports in the set.
const (
	maxPort = 65535
	nWords  = (maxPort + 1) / 64 // 1024 words of ports
	nMid    = nWords / 64        // 16 words saying which port words are non-empty
)

// portSet is a set of ports. Callers keep ports within 1-65535.
type portSet struct {
	words [nWords]uint64
	mid   [nMid]uint64 // bit w%64 of mid[w/64]: words[w] != 0
	top   uint64       // bit m: mid[m] != 0
	n     int
}

func (s *portSet) has(p int32) bool {
	return s.words[p>>6]&(1<<(uint(p)&63)) != 0
}

// add reports whether p was not in the set before.
func (s *portSet) add(p int32) bool {
	w := p >> 6
	bit := uint64(1) << (uint(p) & 63)
	if s.words[w]&bit != 0 {
		return false
	}
	if s.words[w] == 0 {
		s.mid[w>>6] |= 1 << (uint(w) & 63)
		s.top |= 1 << uint(w>>6)
	}
	s.words[w] |= bit
	s.n++
	return true
}

// remove reports whether p was in the set.
func (s *portSet) remove(p int32) bool {
	w := p >> 6
	bit := uint64(1) << (uint(p) & 63)
	if s.words[w]&bit == 0 {
		return false
	}
	s.words[w] &^= bit
	if s.words[w] == 0 {
		s.mid[w>>6] &^= 1 << (uint(w) & 63)
		if s.mid[w>>6] == 0 {
			s.top &^= 1 << uint(w>>6)
		}
	}
	s.n--
	return true
}

// min returns the lowest port of the set.
func (s *portSet) min() (int32, bool) {
	if s.top == 0 {
		return 0, false
	}
	m := bits.TrailingZeros64(s.top)
	w := m*64 + bits.TrailingZeros64(s.mid[m])
	return int32(w*64 + bits.TrailingZeros64(s.words[w])), true
}

// each calls f for every port in ascending order; the summaries let it
// skip empty stretches.
func (s *portSet) each(f func(int32)) {
	for top := s.top; top != 0; top &= top - 1 {
		m := bits.TrailingZeros64(top)
		for mid := s.mid[m]; mid != 0; mid &= mid - 1 {
			w := m*64 + bits.TrailingZeros64(mid)
			for word := s.words[w]; word != 0; word &= word - 1 {
				f(int32(w*64 + bits.TrailingZeros64(word)))
			}
		}
	}
}

// A PortMask is a plain set of ports, 1-65535, for set arithmetic across
// pools: FreeAnywhere fills one per pool, and their intersection is the
// ports free in every pool (tke-extend's useSamePortAcrossPools). The
// zero value is empty.
type PortMask struct {
	words [nWords]uint64
}

// Has reports whether port is in m.
func (m *PortMask) Has(port int32) bool {
	return validPort(port) && m.words[port>>6]&(1<<(uint(port)&63)) != 0
}

// Add puts port in m; ports outside 1-65535 are ignored.
func (m *PortMask) Add(port int32) {
	if validPort(port) {
		m.words[port>>6] |= 1 << (uint(port) & 63)
	}
}

// Remove takes port out of m.
func (m *PortMask) Remove(port int32) {
	if validPort(port) {
		m.words[port>>6] &^= 1 << (uint(port) & 63)
	}
}

// And keeps in m only the ports also in o.
func (m *PortMask) And(o *PortMask) {
	for i := range m.words {
		m.words[i] &= o.words[i]
	}
}

// Lowest returns the lowest port of m.
func (m *PortMask) Lowest() (int32, bool) {
	for i, w := range m.words {
		if w != 0 {
			return int32(i*64 + bits.TrailingZeros64(w)), true
		}
	}
	return 0, false
}

// Len is how many ports m holds.
func (m *PortMask) Len() int {
	n := 0
	for _, w := range m.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// or adds the ports of s to m, walking only s's non-empty words.
func (m *PortMask) or(s *portSet) {
	for top := s.top; top != 0; top &= top - 1 {
		mi := bits.TrailingZeros64(top)
		for mid := s.mid[mi]; mid != 0; mid &= mid - 1 {
			w := mi*64 + bits.TrailingZeros64(mid)
			m.words[w] |= s.words[w]
		}
	}
}
