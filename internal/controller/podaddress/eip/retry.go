package eip

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A Retry spaces the allocation attempts of PodAddresses that cannot
// get an EIP: 1 s, doubling, up to maxBackoff. The wait is per attempt:
// reconciles in between (the PodAddress's own status write wakes one) ask
// pending and wait out the rest instead of trying, and doubling, again.
type Retry struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Duration
	due  map[types.NamespacedName]time.Time
}

// Next records a failed attempt of k now and returns the wait before the
// next one.
func (b *Retry) Next(k types.NamespacedName, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last, b.due = map[types.NamespacedName]time.Duration{}, map[types.NamespacedName]time.Time{}
	}
	d := min(max(2*b.last[k], time.Second), maxBackoff)
	b.last[k], b.due[k] = d, now.Add(d)
	return d
}

// Pending returns how long k must still wait before its next attempt.
func (b *Retry) Pending(k types.NamespacedName, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.due[k].Sub(now)
	return d, d > 0
}

func (b *Retry) Reset(k types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.last, k)
	delete(b.due, k)
}
