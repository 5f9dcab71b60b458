package portalloc

// lbHeap is a binary min-heap of load balancers that remembers each
// member's position (through pos), so that a member can be fixed or removed
// in O(log n) when its key changes, without a search.
type lbHeap struct {
	items []*lbState
	less  func(a, b *lbState) bool
	pos   func(*lbState) *int
}

func (h *lbHeap) top() *lbState {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *lbHeap) push(s *lbState) {
	*h.pos(s) = len(h.items)
	h.items = append(h.items, s)
	h.up(len(h.items) - 1)
}

func (h *lbHeap) remove(s *lbState) {
	i := *h.pos(s)
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	*h.pos(s) = -1
	if i != last {
		h.fix(h.items[i])
	}
}

// fix restores the heap after s's key changed.
func (h *lbHeap) fix(s *lbState) {
	i := *h.pos(s)
	if !h.down(i) {
		h.up(i)
	}
}

func (h *lbHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.pos(h.items[i]) = i
	*h.pos(h.items[j]) = j
}

func (h *lbHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i], h.items[parent]) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down reports whether the item moved.
func (h *lbHeap) down(i int) bool {
	start, n := i, len(h.items)
	for {
		smallest := i
		if l := 2*i + 1; l < n && h.less(h.items[l], h.items[smallest]) {
			smallest = l
		}
		if r := 2*i + 2; r < n && h.less(h.items[r], h.items[smallest]) {
			smallest = r
		}
		if smallest == i {
			return i != start
		}
		h.swap(i, smallest)
		i = smallest
	}
}
