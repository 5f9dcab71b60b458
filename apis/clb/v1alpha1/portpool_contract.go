package v1alpha1

import (
	"strconv"
	"strings"
)

// The contract between a PortPool and the PodAddresses that bind to it:
// how a pool's status names its listeners and load balancers, and how its
// spec names load balancers. Both controllers use these helpers, so the
// strings are built and parsed in one place.

// States of a pool's load balancer in status.atProvider.loadBalancers.
const (
	// PoolLBReady: every listener of the pool exists here.
	PoolLBReady = "Ready"
	// PoolLBCreating: listeners (or the load balancer) are being created.
	PoolLBCreating = "Creating"
	// PoolLBNotFound: the load balancer does not exist in the cloud.
	PoolLBNotFound = "NotFound"
	// PoolLBBlacklisted: no new bindings; existing ones stay.
	PoolLBBlacklisted = "Blacklisted"
	// PoolLBDraining: listed in drain; its bindings move to other load
	// balancers of the pool.
	PoolLBDraining = "Draining"
	// PoolLBRemoved: no longer in the pool's spec; shown until its
	// bindings have moved and the pool's listeners there are deleted.
	PoolLBRemoved = "Removed"
	// PoolLBNotOwned: the load balancer's owner tags name another
	// namespace than the pool's; the pool writes nothing there, and its
	// bindings move elsewhere.
	PoolLBNotOwned = "NotOwned"
)

// ReasonMovingBindings is the reason of a PortPool's Ready=False while
// bindings move off a load balancer that left the pool (Removed or
// Draining) or the pool's listeners there are being deleted: work under
// way, not a fault.
const ReasonMovingBindings = "MovingBindings"

// TakesBindings reports whether bindings may stay on a load balancer in
// state s. Those on one that does not are moved elsewhere.
func TakesBindings(s string) bool {
	return s != PoolLBNotFound && s != PoolLBDraining && s != PoolLBRemoved && s != PoolLBNotOwned
}

// A ListenerKey names one listener of a pool on a load balancer: its
// protocol and first port. Its string form "PROTOCOL/port" keys
// PoolLoadBalancerStatus.Listeners.
// +k8s:deepcopy-gen=false
type ListenerKey struct {
	Protocol string
	Port     int32
}

func (k ListenerKey) String() string {
	return k.Protocol + "/" + strconv.FormatInt(int64(k.Port), 10)
}

// ParseListenerKey parses "PROTOCOL/port".
func ParseListenerKey(s string) (ListenerKey, bool) {
	proto, port, ok := strings.Cut(s, "/")
	if !ok || proto == "" {
		return ListenerKey{}, false
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return ListenerKey{}, false
	}
	return ListenerKey{Protocol: proto, Port: int32(n)}, true
}

// ListenerID returns the id of the pool's listener k on lb, "" if none.
func (lb *PoolLoadBalancerStatus) ListenerID(k ListenerKey) string {
	return lb.Listeners[k.String()]
}

// AnnotationTKESwitch set to TKESwitchDryRun on a CLBPortPool (the
// provider copies it to the PortPool it makes) runs the switch from
// tke-extend-network-controller as a dry run: the PortPool only observes
// (management policy Observe) and the Pods of the pool are only told, by
// an Event, what would be kept; nothing is written to the cloud, to the
// Pods or to PodAddresses. Without it the switch is made.
const (
	AnnotationTKESwitch = "network.tencentcloud.crossplane.io/tke-extend-switch"
	TKESwitchDryRun     = "DryRun"
)

// TKEListenerName is the name tke-extend-network-controller v2 gives
// every listener it creates for a Pod (and those it pre-creates).
const TKEListenerName = "TKE-LISTENER"

// TKEListenerAt returns tke-extend's listener k on lb that the pool has
// not taken over, if the pool found one.
func (lb *PoolLoadBalancerStatus) TKEListenerAt(k ListenerKey) (TKEListener, bool) {
	return listenerAt(lb.TKEListeners, k)
}

// InheritedAt returns tke-extend's listener k on lb that the pool took
// over with targets no binding of the pool records, if there is one.
func (lb *PoolLoadBalancerStatus) InheritedAt(k ListenerKey) (TKEListener, bool) {
	return listenerAt(lb.Inherited, k)
}

func listenerAt(ls []TKEListener, k ListenerKey) (TKEListener, bool) {
	key := k.String()
	for _, l := range ls {
		if l.Key == key {
			return l, true
		}
	}
	return TKEListener{}, false
}

// TKEPoolNamespace is the namespace of the PortPools the provider makes
// from CLBPortPools (podannotation.TKEPoolNamespace names it for Pods).
const TKEPoolNamespace = "tke-port-pools"

// TakesOverAllTKE reports whether pp takes over every listener
// tke-extend-network-controller made on its slots, not only those a
// binding of it records: a pool of tke-port-pools made from an admin's
// CLBPortPool (not a GameServerSet's, which acts for a namespace whose
// users chose its load balancers), once the switch is made (not in a dry
// run). Only the provider and admins write PortPools there.
func TakesOverAllTKE(pp *PortPool) bool {
	a := pp.GetAnnotations()
	return pp.GetNamespace() == TKEPoolNamespace && a[AnnotationActsFor] == "" && a[AnnotationTKESwitch] == ""
}

// A LoadBalancerRef is a load balancer as the spec names it: lb-… in the
// provider config's region, or region:lb-… in another.
// +k8s:deepcopy-gen=false
type LoadBalancerRef struct {
	// Region is "" for the provider config's region.
	Region string
	ID     string
}

// ParseLoadBalancerRef parses lb-… or region:lb-….
func ParseLoadBalancerRef(s string) LoadBalancerRef {
	if i := strings.LastIndex(s, ":"); i >= 0 {
		return LoadBalancerRef{Region: s[:i], ID: s[i+1:]}
	}
	return LoadBalancerRef{ID: s}
}

// LoadBalancerIDsOf returns the ids of refs (lb-… or region:lb-…), in
// order, without regions.
func LoadBalancerIDsOf(refs []string) []string {
	ids := make([]string, 0, len(refs))
	for _, r := range refs {
		ids = append(ids, ParseLoadBalancerRef(r).ID)
	}
	return ids
}
