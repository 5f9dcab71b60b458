package emulator

import "sync"

const (
	maxCountedActions = 256
	otherActions      = "(other)"
)

// callCounters counts answered calls per action and result code.
type callCounters struct {
	mu     sync.Mutex
	counts map[string]map[string]int
}

func (cc *callCounters) init() { cc.counts = map[string]map[string]int{} }

func (cc *callCounters) add(action, code string) {
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
	cc.mu.Unlock()
}

func (cc *callCounters) reset() {
	cc.mu.Lock()
	clear(cc.counts)
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
