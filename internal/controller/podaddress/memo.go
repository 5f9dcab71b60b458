package podaddress

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// A writeMemo remembers, per PodAddress, the versions this provider
// changed it from. A reconcile that reads one of them from the cache runs
// before the cache has caught up with our own write: acting on it would
// write again from a stale copy (a conflict, a wasted request) or send a
// cloud call twice. It waits instead; the watch event of our write brings
// the key back. The cache only moves forward, so once it shows a version
// not in the memo, the memo is spent.
//
// It also remembers the PodAddresses this provider created that the cache
// has not shown yet: a reconcile that finds none of them in the cache
// waits too, rather than create it again (a refused POST).
type writeMemo struct {
	mu   sync.Mutex
	rv   map[types.NamespacedName][]string
	made map[types.NamespacedName]time.Time
}

// maxWritesBehind bounds the versions kept per PodAddress: a reconcile
// writes it at most a few times in a row.
const maxWritesBehind = 8

// createLag bounds how long a created PodAddress the cache has not shown
// is waited for; past it, a create is tried again (and says whether the
// object exists).
const createLag = 10 * time.Second

func newWriteMemo() *writeMemo {
	return &writeMemo{rv: map[types.NamespacedName][]string{}, made: map[types.NamespacedName]time.Time{}}
}

// created records that the PodAddress of key was just created.
func (m *writeMemo) created(key types.NamespacedName, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.made[key] = now
}

// unseen reports whether the PodAddress of key, absent from the cache,
// was created by us recently: the cache is behind, not the object gone.
func (m *writeMemo) unseen(key types.NamespacedName, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.made[key]
	if ok && now.Sub(at) < createLag {
		return true
	}
	delete(m.made, key)
	return false
}

// behind reports whether the cached pa predates a write of ours.
func (m *writeMemo) behind(pa *v1alpha1.PodAddress) bool {
	key := client.ObjectKeyFromObject(pa)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.made, key) // the cache shows the object
	if slices.Contains(m.rv[key], pa.GetResourceVersion()) {
		return true
	}
	delete(m.rv, key)
	return false
}

// wrote records that the PodAddress of key was changed from version
// before to after; a write that changed nothing (same version) is not
// one the cache will show.
func (m *writeMemo) wrote(key types.NamespacedName, before, after string) {
	if before == "" || before == after {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := append(m.rv[key], before)
	if len(vs) > maxWritesBehind {
		vs = vs[len(vs)-maxWritesBehind:]
	}
	m.rv[key] = vs
}

// gone forgets a PodAddress the cache no longer holds, or that is gone
// for good.
func (m *writeMemo) gone(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rv, key)
	delete(m.made, key)
}

// writeStatus updates pa's status and remembers the version it replaced.
func (r *Reconciler) writeStatus(ctx context.Context, pa *v1alpha1.PodAddress) error {
	before := pa.GetResourceVersion()
	if err := r.records.seal.Seal(pa); err != nil {
		return err
	}
	if err := r.kube.Status().Update(ctx, pa); err != nil {
		return err
	}
	r.records.wrote.wrote(client.ObjectKeyFromObject(pa), before, pa.GetResourceVersion())
	// The grants count what the statuses record.
	r.eips.grants.Observe(pa)
	return nil
}

// write updates pa (spec, metadata) and remembers the version it
// replaced.
func (r *Reconciler) write(ctx context.Context, pa *v1alpha1.PodAddress) error {
	before := pa.GetResourceVersion()
	if err := r.kube.Update(ctx, pa); err != nil {
		return err
	}
	r.records.wrote.wrote(client.ObjectKeyFromObject(pa), before, pa.GetResourceVersion())
	return nil
}

// remove deletes pa (a PodAddress with our finalizer: the delete only
// marks it) and remembers the version it marked; a PodAddress already
// gone is fine.
func (r *Reconciler) remove(ctx context.Context, pa *v1alpha1.PodAddress) error {
	if err := r.kube.Delete(ctx, pa); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.records.wrote.wrote(client.ObjectKeyFromObject(pa), pa.GetResourceVersion(), "")
	return nil
}
