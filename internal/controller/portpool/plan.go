package portpool

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// Defaults of the PortPool API.
const (
	defaultSegmentLength = 1
	defaultProtocol      = "TCP"
	defaultMinFreeSlots  = 1
)

// Protocol families: listeners of one family cannot share a port. TCP,
// TCP_SSL (and HTTP/HTTPS) use the TCP port space, UDP and QUIC the UDP one.
const (
	familyTCP = "TCP"
	familyUDP = "UDP"
)

func family(protocol string) string {
	if protocol == "UDP" || protocol == "QUIC" {
		return familyUDP
	}
	return familyTCP
}

// shape is the geometry of a pool: which listeners every load balancer of
// it carries.
type shape struct {
	start, end int64 // the spec's port range
	seg        int64 // ports per slot
	protocols  []string
	slots      int64 // slots per load balancer
}

// segments is how many whole slots the port range holds.
func segments(start, end, seg int64) int64 {
	if seg < 1 || end < start {
		return 0
	}
	return (end - start + 1) / seg
}

// slotsPerLB caps the segments of the range by the listener quota: every
// slot takes one listener per protocol.
func slotsPerLB(segs, quota int64, protocols int) int64 {
	if protocols < 1 {
		protocols = 1
	}
	return max(0, min(segs, quota/int64(protocols)))
}

// protocols returns the pool's protocols, defaulted, in a fixed order.
func protocols(p v1alpha1.PortPoolParameters) []string {
	if len(p.Protocols) == 0 {
		return []string{defaultProtocol}
	}
	out := slices.Clone(p.Protocols)
	sort.Strings(out)
	return slices.Compact(out)
}

func segmentLength(p v1alpha1.PortPoolParameters) int64 {
	if p.SegmentLength == nil || *p.SegmentLength < 1 {
		return defaultSegmentLength
	}
	return *p.SegmentLength
}

// newShape computes the pool's geometry for a listener quota per load
// balancer. It refuses protocol sets that cannot share a port.
func newShape(p v1alpha1.PortPoolParameters, quota int64) (shape, error) {
	s := shape{start: p.StartPort, end: p.EndPort, seg: segmentLength(p), protocols: protocols(p)}
	seen := map[string]string{}
	for _, proto := range s.protocols {
		if other, ok := seen[family(proto)]; ok {
			return shape{}, fmt.Errorf("protocols %s and %s both use the %s port space; a port holds only one of them, so a pool cannot serve both",
				other, proto, family(proto))
		}
		seen[family(proto)] = proto
	}
	segs := segments(s.start, s.end, s.seg)
	s.slots = slotsPerLB(segs, quota, len(s.protocols))
	if s.slots == 0 {
		return shape{}, fmt.Errorf("no slot fits: the port range holds %d segments and the listener quota of %d per load balancer does not cover one listener for each of %d protocols",
			segs, quota, len(s.protocols))
	}
	return s, nil
}

// port is the first port of slot i.
func (s shape) port(i int64) int64 { return s.start + i*s.seg }

// endPort is the EndPort of slot i's listener: 0 for single ports.
func (s shape) endPort(i int64) int64 {
	if s.seg == 1 {
		return 0
	}
	return s.port(i) + s.seg - 1
}

// lastPort is the last port any slot covers.
func (s shape) lastPort() int64 { return s.port(s.slots) - 1 }

// slotOf returns the slot whose range holds port, or false.
func (s shape) slotOf(port int64) (int64, bool) {
	if port < s.start || port > s.lastPort() {
		return 0, false
	}
	return (port - s.start) / s.seg, true
}

// key names a listener in status.
func key(protocol string, port int64) string {
	return v1alpha1.ListenerKey{Protocol: protocol, Port: int32(port)}.String() //nolint:gosec // G115: ports are 1-65535.
}

// lbListeners is what one load balancer's listeners mean to the pool.
type lbListeners struct {
	// ids of the pool's listeners by key, for the wanted slots.
	ids map[string]string
	// missing start ports per protocol, ascending, that nothing blocks.
	missing map[string][]int64
	// conflicts describe listeners of others on the pool's ports.
	conflicts []string
	// waiting counts wanted listeners blocked only by stale listeners of
	// the pool that will be deleted first.
	waiting int
	// drift lists the pool's listeners whose settings differ.
	drift []drifted
	// stale are the pool's own listeners that no slot wants (a protocol
	// removed, a smaller quota), with their start ports.
	stale []staleListener
	// usable counts the slots whose listeners exist for every protocol.
	usable map[int64]bool
}

type drifted struct {
	id, key, diff string
	protocol      string
	// settings are the listener's: the pool's, with a binding's
	// certificate in place of the pool's (withCert).
	settings *v1alpha1.PoolListenerSettings
}

// withCert is settings with certID, when set, as the certificate: that
// of a listener whose slot a binding with its own certificate holds.
// Every other listener takes the pool's, so a released slot gets the
// pool's back.
func withCert(settings *v1alpha1.PoolListenerSettings, certID string) *v1alpha1.PoolListenerSettings {
	if certID == "" {
		return settings
	}
	out := &v1alpha1.PoolListenerSettings{}
	if settings != nil {
		out = settings.DeepCopy()
	}
	out.Certificate = &v1alpha1.Certificate{CertID: certID}
	return out
}

type staleListener struct {
	id   string
	port int64
}

// wanted is the number of listeners the pool needs on one load balancer.
func (s shape) wanted() int64 { return s.slots * int64(len(s.protocols)) }

// match sorts the listeners of one load balancer into the pool's own
// (wanted or stale), those missing, and conflicts. A listener belongs to the
// pool when its name is the one the pool gives that port, or when the pool
// took it over from tke-extend (adopted, by id; see tkeextend.go); any
// other listener overlapping a pool port in the same protocol family is a
// conflict. certs are the certificates bindings carry, by key: those
// listeners are compared with them in place of the pool's.
func match(s shape, owner namer, settings *v1alpha1.PoolListenerSettings, listeners []*clbsdk.Listener, adopted map[string]bool, certs map[string]string) lbListeners {
	out := lbListeners{ids: map[string]string{}, missing: map[string][]int64{}, usable: map[int64]bool{}}
	// blockers[protocol][slot] lists what occupies a wanted slot.
	blockers := map[string]map[int64][]*clbsdk.Listener{}
	for _, p := range s.protocols {
		blockers[p] = map[int64][]*clbsdk.Listener{}
	}
	ours := func(l *clbsdk.Listener) bool {
		return clb.Deref(l.ListenerName) == owner.listenerName(clb.Deref(l.Port)) || adopted[clb.Deref(l.ListenerId)]
	}
	for _, l := range listeners {
		if l == nil || l.ListenerId == nil {
			continue
		}
		proto, port := clb.Deref(l.Protocol), clb.Deref(l.Port)
		last := port
		if e := clb.Deref(l.EndPort); e > port {
			last = e
		}
		if ours(l) {
			if i, ok := s.slotOf(port); ok && slices.Contains(s.protocols, proto) && s.port(i) == port &&
				clb.Deref(l.EndPort) == s.endPort(i) {
				k := key(proto, port)
				out.ids[k] = *l.ListenerId
				want := withCert(settings, certs[k])
				if d := clb.DiffPoolListener(want, proto, l); d != "" {
					out.drift = append(out.drift, drifted{id: *l.ListenerId, key: k, diff: d, protocol: proto, settings: want})
				}
				continue
			}
			out.stale = append(out.stale, staleListener{id: *l.ListenerId, port: port})
		}
		if last < s.start || port > s.lastPort() {
			continue
		}
		first, _ := s.slotOf(max(port, s.start))
		end, _ := s.slotOf(min(last, s.lastPort()))
		for _, p := range s.protocols {
			if family(p) != family(proto) {
				continue
			}
			for i := first; i <= end; i++ {
				blockers[p][i] = append(blockers[p][i], l)
			}
		}
	}
	for i := int64(0); i < s.slots; i++ {
		complete := true
		for _, p := range s.protocols {
			k := key(p, s.port(i))
			if _, ok := out.ids[k]; ok {
				continue
			}
			complete = false
			bs := blockers[p][i]
			if len(bs) == 0 {
				out.missing[p] = append(out.missing[p], s.port(i))
				continue
			}
			foreign := false
			for _, b := range bs {
				switch {
				case ours(b):
				case isTKE(b):
					foreign = true
					out.conflicts = append(out.conflicts, fmt.Sprintf("%s is taken by tke-extend's listener %s (%s %s), not taken over: one on a slot is taken over once the switch is made (in a GameServerSet's pool, once a binding records it; status tkeListeners), one of another protocol or end port never",
						k, clb.Deref(b.ListenerId), clb.Deref(b.Protocol), portText(b)))
				default:
					foreign = true
					out.conflicts = append(out.conflicts, fmt.Sprintf("%s is taken by listener %s (%s %s, named %q)",
						k, clb.Deref(b.ListenerId), clb.Deref(b.Protocol), portText(b), clb.Deref(b.ListenerName)))
				}
			}
			if !foreign {
				out.waiting++
			}
		}
		out.usable[i] = complete
	}
	out.conflicts = slices.Compact(out.conflicts)
	return out
}

func portText(l *clbsdk.Listener) string {
	if e := clb.Deref(l.EndPort); e > 0 {
		return fmt.Sprintf("%d-%d", clb.Deref(l.Port), e)
	}
	return fmt.Sprint(clb.Deref(l.Port))
}

// ready counts the wanted listeners that exist.
func (m lbListeners) ready() int64 { return int64(len(m.ids)) }

// createBatches splits the missing listeners into CreateListener requests:
// per protocol, up to 49 ports a call for single ports, and one call per
// segment, because a port-range listener (EndPort) takes exactly one start
// port per call.
func createBatches(s shape, lbID string, owner namer, settings *v1alpha1.PoolListenerSettings, missing map[string][]int64) []*clbsdk.CreateListenerRequest {
	var out []*clbsdk.CreateListenerRequest
	for _, p := range s.protocols {
		ports := missing[p]
		size := clb.MaxCreateListenerPorts
		if s.seg > 1 {
			size = 1
		}
		for len(ports) > 0 {
			n := min(size, len(ports))
			out = append(out, createRequest(s, lbID, p, ports[:n], owner, settings))
			ports = ports[n:]
		}
	}
	return out
}

// deleteBatches splits listener ids into DeleteLoadBalancerListeners calls.
func deleteBatches(ids []string) [][]string {
	var out [][]string
	for len(ids) > 0 {
		n := min(clb.MaxDeleteListenerIDs, len(ids))
		out = append(out, ids[:n])
		ids = ids[n:]
	}
	return out
}

// lbUsage is one load balancer's part of the pool, for the free-capacity
// arithmetic.
type lbUsage struct {
	state       string
	autoCreated bool
	free        int64 // usable now
	allocated   int64
}

// needLoadBalancer reports whether autoCreate should add a load balancer:
// the pool's capacity, counting load balancers that are still being
// prepared at their full size, is below minFreeSlots, and fewer than
// maxLoadBalancers were created. Counting those being prepared is what keeps
// one shortage from creating a load balancer per reconcile.
func needLoadBalancer(ac *v1alpha1.PoolAutoCreate, slots int64, lbs []lbUsage) bool {
	if ac == nil {
		return false
	}
	minFree := int64(defaultMinFreeSlots)
	if ac.MinFreeSlots != nil && *ac.MinFreeSlots > 0 {
		minFree = *ac.MinFreeSlots
	}
	var auto, capacity int64
	for _, lb := range lbs {
		if lb.autoCreated && lb.state != v1alpha1.PoolLBNotFound {
			auto++
		}
		switch lb.state {
		case v1alpha1.PoolLBReady:
			capacity += lb.free
		case v1alpha1.PoolLBCreating:
			capacity += max(0, slots-lb.allocated)
		}
	}
	return auto < ac.MaxLoadBalancers && capacity < minFree
}

// summary joins problems, at most limit of them, saying how many more.
func summary(problems []string, limit int) string {
	if len(problems) <= limit {
		return strings.Join(problems, "; ")
	}
	return strings.Join(problems[:limit], "; ") + fmt.Sprintf("; and %d more", len(problems)-limit)
}
