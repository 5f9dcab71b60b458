package allocation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// A Pod switched from tke-extend-network-controller keeps the address its
// clb-port-mapping-result names when that address is the Pod's beyond
// doubt (docs/migrate-tke-extend.md). The result is an annotation anyone
// who may edit the Pod can write, so it is only a claim: Adoptable checks
// it against what the pool found in the cloud (its status, written by the
// provider alone in tke-port-pools), and Reservation.Adopt against the
// slots other Pods hold, before anything is recorded or sent.

// ErrNotAdopted is what every refusal to keep a tke-extend address wraps.
var ErrNotAdopted = errors.New("tke-extend's address is not kept")

// ErrAdoptWait means the pool has not looked at its load balancers yet:
// the decision waits for its status.
var ErrAdoptWait = errors.New("the pool has not listed its load balancers yet")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotAdopted}, args...)...)
}

// An Adoption is the slot and listeners a tke-extend result names, found
// to be the Pod's.
type Adoption struct {
	Slot portalloc.Slot
	// EndPort is the segment's last port; 0 for one port.
	EndPort int32
	// ListenerIDs by listener protocol.
	ListenerIDs map[string]string
}

// Adoptable decides, with no I/O, whether the entries of a Pod's
// tke-extend result for w name an address the Pod may keep in pp: the
// pool is of tke-port-pools; the result has one entry per listener
// protocol of w, all on one load balancer of the pool that takes bindings
// and on one slot of it; and on that slot, for each protocol, the pool
// found tke-extend's listener with the id the entry names and target (the
// Pod's "ip:port") as its only target, and no binding of the pool records
// it: Inherited once the switch is made, TKEListeners before (a dry run)
// or in a GameServerSet's pool. Anything else is refused with why
// (ErrNotAdopted), or ErrAdoptWait while the pool has no status yet, or
// has not taken tke-extend's listeners over since the switch.
func Adoptable(pp *clbv1alpha1.PortPool, w Port, result []podannotation.TKEPortMapping, target string) (Adoption, error) {
	if pp.GetNamespace() != podannotation.TKEPoolNamespace {
		return Adoption{}, refuse("pool %s is not one of %s, made from a CLBPortPool", w.Pool, podannotation.TKEPoolNamespace)
	}
	var entries []podannotation.TKEPortMapping
	for _, e := range result {
		if e.Port == w.ContainerPort && v1alpha1.PoolKey(podannotation.TKEPoolNamespace, e.Pool) == w.Pool {
			entries = append(entries, e)
		}
	}
	protocols := v1alpha1.ListenerProtocols(w.Protocol)
	if len(entries) == 0 {
		return Adoption{}, refuse("the result has no entry for port %d in pool %s", w.ContainerPort, pp.GetName())
	}
	first := entries[0]
	a := Adoption{Slot: portalloc.Slot{LB: first.LoadbalancerID, Port: first.LoadbalancerPort}, EndPort: first.LoadbalancerEndPort, ListenerIDs: map[string]string{}}
	for _, e := range entries {
		if !slices.Contains(protocols, e.Protocol) {
			return Adoption{}, refuse("the result gives port %d a %s listener; the Pod asks for %s", w.ContainerPort, e.Protocol, w.Protocol)
		}
		if _, dup := a.ListenerIDs[e.Protocol]; dup {
			return Adoption{}, refuse("the result gives port %d/%s twice", w.ContainerPort, e.Protocol)
		}
		if e.LoadbalancerID != a.Slot.LB || e.LoadbalancerPort != a.Slot.Port || e.LoadbalancerEndPort != a.EndPort {
			return Adoption{}, refuse("the result puts the protocols of port %d on different load balancers or ports", w.ContainerPort)
		}
		a.ListenerIDs[e.Protocol] = e.ListenerID
	}
	for _, proto := range protocols {
		if _, ok := a.ListenerIDs[proto]; !ok {
			return Adoption{}, refuse("the result has no %s entry for port %d", proto, w.ContainerPort)
		}
	}
	lbs := pp.Status.AtProvider.LoadBalancers
	if len(lbs) == 0 {
		return Adoption{}, ErrAdoptWait
	}
	i := slices.IndexFunc(lbs, func(lb clbv1alpha1.PoolLoadBalancerStatus) bool { return lb.ID == a.Slot.LB })
	if i < 0 {
		return Adoption{}, refuse("load balancer %s is not one of pool %s's", a.Slot.LB, pp.GetName())
	}
	lb := lbs[i]
	if !clbv1alpha1.TakesBindings(lb.State) {
		return Adoption{}, refuse("load balancer %s is %s in pool %s", a.Slot.LB, lb.State, pp.GetName())
	}
	seg := int32(1)
	if s := pp.Spec.ForProvider.SegmentLength; s != nil && *s > 1 {
		seg = int32(*s) //nolint:gosec // G115: segments are at most 65535 ports (CRD maximum).
	}
	if want := a.Slot.Port + seg - 1; seg > 1 && a.EndPort != want || seg == 1 && a.EndPort != 0 {
		return Adoption{}, refuse("the result's ports %d-%d are not a slot of pool %s (segments of %d)", a.Slot.Port, a.EndPort, pp.GetName(), seg)
	}
	for _, proto := range protocols {
		k := clbv1alpha1.ListenerKey{Protocol: proto, Port: a.Slot.Port}
		id := a.ListenerIDs[proto]
		c, ok := lb.InheritedAt(k)
		if !ok {
			c, ok = lb.TKEListenerAt(k)
			if ok && clbv1alpha1.TakesOverAllTKE(pp) {
				// Switched, and the pool has not taken it over since: it
				// reads the targets again then (the dry run's may be old).
				return Adoption{}, ErrAdoptWait
			}
		}
		switch {
		case !ok && lb.Adopted[k.String()] == id && id != "":
			return Adoption{}, refuse("listener %s (%s on %s) is already taken over by the pool for another Pod", id, k, a.Slot.LB)
		case !ok:
			return Adoption{}, refuse("no listener of tke-extend serves %s on %s as a slot of pool %s (another protocol, port or end port, or none)", k, a.Slot.LB, pp.GetName())
		case c.ID != id:
			return Adoption{}, refuse("the result names listener %s for %s on %s, but tke-extend's listener there is %s", id, k, a.Slot.LB, c.ID)
		case len(c.Targets) != 1 || c.Targets[0] != target:
			return Adoption{}, refuse("listener %s (%s on %s) has targets [%s], not the Pod's %s alone", id, k, a.Slot.LB, strings.Join(c.Targets, " "), target)
		}
	}
	return a, nil
}

// Adopt gives pa exactly the slot a names in w's pool (no other pick) and
// describes the binding, with a's listeners; the slot is held by the
// reservation until Commit. A slot another owner holds is refused
// (ErrNotAdopted): two Pods' results name it.
func (r *Reservation) Adopt(ctx context.Context, w Port, a Adoption) (v1alpha1.PortBinding, error) {
	al, pp, err := r.pools.Get(ctx, w.Pool)
	if err != nil {
		return v1alpha1.PortBinding{}, err
	}
	o := owner(client.ObjectKeyFromObject(r.pa), w.ContainerPort, w.Protocol)
	_, held := al.Lookup(o)
	if err := al.Assign(o, a.Slot); err != nil {
		if errors.Is(err, portalloc.ErrTaken) {
			return v1alpha1.PortBinding{}, refuse("port %d on %s is held by another Pod (%v)", a.Slot.Port, a.Slot.LB, err)
		}
		return v1alpha1.PortBinding{}, err
	}
	if !held {
		r.fresh = append(r.fresh, w)
	}
	b := binding(pp, w, a.Slot)
	b.ListenerIDs = a.ListenerIDs
	if st, ok := al.LBStats(a.Slot.LB); ok {
		r.pools.usage(w.Pool, []portalloc.LBStats{st})
	}
	return b, nil
}
