package emulator

import (
	"maps"
	"sync"
)

const (
	maxCountedActions = 256
	otherActions      = "(other)"
)

// callCounters counts answered calls per action and result code, and
// apart per SecretId for the calls that were authenticated (so known keys
// and actions only: the map stays bounded).
type callCounters struct {
	mu     sync.Mutex
	counts map[string]map[string]int
	byKey  map[string]map[string]map[string]int
}

func (cc *callCounters) init() {
	cc.counts = map[string]map[string]int{}
	cc.byKey = map[string]map[string]map[string]int{}
}

func (cc *callCounters) add(secretID, action, code string) {
	if len(action) > maxCountedActionNameSize {
		action = action[:maxCountedActionNameSize] // bounded keys, whatever clients send
	}
	cc.mu.Lock()
	m := cc.counts[action]
	if m == nil && len(cc.counts) >= maxCountedActions {
		action = otherActions // unknown action names must not grow the map forever
		m = cc.counts[action]
	}
	if m == nil {
		m = map[string]int{}
		cc.counts[action] = m
	}
	m[code]++
	if secretID != "" {
		k := cc.byKey[secretID]
		if k == nil {
			k = map[string]map[string]int{}
			cc.byKey[secretID] = k
		}
		if k[action] == nil {
			k[action] = map[string]int{}
		}
		k[action][code]++
	}
	cc.mu.Unlock()
}

func (cc *callCounters) reset() {
	cc.mu.Lock()
	clear(cc.counts)
	clear(cc.byKey)
	cc.mu.Unlock()
}

// Calls returns the number of answered calls per action and result: the
// error code, "OK" for a success, or "ConnectionDropped".
func (e *Emulator) Calls() map[string]map[string]int {
	e.counters.mu.Lock()
	defer e.counters.mu.Unlock()
	out := make(map[string]map[string]int, len(e.counters.counts))
	for a, m := range e.counters.counts {
		c := make(map[string]int, len(m))
		for k, v := range m {
			c[k] = v
		}
		out[a] = c
	}
	return out
}

// CallsBy is Calls for the authenticated calls of one SecretId, e.g. to
// tell a provider's calls from a test's own.
func (e *Emulator) CallsBy(secretID string) map[string]map[string]int {
	e.counters.mu.Lock()
	defer e.counters.mu.Unlock()
	out := make(map[string]map[string]int, len(e.counters.byKey[secretID]))
	for a, m := range e.counters.byKey[secretID] {
		out[a] = maps.Clone(m)
	}
	return out
}

// CallCount returns how many calls of action were answered, whatever
// their result.
func (e *Emulator) CallCount(action string) int {
	e.counters.mu.Lock()
	defer e.counters.mu.Unlock()
	n := 0
	for _, v := range e.counters.counts[action] {
		n += v
	}
	return n
}

// ResetCounters zeroes the call counters and those of injected faults.
func (e *Emulator) ResetCounters() {
	e.counters.reset()
	e.injected.reset()
}
