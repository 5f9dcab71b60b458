package clb

import (
	"context"
	"sync"
)

// lbLocks serialises writes per load balancer. An entry lives only while
// someone holds or waits for it, so the map never outgrows the number of
// load balancers being written right now.
type lbLocks struct {
	mu sync.Mutex
	m  map[string]*lbLock
}

// lbLock is a one-slot channel rather than a sync.Mutex so that waiting for
// it can give up when the caller's context ends.
type lbLock struct {
	slot chan struct{}
	refs int // holders plus waiters; guarded by lbLocks.mu
}

func newLBLocks() *lbLocks { return &lbLocks{m: map[string]*lbLock{}} }

// lock waits for the write lock of lbID and returns its release function.
func (l *lbLocks) lock(ctx context.Context, lbID string) (func(), error) {
	l.mu.Lock()
	e := l.m[lbID]
	if e == nil {
		e = &lbLock{slot: make(chan struct{}, 1)}
		l.m[lbID] = e
	}
	e.refs++
	l.mu.Unlock()

	select {
	case e.slot <- struct{}{}:
	case <-ctx.Done():
		l.drop(lbID, e)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.slot
			l.drop(lbID, e)
		})
	}, nil
}

func (l *lbLocks) drop(lbID string, e *lbLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.m, lbID)
	}
}

// size is the number of load balancers with a holder or a waiter.
func (l *lbLocks) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
