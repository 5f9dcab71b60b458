package randhostport

import (
	"container/heap"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// DefaultRange is where hostPorts are picked from unless configured. It
// stays below the Kubernetes NodePort range (30000-32767), whose ports
// kube-proxy captures on every node, and below Linux's ephemeral ports
// (32768 and up); the seed's example ports (29001, 29323) lie in it.
func DefaultRange() Range { return Range{Min: 20000, Max: 29999} }

// A Range is the inclusive range of host ports to pick from.
type Range struct{ Min, Max int32 }

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Min, r.Max) }

// Size is the number of ports of r.
func (r Range) Size() int { return int(r.Max-r.Min) + 1 }

// Contains reports whether port is in r.
func (r Range) Contains(port int32) bool { return port >= r.Min && port <= r.Max }

// ParseRange reads "min-max", 1 <= min <= max <= 65535.
func ParseRange(s string) (Range, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return Range{}, fmt.Errorf("port range %q: want min-max, e.g. %s", s, DefaultRange())
	}
	a, errA := strconv.ParseInt(strings.TrimSpace(lo), 10, 32)
	b, errB := strconv.ParseInt(strings.TrimSpace(hi), 10, 32)
	if errA != nil || errB != nil || a < 1 || b > 65535 || a > b {
		return Range{}, fmt.Errorf("port range %q: want min-max with 1 <= min <= max <= 65535", s)
	}
	return Range{Min: int32(a), Max: int32(b)}, nil
}

// An Allocator counts, for every port of its range, the Pods that use it
// as a hostPort, and hands out the least used ports: a min-heap ordered by
// count, then by port, so that ties go to the lowest port. Every operation
// is O(log n) in the size of the range.
type Allocator struct {
	r  Range
	mu sync.Mutex
	h  portHeap
	at []*slot // by port - r.Min
}

type slot struct {
	port  int32
	count int
	index int // in h
}

// NewAllocator returns an Allocator of r with every count zero.
func NewAllocator(r Range) *Allocator {
	a := &Allocator{r: r, at: make([]*slot, r.Size()), h: make(portHeap, r.Size())}
	for i := range a.at {
		s := &slot{port: r.Min + int32(i), index: i}
		a.at[i], a.h[i] = s, s
	}
	// Already a heap: all counts are zero and ports ascend.
	return a
}

// Range is the allocator's range.
func (a *Allocator) Range() Range { return a.r }

// Take picks n distinct ports, each the least used (lowest first among
// equals) once the previous ones are counted, and counts one more Pod on
// each.
func (a *Allocator) Take(n int) ([]int32, error) {
	if n > a.r.Size() {
		return nil, fmt.Errorf("%d ports asked, the host port range %s has %d", n, a.r, a.r.Size())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Popping keeps a port from being picked twice for one Pod.
	picked := make([]*slot, n)
	for i := range picked {
		picked[i] = heap.Pop(&a.h).(*slot) //nolint:forcetypeassert // the heap holds slots only
	}
	ports := make([]int32, n)
	for i, s := range picked {
		s.count++
		ports[i] = s.port
		heap.Push(&a.h, s)
	}
	return ports, nil
}

// Add counts delta more Pods on each port of ports in the range; ports out
// of it are ignored. Counts never go below zero.
func (a *Allocator) Add(delta int, ports ...int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range ports {
		if !a.r.Contains(p) {
			continue
		}
		s := a.at[p-a.r.Min]
		s.count = max(s.count+delta, 0)
		heap.Fix(&a.h, s.index)
	}
}

// Count is the number of Pods counted on port.
func (a *Allocator) Count(port int32) int {
	if !a.r.Contains(port) {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at[port-a.r.Min].count
}

// Spread returns the lowest and the highest count over the range.
func (a *Allocator) Spread() (lowest, highest int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	lowest = a.h[0].count
	for _, s := range a.at {
		highest = max(highest, s.count)
	}
	return lowest, highest
}

type portHeap []*slot

func (h portHeap) Len() int { return len(h) }
func (h portHeap) Less(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count < h[j].count
	}
	return h[i].port < h[j].port
}

func (h portHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *portHeap) Push(x any) {
	s := x.(*slot) //nolint:forcetypeassert // the heap holds slots only
	s.index = len(*h)
	*h = append(*h, s)
}

func (h *portHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}
