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

var (
	mu    sync.Mutex
	table = map[string]string{}
)

// String returns the shared copy of s (of any string type: condition
// types, protocols…).
func String[T ~string](s T) T {
	if s == "" {
		return s
	}
	mu.Lock()
	defer mu.Unlock()
	if v, ok := table[string(s)]; ok {
		return T(v)
	}
	if len(table) < maxStrings {
		table[string(s)] = string(s)
	}
	return s
}

// Strings interns every element of ss in place.
func Strings(ss []string) {
	for i := range ss {
		ss[i] = String(ss[i])
	}
}

// Keys interns the keys of m in place, and its values too when values is
// set (labels: a selector's values are shared by a workload's objects).
// Assigning to a key already in a map stores the new key's string: the
// map is not rebuilt.
func Keys(m map[string]string, values bool) {
	for k, v := range m {
		if values {
			v = String(v)
		}
		m[String(k)] = v
	}
}

// Meta interns what objects of a namespace or a workload share: the
// namespace, generateName, label keys and values, annotation keys,
// finalizers and owners' kinds.
func Meta(m *metav1.ObjectMeta) {
	m.Namespace = String(m.Namespace)
	m.GenerateName = String(m.GenerateName)
	Keys(m.Labels, true)
	Keys(m.Annotations, false)
	Strings(m.Finalizers)
	for i := range m.OwnerReferences {
		o := &m.OwnerReferences[i]
		o.APIVersion, o.Kind = String(o.APIVersion), String(o.Kind)
	}
}
