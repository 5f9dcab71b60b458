package v1alpha1

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PoolKey names a PortPool as bindings record it: "namespace/name".
func PoolKey(namespace, name string) string { return objectKey(namespace, name) }

// ParsePoolKey returns the namespace and name of a PoolKey.
func ParsePoolKey(key string) (types.NamespacedName, bool) { return parseObjectKey(key) }

// objectKey is the "namespace/name" spelling the keys of objects share.
func objectKey(namespace, name string) string { return namespace + "/" + name }

// parseObjectKey splits an objectKey. Neither part may be empty or hold
// "/", as no Kubernetes namespace or name does.
func parseObjectKey(key string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(key, "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// Key is the PoolKey of r for a PodAddress in namespace ns.
func (r PoolRef) Key(ns string) string {
	if r.Namespace != "" {
		ns = r.Namespace
	}
	return PoolKey(ns, r.Name)
}

// PoolIndex is the field index of PodAddresses by the pools (PoolKeys)
// they ask for in spec or hold in status. It is registered once, by the
// controller package, for every controller that needs it.
const PoolIndex = "network.tencentcloud.m.crossplane.io/pools"

// PoolsOf is the PoolIndex function.
func PoolsOf(o client.Object) []string {
	pa, ok := o.(*PodAddress)
	if !ok {
		return nil
	}
	var keys []string
	add := func(k string) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, pr := range pa.Spec.Ports {
		for _, p := range pr.Pools {
			add(p.Key(pa.GetNamespace()))
		}
	}
	if pa.Spec.EIP != nil && pa.Spec.EIP.FallbackPool != nil {
		add(pa.Spec.EIP.FallbackPool.Key(pa.GetNamespace()))
	}
	for _, b := range pa.Status.Bindings {
		if b.Pool != "" {
			add(b.Pool)
		}
	}
	return keys
}
