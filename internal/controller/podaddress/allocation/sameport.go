package allocation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// A port asked with samePortAcrossPools (tke-extend's
// useSamePortAcrossPools) holds one public port in all of its pools. Its
// ports (one per pool) are a group: allocated together, the lowest port
// free in every pool, taken in all of them or in none; the load balancer
// of each pool is the one its policy picks among those where that port is
// free (tke-extend: the lowest common port, each pool's load balancer by
// its lbPolicy). A binding that has to move (its load balancer left the
// pool) takes the same port on another load balancer of its pool; when
// that port is taken there and another port is free in every pool, every
// binding of the group moves to it (SamePortMoves); when none is, the
// others stay and the moved one waits for its port.

// samePortTries bounds how many common ports one allocation tries: a port
// found free in every pool can be taken by a concurrent allocation before
// this one takes it everywhere.
const samePortTries = 8

type groupKey struct {
	containerPort int32
	protocol      string
}

// Groups splits ps into what is allocated as one, in the order of their
// first ports: each port alone, but the SamePort ports of one container
// port and protocol together.
func Groups(ps []Port) [][]Port {
	var out [][]Port
	at := map[groupKey]int{}
	for _, w := range ps {
		if !w.SamePort {
			out = append(out, []Port{w})
			continue
		}
		k := groupKey{w.ContainerPort, w.Protocol}
		if i, ok := at[k]; ok {
			out[i] = append(out[i], w)
			continue
		}
		at[k] = len(out)
		out = append(out, []Port{w})
	}
	return out
}

// samePort reports whether g is a group whose pools give one port: a
// group of one is a port like any other.
func samePort(g []Port) bool { return len(g) > 1 && g[0].SamePort }

// poolNames lists the pools of g.
func poolNames(g []Port) string {
	names := make([]string, len(g))
	for i, w := range g {
		names[i] = w.Pool
	}
	return strings.Join(names, ", ")
}

// slotRange is the first port of pp's first slot and the last port of its
// last: the spec's range in whole segments, capped by the slots per load
// balancer its status reports (the listener quota), when it does.
func slotRange(pp *clbv1alpha1.PortPool) (first, last int64) {
	f := pp.Spec.ForProvider
	seg := segmentOf(pp)
	n := (f.EndPort - f.StartPort + 1) / seg
	if s := pp.Status.AtProvider.SlotsPerLoadBalancer; s > 0 {
		n = min(n, s)
	}
	return f.StartPort, f.StartPort + n*seg - 1
}

// samePortProblem says why the pools of group g can never give its ports
// one public port: segments of different lengths, slots that never line
// up, port ranges that do not overlap, or, with the Ordinal strategy,
// different start ports. nil when they can.
func samePortProblem(g []Port, pps []*clbv1alpha1.PortPool, ordinal bool) error {
	what := fmt.Sprintf("port %d/%s asks for the same public port in pools %s (useSamePortAcrossPools)", g[0].ContainerPort, g[0].Protocol, poolNames(g))
	seg := segmentOf(pps[0])
	for i := 1; i < len(pps); i++ {
		if s := segmentOf(pps[i]); s != seg {
			return errors.Errorf("%s, but pool %s has segments of %d ports and pool %s of %d: a public port starts a slot in both only when their segmentLength is the same",
				what, g[0].Pool, seg, g[i].Pool, s)
		}
	}
	start0 := pps[0].Spec.ForProvider.StartPort
	for i := 1; i < len(pps); i++ {
		start := pps[i].Spec.ForProvider.StartPort
		switch {
		case ordinal && start != start0:
			return errors.Errorf("%s, but with the Ordinal strategy each pool gives startPort + ordinal × segmentLength, and pool %s starts at %d, pool %s at %d: give them the same startPort",
				what, g[0].Pool, start0, g[i].Pool, start)
		case (start-start0)%seg != 0:
			return errors.Errorf("%s, but their segments never line up: pool %s starts at %d, pool %s at %d, and with segments of %d ports no port starts a segment in both; give them startPorts that differ by a multiple of %d",
				what, g[0].Pool, start0, g[i].Pool, start, seg, seg)
		}
	}
	lo, hi := int64(0), int64(1<<31)
	var ranges []string
	for i, pp := range pps {
		first, last := slotRange(pp)
		lo, hi = max(lo, first), min(hi, last)
		ranges = append(ranges, fmt.Sprintf("%s %d-%d", g[i].Pool, first, last))
	}
	if lo+seg-1 > hi {
		return errors.Errorf("%s, but their ports do not overlap (%s, each capped by the listeners its load balancers can hold): no public port is in all of them",
			what, strings.Join(ranges, ", "))
	}
	return nil
}

// member is one port of a same-port group with its pool: held is its slot
// when it has one, had when the status the caller gave records it.
type member struct {
	w    Port
	al   *portalloc.Pool
	pp   *clbv1alpha1.PortPool
	o    string
	slot portalloc.Slot
	held bool
	had  bool
}

// members loads the pools of g, or says why one cannot be used.
func (p *Pools) members(ctx context.Context, pa *v1alpha1.PodAddress, g []Port) ([]member, string, error) {
	key := client.ObjectKeyFromObject(pa)
	ms := make([]member, len(g))
	for i, w := range g {
		al, pp, state, err := p.load(ctx, w)
		if err != nil {
			return nil, state, err
		}
		ms[i] = member{w: w, al: al, pp: pp, o: owner(key, w.ContainerPort, w.Protocol)}
	}
	return ms, "", nil
}

func pools(ms []member) []*clbv1alpha1.PortPool {
	out := make([]*clbv1alpha1.PortPool, len(ms))
	for i, m := range ms {
		out[i] = m.pp
	}
	return out
}

// commonFree is the ports free in the pools of every member.
func commonFree(ms []member) *portalloc.PortMask {
	var common portalloc.PortMask
	for i, m := range ms {
		var mk portalloc.PortMask
		m.al.FreeAnywhere(&mk)
		if i == 0 {
			common = mk
			continue
		}
		common.And(&mk)
	}
	return &common
}

// allocateSame takes one public port for every port of the same-port
// group g that have does not record, in all of their pools or in none,
// and returns their bindings (in g's order) and the ports it took new.
// A port of the group that have records (or that already holds a slot)
// fixes the public port: the others take the same one. Without one, the
// Ordinal strategy fixes it, and the Dynamic one takes the lowest port
// free in every pool.
func (p *Pools) allocateSame(ctx context.Context, pa *v1alpha1.PodAddress, g []Port, have []v1alpha1.PortBinding) ([]v1alpha1.PortBinding, []Port, string, error) {
	ms, state, err := p.members(ctx, pa, g)
	if err != nil {
		return nil, nil, state, err
	}
	ordinal := pa.Spec.Strategy == v1alpha1.StrategyOrdinal
	if err := samePortProblem(g, pools(ms), ordinal); err != nil {
		return nil, nil, v1alpha1.StateInvalid, err
	}
	var port int32 // the group's public port, once known
	var holders []string
	for i := range ms {
		m := &ms[i]
		if j := slices.IndexFunc(have, m.w.Of); j >= 0 {
			m.had, m.held, m.slot = true, true, portalloc.Slot{LB: have[j].LoadBalancerID, Port: have[j].Port}
		} else if s, ok := m.al.Lookup(m.o); ok {
			m.held, m.slot = true, s
		}
		if !m.held {
			continue
		}
		if port != 0 && m.slot.Port != port {
			return nil, nil, v1alpha1.StatePending, errors.Errorf("port %d/%s holds public port %d in pool %s and %d in pool %s, though it asks for the same port in every pool; the bindings are let go and allocated again",
				m.w.ContainerPort, m.w.Protocol, port, strings.Join(holders, ", "), m.slot.Port, m.w.Pool)
		}
		port = m.slot.Port
		holders = append(holders, m.w.Pool)
	}
	if port == 0 && ordinal {
		if port, state, err = ordinalPort(pa, ms[0].pp, ms[0].w.Pool); err != nil {
			return nil, nil, state, err
		}
	}
	var fresh []int // indexes into ms of the slots taken here
	undo := func() {
		for _, i := range fresh {
			ms[i].al.Release(ms[i].o)
			ms[i].held = false
		}
		fresh = nil
	}
	// takeAll takes port in every pool of a member without a slot; false
	// with the state and error of the first refusal, nothing taken.
	takeAll := func(port int32) (bool, int, error) {
		for i := range ms {
			m := &ms[i]
			if m.held {
				continue
			}
			s, err := m.al.AllocateAt(m.o, port)
			if err != nil {
				undo()
				return false, i, err
			}
			m.slot, m.held = s, true
			fresh = append(fresh, i)
		}
		return true, 0, nil
	}
	if port != 0 {
		if ok, i, err := takeAll(port); !ok {
			state, err := allocErr(pa, ms[i].w, ms[i].al, ms[i].pp, err)
			if len(holders) > 0 && state == v1alpha1.StateNoPortAvailable {
				err = errors.Wrapf(err, "port %d/%s holds public port %d in pool %s and asks for the same port in every pool (useSamePortAcrossPools), but pool %s cannot give it; it waits for port %d there, or for a port free in all of its pools",
					ms[i].w.ContainerPort, ms[i].w.Protocol, port, strings.Join(holders, ", "), ms[i].w.Pool, port)
			}
			return nil, nil, state, err
		}
	} else {
		common := commonFree(ms)
		taken := false
		for range samePortTries {
			try, ok := common.Lowest()
			if !ok {
				break
			}
			ok, i, err := takeAll(try)
			if ok {
				taken = true
				break
			}
			if !errors.Is(err, portalloc.ErrTaken) && !errors.Is(err, portalloc.ErrNoPortAvailable) {
				state, err := allocErr(pa, ms[i].w, ms[i].al, ms[i].pp, err)
				return nil, nil, state, err
			}
			common.Remove(try) // taken meanwhile by another allocation
		}
		if !taken {
			return nil, nil, v1alpha1.StateNoPortAvailable, noCommonPort(ms)
		}
	}
	var bs []v1alpha1.PortBinding
	var freshPorts []Port
	for _, i := range fresh {
		freshPorts = append(freshPorts, ms[i].w)
	}
	for _, m := range ms {
		if m.had {
			continue
		}
		b := binding(m.pp, m.w, m.slot)
		if Departed(m.pp, b) {
			// As Allocate: a status read between two writes.
			for _, n := range ms {
				if !n.had {
					n.al.Release(n.o)
				}
			}
			return nil, nil, v1alpha1.StatePending, errors.Errorf("pool %s: the listeners of %s port %d are not in its status yet", m.w.Pool, m.slot.LB, m.slot.Port)
		}
		bs = append(bs, b)
	}
	for _, i := range fresh {
		if st, ok := ms[i].al.LBStats(ms[i].slot.LB); ok {
			p.usage(ms[i].w.Pool, []portalloc.LBStats{st})
		}
	}
	return bs, freshPorts, "", nil
}

// noCommonPort says that no public port is free in every pool of a group,
// with how many each has free.
func noCommonPort(ms []member) error {
	counts := make([]string, len(ms))
	for i, m := range ms {
		var mk portalloc.PortMask
		m.al.FreeAnywhere(&mk)
		counts[i] = fmt.Sprintf("%s %d", m.w.Pool, mk.Len())
	}
	w := ms[0].w
	return errors.Wrapf(portalloc.ErrNoPortAvailable, "port %d/%s asks for the same public port in every pool (useSamePortAcrossPools), and no port is free in all of them (free ports: %s)",
		w.ContainerPort, w.Protocol, strings.Join(counts, ", "))
}

// SamePortMoves reports whether the bindings kept of a same-port group
// must all go, to be allocated again as one: they hold different public
// ports, or their port cannot be had in a pool of the group that has no
// binding (its binding moved off a load balancer that left the pool, or
// the pool was added) while another port is free in all of the group's
// pools. why says which, for the Pod's event. When no other port is free
// in all of them, the kept bindings stay and the missing one waits for
// their port. A pool that cannot be read, or pools that can never share a
// port (Servable says why), move nothing.
func (p *Pools) SamePortMoves(ctx context.Context, pa *v1alpha1.PodAddress, g []Port, kept []v1alpha1.PortBinding) (bool, string) {
	if !samePort(g) {
		return false, ""
	}
	var port int32
	var mine []string
	var missing []Port
	for _, w := range g {
		i := slices.IndexFunc(kept, w.Of)
		if i < 0 {
			missing = append(missing, w)
			continue
		}
		mine = append(mine, fmt.Sprintf("%s %d", w.Pool, kept[i].Port))
		if port != 0 && kept[i].Port != port {
			return true, fmt.Sprintf("port %d/%s holds different public ports in its pools (%s) and asks for one (useSamePortAcrossPools): every binding of it moves to a port free in all of them",
				w.ContainerPort, w.Protocol, strings.Join(mine, ", "))
		}
		port = kept[i].Port
	}
	if port == 0 || len(missing) == 0 || pa.Spec.Strategy == v1alpha1.StrategyOrdinal {
		return false, ""
	}
	ms, _, err := p.members(ctx, pa, g)
	if err != nil || samePortProblem(g, pools(ms), false) != nil {
		return false, ""
	}
	var blocked string
	for _, m := range ms {
		if slices.Contains(missing, m.w) && !m.al.FreeAt(m.o, port) {
			blocked = m.w.Pool
			break
		}
	}
	if blocked == "" {
		return false, ""
	}
	common := commonFree(ms)
	if common.Len() == 0 {
		return false, ""
	}
	w := g[0]
	return true, fmt.Sprintf("port %d/%s holds public port %d, which pool %s cannot give it, and asks for the same port in every pool (useSamePortAcrossPools): every binding of it moves to a port free in all of %s",
		w.ContainerPort, w.Protocol, port, blocked, poolNames(g))
}

// samePortRefusal is why a same-port group whose ports are not all
// bound can never be served as its pools stand; nil when it can, or when
// a pool cannot be read (the allocation reports that).
func (p *Pools) samePortRefusal(ctx context.Context, pa *v1alpha1.PodAddress, g []Port) error {
	if !samePort(g) || !slices.ContainsFunc(g, func(w Port) bool { return !w.In(pa.Status.Bindings) }) {
		return nil
	}
	pps := make([]*clbv1alpha1.PortPool, len(g))
	for i, w := range g {
		pp, err := Read(ctx, p.kube, w.Pool)
		if err != nil {
			return nil
		}
		pps[i] = pp
	}
	return samePortProblem(g, pps, pa.Spec.Strategy == v1alpha1.StrategyOrdinal)
}

// SegmentFits refuses a port whose pool's segments its target cannot
// take: a segment of N ports forwards public port P+i to target port
// T+i, so T+N-1 must be a port too (65535 at most). A pool that cannot be
// read is left to the allocation.
func (p *Pools) SegmentFits(ctx context.Context, w Port, targetPort int32) error {
	pp, err := Read(ctx, p.kube, w.Pool)
	if err != nil {
		return nil
	}
	if seg := segmentOf(pp); seg > 1 && int64(targetPort)+seg-1 > 65535 {
		return errors.Errorf("PortPool %s gives segments of %d ports, forwarded to %d consecutive target ports from %d, which would end at %d, past 65535: use a target port of at most %d, or a pool of shorter segments",
			w.Pool, seg, seg, targetPort, int64(targetPort)+seg-1, 65535-seg+1)
	}
	return nil
}
