package allocation

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// ReleaseBindings returns the slots of bs that pa held.
func (p *Pools) ReleaseBindings(pa *v1alpha1.PodAddress, bs []v1alpha1.PortBinding) {
	key := client.ObjectKeyFromObject(pa)
	for _, b := range bs {
		if al, ok := p.loaded(b.Pool); ok {
			al.Release(owner(key, b.ContainerPort, b.Protocol))
		}
	}
}

// ordinalSuffix is the ordinal of a StatefulSet Pod name.
var ordinalSuffix = regexp.MustCompile(`-(\d+)$`)

// Servable refuses a port whose protocol its pool has no listeners for
// (TCP_UDP on a TCP pool): it could never be registered; and a port asked
// with the same public port in pools that can never share one (segments
// of different lengths, ranges that do not overlap). It is checked for
// every port not yet bound before any takes a slot. A pool that cannot be
// read is left to the allocation, which reports it.
func (p *Pools) Servable(ctx context.Context, pa *v1alpha1.PodAddress, ws []Port) error {
	for _, w := range ws {
		if w.In(pa.Status.Bindings) {
			continue
		}
		_, pp, err := p.Get(ctx, w.Pool)
		if err != nil {
			continue
		}
		if err := unserved(pp, w.Protocol); err != nil {
			return err
		}
	}
	for _, g := range Groups(ws) {
		if err := p.samePortRefusal(ctx, pa, g); err != nil {
			return err
		}
	}
	return nil
}

// Owns reports whether the allocator agrees that b's slot is pa's. It
// records the slot if nobody holds it (a binding written by an earlier
// provider after this one loaded the pool) and says no if another owner
// does.
func (p *Pools) Owns(ctx context.Context, pa client.ObjectKey, b v1alpha1.PortBinding) bool {
	al, _, err := p.Get(ctx, b.Pool)
	if err != nil {
		return true // cannot tell; keep it until the pool is back
	}
	slot := portalloc.Slot{LB: b.LoadBalancerID, Port: b.Port}
	o := owner(pa, b.ContainerPort, b.Protocol)
	if have, ok := al.Lookup(o); ok {
		return have == slot
	}
	return al.Assign(o, slot) == nil
}

// HasLeft reports whether b's load balancer has left its pool (see
// Departed). A pool that cannot be read says nothing: b stays.
func (p *Pools) HasLeft(ctx context.Context, b v1alpha1.PortBinding) bool {
	_, pp, err := p.Get(ctx, b.Pool)
	if err != nil {
		return false
	}
	return Departed(pp, b)
}

// releasePorts returns the slots pa holds for ps (Reservation.Drop).
func (p *Pools) releasePorts(pa *v1alpha1.PodAddress, ps []Port) {
	key := client.ObjectKeyFromObject(pa)
	for _, w := range ps {
		if al, ok := p.loaded(w.Pool); ok {
			al.Release(owner(key, w.ContainerPort, w.Protocol))
		}
	}
}

// load returns the allocator and the PortPool of w's pool, or the state
// and error of a pool that cannot be used.
func (p *Pools) load(ctx context.Context, w Port) (*portalloc.Pool, *clbv1alpha1.PortPool, string, error) {
	al, pp, err := p.Get(ctx, w.Pool)
	if kerrors.IsNotFound(errors.Cause(err)) {
		return nil, nil, v1alpha1.StatePoolNotFound, errors.Errorf("PortPool %s does not exist", w.Pool)
	}
	if err != nil {
		return nil, nil, v1alpha1.StatePending, err
	}
	return al, pp, "", nil
}

// ordinalPort is the port the Ordinal strategy gives pa in pp: startPort
// + ordinal × segmentLength.
func ordinalPort(pa *v1alpha1.PodAddress, pp *clbv1alpha1.PortPool, pool string) (int32, string, error) {
	m := ordinalSuffix.FindStringSubmatch(pa.GetName())
	if m == nil {
		return 0, v1alpha1.StateInvalid, errors.Errorf("the Ordinal strategy needs a StatefulSet Pod name ending in -<ordinal>, not %q", pa.GetName())
	}
	n, perr := strconv.ParseInt(m[1], 10, 32)
	port := pp.Spec.ForProvider.StartPort + n*segmentOf(pp)
	if perr != nil || port > math.MaxUint16 {
		// Converted to int32, a larger port would wrap, onto another
		// ordinal's port for some (2^30 with segments of 4 is startPort).
		return 0, v1alpha1.StatePending, errors.Wrapf(portalloc.ErrInvalid, "pool %s: the ordinal of %q gives a port beyond 65535", pool, pa.GetName())
	}
	return int32(port), "", nil //nolint:gosec // G115: at most 65535, checked above.
}

// segmentOf is the segment length of pp's slots.
func segmentOf(pp *clbv1alpha1.PortPool) int64 {
	if seg := pp.Spec.ForProvider.SegmentLength; seg != nil && *seg > 1 {
		return *seg
	}
	return 1
}

// allocErr maps an allocator's refusal in w's pool to a state and the
// error the PodAddress shows.
func allocErr(pa *v1alpha1.PodAddress, w Port, al *portalloc.Pool, pp *clbv1alpha1.PortPool, err error) (string, error) {
	switch {
	case errors.Is(err, portalloc.ErrGroupFull):
		rule := "its spec.consumers.maxBindingsPerNamespace"
		if pp.MaxBindingsPerNamespace() == 0 {
			rule = fmt.Sprintf("the default for other namespaces of a shared pool (%d; the pool's owner may state spec.consumers.maxBindingsPerNamespace)", clbv1alpha1.DefaultMaxBindingsPerOtherNamespace)
		}
		return v1alpha1.StateNoPortAvailable, errors.Errorf("pool %s: the Pods of namespace %s hold %d of its ports, as many as %s allows; a port frees up when one of them goes",
			w.Pool, pa.GetNamespace(), al.GroupSize(pa.GetNamespace()), rule)
	case errors.Is(err, portalloc.ErrNoPortAvailable) || errors.Is(err, portalloc.ErrTaken):
		return v1alpha1.StateNoPortAvailable, errors.Wrapf(err, "pool %s", w.Pool)
	}
	return v1alpha1.StatePending, err
}

// Allocate takes a slot for w and describes the binding. isNew is true
// when the owner held no slot before.
func (p *Pools) Allocate(ctx context.Context, pa *v1alpha1.PodAddress, w Port) (b v1alpha1.PortBinding, isNew bool, state string, err error) {
	al, pp, state, err := p.load(ctx, w)
	if err != nil {
		return b, false, state, err
	}
	o := owner(client.ObjectKeyFromObject(pa), w.ContainerPort, w.Protocol)
	_, held := al.Lookup(o)
	var slot portalloc.Slot
	if pa.Spec.Strategy == v1alpha1.StrategyOrdinal {
		port, state, err := ordinalPort(pa, pp, w.Pool)
		if err != nil {
			return b, false, state, err
		}
		slot, err = al.AllocateAt(o, port)
		if err != nil {
			state, err = allocErr(pa, w, al, pp, err)
			return b, false, state, err
		}
	} else if slot, err = al.Allocate(o); err != nil {
		state, err = allocErr(pa, w, al, pp, err)
		return b, false, state, err
	}
	b = binding(pp, w, slot)
	if Departed(pp, b) {
		// A slot without its listeners could never be registered; the
		// allocator only hands out slots whose listeners exist, so this is
		// a status read between two writes. Try again shortly.
		al.Release(o)
		return v1alpha1.PortBinding{}, false, v1alpha1.StatePending, errors.Errorf("pool %s: the listeners of %s port %d are not in its status yet", w.Pool, slot.LB, slot.Port)
	}
	// Only slot's load balancer changed.
	if st, ok := al.LBStats(slot.LB); ok {
		p.usage(w.Pool, []portalloc.LBStats{st})
	}
	return b, !held, "", nil
}

// binding describes the address slot gives w.
func binding(pp *clbv1alpha1.PortPool, w Port, slot portalloc.Slot) v1alpha1.PortBinding {
	b := v1alpha1.PortBinding{
		Pool:           w.Pool,
		Protocol:       w.Protocol,
		ContainerPort:  w.ContainerPort,
		LoadBalancerID: slot.LB,
		Port:           slot.Port,
		ListenerIDs:    map[string]string{},
	}
	if seg := pp.Spec.ForProvider.SegmentLength; seg != nil && *seg > 1 {
		b.EndPort = slot.Port + int32(*seg) - 1 //nolint:gosec // G115: a segment ends at 65535 at most (the PortPool's rules).
	}
	if pp.Spec.ForProvider.External != nil {
		b.External = *pp.Spec.ForProvider.External
	}
	for _, lb := range pp.Status.AtProvider.LoadBalancers {
		if lb.ID != slot.LB {
			continue
		}
		// pp is the cache's: the binding gets its own VIPs.
		b.Region, b.ISP, b.VIPs, b.Hostname = lb.Region, lb.ISP, slices.Clone(lb.VIPs), lb.Hostname
		b.LoadBalancerName, b.LoadBalancerType, b.AddressIPVersion, b.IPv6Mode = lb.Name, lb.Type, lb.AddressIPVersion, lb.IPv6Mode
		for _, proto := range v1alpha1.ListenerProtocols(w.Protocol) {
			b.ListenerIDs[proto] = lb.ListenerID(clbv1alpha1.ListenerKey{Protocol: proto, Port: slot.Port})
		}
	}
	return b
}
