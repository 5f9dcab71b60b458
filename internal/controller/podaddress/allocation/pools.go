// Package allocation decides which public port of which pool each port of
// a PodAddress holds. It keeps one allocator per PortPool in step with the
// pool's status (its load balancers and their listeners), rebuilds it from
// the PodAddress statuses the first time this process uses the pool, and
// hands out, records and returns slots. It makes no cloud call: a slot is
// an address once its targets are registered (package targets).
package allocation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// owner names one binding in its pool's allocator. It does not change when
// a Pod is recreated with the same name, which is what lets a held binding
// pass to the new Pod.
func owner(pa types.NamespacedName, containerPort int32, protocol string) string {
	return ownerPrefix(pa) + fmt.Sprintf("%d/%s", containerPort, protocol)
}

// ownerPrefix starts the name of every binding of pa (names hold no '#').
func ownerPrefix(pa types.NamespacedName) string { return pa.Namespace + "/" + pa.Name + "#" }

// namespaceOf is the namespace of an owner: the pool counts the slots of
// each namespace for its maxBindingsPerNamespace.
func namespaceOf(owner string) string {
	ns, _, _ := strings.Cut(owner, "/")
	return ns
}

// A Port is one port of a PodAddress in one pool: what holds a slot.
type Port struct {
	Pool          string
	ContainerPort int32
	Protocol      string
	// SamePort: the pools of this container port and protocol whose Port
	// says SamePort too give it one public port (the request's
	// samePortAcrossPools, tke-extend's useSamePortAcrossPools). It is
	// not part of what the Port is: Of and In ignore it.
	SamePort bool
}

// Of reports whether b is the binding of p.
func (p Port) Of(b v1alpha1.PortBinding) bool {
	return b.Pool == p.Pool && b.ContainerPort == p.ContainerPort && b.Protocol == p.Protocol
}

// In reports whether bs hold a binding of p.
func (p Port) In(bs []v1alpha1.PortBinding) bool {
	return slices.ContainsFunc(bs, p.Of)
}

// Pools keeps the allocator in step with the PortPools. A pool's
// allocation state is rebuilt from the PodAddress statuses the first time
// this process uses it, before anything is allocated in it.
type Pools struct {
	kube     client.Reader
	registry *portalloc.Registry

	mu     sync.Mutex
	synced map[string]string    // pool key → PortPool resourceVersion applied
	uids   map[string]types.UID // pool key → the PortPool the allocator is of

	// usage is told the slots of a pool's load balancers each time its
	// PortPool is applied, and of those an allocation or release changed.
	usage func(pool string, lbs []portalloc.LBStats)
}

// NewPools returns Pools that read PortPools and PodAddresses from kube
// (the cache) and tell usage the slots in use.
func NewPools(kube client.Reader, usage func(pool string, lbs []portalloc.LBStats)) *Pools {
	return &Pools{kube: kube, registry: portalloc.NewRegistry(), usage: usage,
		synced: map[string]string{}, uids: map[string]types.UID{}}
}

// forget drops the allocation state of a pool that is gone, so that a
// pool created again under its name starts from its own load balancers.
// Caller holds p.mu.
func (p *Pools) forget(key string) {
	p.registry.Delete(key)
	delete(p.synced, key)
	delete(p.uids, key)
}

// Get returns the allocator and the PortPool of key, loading or refreshing
// the allocator from the PortPool's status. The PortPool is the cache's
// own (see Read): read it, never change it.
func (p *Pools) Get(ctx context.Context, key string) (*portalloc.Pool, *clbv1alpha1.PortPool, error) {
	pp, err := Read(ctx, p.kube, key)
	if err != nil {
		if kerrors.IsNotFound(err) {
			p.mu.Lock()
			p.forget(key)
			p.mu.Unlock()
		}
		return nil, nil, errors.Wrapf(err, "cannot get PortPool %s", key)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if uid, ok := p.uids[key]; ok && uid != pp.GetUID() {
		p.forget(key) // deleted and created again: another pool
	}
	p.uids[key] = pp.GetUID()
	policy := portalloc.Policy(clbv1alpha1.PolicyLeastUsed)
	if pp.Spec.ForProvider.AllocationPolicy != nil {
		policy = portalloc.Policy(*pp.Spec.ForProvider.AllocationPolicy)
	}
	a, created := p.registry.Pool(key, policy, portalloc.WithGroups(namespaceOf))
	if created {
		if err := p.rebuild(ctx, key, a); err != nil {
			p.registry.Delete(key)
			return nil, nil, err
		}
	}
	if p.synced[key] != pp.GetResourceVersion() {
		a.SetPolicy(policy)
		apply(a, pp)
		p.synced[key] = pp.GetResourceVersion()
		p.usage(key, a.Stats().LBs)
	}
	return a, pp, nil
}

// Read reads the PortPool of key from the cache without a deep copy.
// Every PodAddress reconcile reads its pool a few times, and a pool's
// status lists every listener of its load balancers (about 1 MiB at 200
// load balancers of 50 ports): copied per read, those copies were half of
// the provider's heap at 10k Pods. Callers only read it; what they keep
// from it (a binding's VIPs) they copy.
func Read(ctx context.Context, kube client.Reader, key string) (*clbv1alpha1.PortPool, error) {
	nn, ok := v1alpha1.ParsePoolKey(key)
	if !ok {
		// Not a key the provider writes: no such pool.
		return nil, kerrors.NewNotFound(clbv1alpha1.SchemeGroupVersion.WithResource("portpools").GroupResource(), key)
	}
	pp := &clbv1alpha1.PortPool{}
	if err := kube.Get(ctx, nn, pp, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return pp, nil
}

// rebuild records every binding the PodAddresses hold in the pool.
func (p *Pools) rebuild(ctx context.Context, key string, a *portalloc.Pool) error {
	l := &v1alpha1.PodAddressList{}
	if err := p.kube.List(ctx, l, client.MatchingFields{v1alpha1.PoolIndex: key}); err != nil {
		return errors.Wrapf(err, "cannot list the bindings of pool %s", key)
	}
	for _, pa := range l.Items {
		// A PodAddress created with its bindings records them in its
		// create until its status is first written.
		for _, b := range pa.RecordedBindings() {
			if b.Pool != key {
				continue
			}
			o := owner(client.ObjectKeyFromObject(&pa), b.ContainerPort, b.Protocol)
			// A slot two statuses claim (which a correct provider never
			// writes) goes to the first; bind sees that the other does not
			// own its slot and allocates it a new one.
			_ = a.Assign(o, portalloc.Slot{LB: b.LoadBalancerID, Port: b.Port})
		}
	}
	return nil
}

// apply tells the allocator which slots of each load balancer are usable:
// those whose listeners exist for every protocol of the pool, on load
// balancers that take bindings. A load balancer the pool no longer lists
// leaves the allocator; its owners keep nothing there and bind moves them.
func apply(a *portalloc.Pool, pp *clbv1alpha1.PortPool) {
	protocols := poolProtocols(pp)
	listed := map[string]bool{}
	for _, lb := range pp.Status.AtProvider.LoadBalancers {
		listed[lb.ID] = true
		if !clbv1alpha1.TakesBindings(lb.State) {
			a.SetLB(lb.ID, nil)
			continue
		}
		a.SetLB(lb.ID, readyPorts(lb, protocols))
	}
	for _, st := range a.Stats().LBs {
		if !listed[st.LB] {
			a.RemoveLB(st.LB)
		}
	}
	// Blacklist entries may name a region (region:lb-…); status and the
	// allocator know load balancers by id.
	a.SetBlacklist(clbv1alpha1.LoadBalancerIDsOf(pp.Spec.ForProvider.Blacklist))
	a.SetGroupLimit(BindingLimit(pp))
}

// BindingLimit is the bound on the bindings one namespace may hold in pp
// (0: none) and the one namespace it does not bound ("": none): the pool's
// stated maxBindingsPerNamespace bounds every namespace; without it, a pool
// shared with other namespaces bounds them at
// DefaultMaxBindingsPerOtherNamespace and not its own, so that a namespace
// let in cannot take every port. An admin's CLBPortPool (tke-extend bounds
// none) and a pool serving only its namespace are not bounded.
func BindingLimit(pp *clbv1alpha1.PortPool) (int, string) {
	if n := pp.MaxBindingsPerNamespace(); n > 0 {
		return n, ""
	}
	switch pp.NamespaceConsent().From {
	case clbv1alpha1.ConsentAll, clbv1alpha1.ConsentSelector:
		if pp.GetNamespace() != podannotation.TKEPoolNamespace {
			return clbv1alpha1.DefaultMaxBindingsPerOtherNamespace, pp.GetNamespace()
		}
	}
	return 0, ""
}

// poolProtocols are the protocols of the listeners a pool creates on
// every port.
func poolProtocols(pp *clbv1alpha1.PortPool) []string {
	if len(pp.Spec.ForProvider.Protocols) == 0 {
		return []string{"TCP"}
	}
	return pp.Spec.ForProvider.Protocols
}

// unserved returns an error naming the listener protocols of protocol
// that pp has no listeners for; nil when it serves them all.
func unserved(pp *clbv1alpha1.PortPool, protocol string) error {
	have := poolProtocols(pp)
	var missing []string
	for _, p := range v1alpha1.ListenerProtocols(protocol) {
		if !slices.Contains(have, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.Errorf("PortPool %s/%s has %s listeners only; a %s port needs %s listeners too (add them to the pool's protocols, or ask for another protocol)",
		pp.GetNamespace(), pp.GetName(), strings.Join(have, " and "), protocol, strings.Join(missing, " and "))
}

// readyPorts lists the slot ports of lb whose listeners exist for every
// protocol.
func readyPorts(lb clbv1alpha1.PoolLoadBalancerStatus, protocols []string) []int32 {
	count := map[int32]int{}
	// A slot whose tke-extend listener still forwards to a Pod that did
	// not keep its address takes no new binding (portpool's tkeextend.go).
	held := map[int32]bool{}
	for _, x := range lb.Inherited {
		if k, ok := clbv1alpha1.ParseListenerKey(x.Key); ok {
			held[k.Port] = true
		}
	}
	for s := range lb.Listeners {
		k, ok := clbv1alpha1.ParseListenerKey(s)
		if ok && slices.Contains(protocols, k.Protocol) {
			count[k.Port]++
		}
	}
	ports := make([]int32, 0, len(count))
	for port, n := range count {
		if n == len(protocols) && !held[port] {
			ports = append(ports, port)
		}
	}
	return ports
}

// Release returns every port a PodAddress holds, and reports the usage of
// the pools it touched. A pool this process has not used yet is loaded
// first, while pa still exists: loaded only after pa is gone, its rebuild
// could read pa from a cache that has not yet seen it go, and pa's ports
// would stay taken for good (seen after a restart mid-churn).
func (p *Pools) Release(ctx context.Context, pa *v1alpha1.PodAddress) error {
	key := client.ObjectKeyFromObject(pa)
	for _, b := range pa.Status.Bindings {
		a, _, err := p.Get(ctx, b.Pool)
		if kerrors.IsNotFound(errors.Cause(err)) {
			// The pool is gone, and its allocation state with it.
			continue
		}
		if err != nil {
			return err
		}
		a.Release(owner(key, b.ContainerPort, b.Protocol))
		p.usage(b.Pool, a.Stats().LBs)
	}
	// A status dropped as not the provider's (internal/seal) lists none of
	// the slots pa held before it was overwritten: free whatever pa still
	// holds in the pools it names that are loaded.
	for _, k := range v1alpha1.PoolsOf(pa) {
		if a, ok := p.loaded(k); ok && a.ReleaseOwners(ownerPrefix(key)) > 0 {
			p.usage(k, a.Stats().LBs)
		}
	}
	return nil
}

func (p *Pools) loaded(key string) (*portalloc.Pool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.synced[key]; !ok {
		return nil, false
	}
	a, _ := p.registry.Pool(key, "")
	return a, true
}

// Departed reports whether b's load balancer has left pp: not listed in
// its status (removed, or the pool was made again with others), or in a
// state that takes no bindings (NotFound, Draining, Removed). A binding
// without a listener for each of its protocols has nowhere to go either.
func Departed(pp *clbv1alpha1.PortPool, b v1alpha1.PortBinding) bool {
	if b.Pool != v1alpha1.PoolKey(pp.GetNamespace(), pp.GetName()) {
		return false
	}
	for _, proto := range v1alpha1.ListenerProtocols(b.Protocol) {
		if b.ListenerIDs[proto] == "" {
			return true
		}
	}
	for _, lb := range pp.Status.AtProvider.LoadBalancers {
		if lb.ID == b.LoadBalancerID {
			return !clbv1alpha1.TakesBindings(lb.State)
		}
	}
	return true
}

// AnyDeparted reports whether one of bs has departed pp.
func AnyDeparted(pp *clbv1alpha1.PortPool, bs []v1alpha1.PortBinding) bool {
	return slices.ContainsFunc(bs, func(b v1alpha1.PortBinding) bool { return Departed(pp, b) })
}
