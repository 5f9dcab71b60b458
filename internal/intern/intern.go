// Package intern shares equal strings between the objects the provider
// caches. Each decoded object holds its own copy of every string: at 10k
// Pods and PodAddresses the same namespace, annotation keys, load balancer
// IDs, regions and condition reasons are held 10k times over. Only strings
// of few distinct values are interned (never names, UIDs, versions or
// messages), and the table is bounded, so it cannot grow with the objects.
package intern

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxStrings bounds the table; past it strings pass through unshared.
const maxStrings = 1 << 14

// A Table holds the shared copies; the caches' transforms share one.
type Table struct {
	mu sync.Mutex
	m  map[string]string
}

// New returns an empty table.
func New() *Table { return &Table{m: map[string]string{}} }

// Of returns t's shared copy of s (of any string type: condition types,
// protocols…).
func Of[T ~string](t *Table, s T) T {
	if s == "" {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[string(s)]; ok {
		return T(v)
	}
	if len(t.m) < maxStrings {
		t.m[string(s)] = string(s)
	}
	return s
}

// Strings interns every element of ss in place.
func (t *Table) Strings(ss []string) {
	for i := range ss {
		ss[i] = Of(t, ss[i])
	}
}

// Keys interns the keys of m in place, and its values too when values is
// set (labels: a selector's values are shared by a workload's objects).
// Assigning to a key already in a map stores the new key's string: the
// map is not rebuilt.
func (t *Table) Keys(m map[string]string, values bool) {
	for k, v := range m {
		if values {
			v = Of(t, v)
		}
		m[Of(t, k)] = v
	}
}

// Meta interns what objects of a namespace or a workload share: the
// namespace, generateName, label keys and values, annotation keys,
// finalizers and owners' kinds.
func (t *Table) Meta(m *metav1.ObjectMeta) {
	m.Namespace = Of(t, m.Namespace)
	m.GenerateName = Of(t, m.GenerateName)
	t.Keys(m.Labels, true)
	t.Keys(m.Annotations, false)
	t.Strings(m.Finalizers)
	for i := range m.OwnerReferences {
		o := &m.OwnerReferences[i]
		o.APIVersion, o.Kind = Of(t, o.APIVersion), Of(t, o.Kind)
	}
}
