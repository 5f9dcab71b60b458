package portalloc

import (
	"slices"
	"sync"
)

// A Registry holds the Pools of one provider process, keyed by PortPool
// (e.g. "namespace/name"). It is an ordinary value owned by whoever starts
// the controllers, not a process-wide singleton, so tests get their own.
// It is safe for concurrent use.
type Registry struct {
	mu    sync.Mutex
	pools map[string]*Pool
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{pools: map[string]*Pool{}}
}

// Pool returns the Pool of key, creating it with policy and opts if there
// is none (created is then true). The policy of an existing Pool is left
// alone; use SetPolicy to change it.
func (r *Registry) Pool(key string, policy Policy, opts ...Option) (p *Pool, created bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pools[key]; ok {
		return p, false
	}
	p = NewPool(policy, opts...)
	r.pools[key] = p
	return p, true
}

// Get returns the Pool of key without creating one.
func (r *Registry) Get(key string) (*Pool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pools[key]
	return p, ok
}

// Delete forgets the Pool of key. Holders of the *Pool may keep using it,
// but the Registry hands out a fresh one for key from now on.
func (r *Registry) Delete(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pools, key)
}

// Keys returns the keys of all Pools, sorted.
func (r *Registry) Keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.pools))
	for k := range r.pools {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
