// Package dataplane gives the emulated CLB a real data plane: every TCP or
// UDP listener whose VIP is a loopback address becomes a socket on VIP:port
// that forwards traffic to the listener's registered targets, so tests can
// reach a local process through its "public" address.
//
// IPv4 VIPs are served on loopback, the only addresses a test host can bind
// without setup (Linux routes all of 127.0.0.0/8 to lo). IPv6 VIPs are
// unique local addresses (fd00::/8) served only once they are addresses of
// a local device (tests put them on lo): the socket binds
// without IPV6_FREEBIND, so the kernel refuses any other address.
//
// Targets of either family are dialled only when no packet to them can
// leave the machine: loopback, an address of this host, or an address
// whose most specific route has no gateway and is not on a default
// route's device (a Pod bridge, a range routed to lo), as the kernel's
// tables (/proc/net/route, /proc/net/ipv6_route) say when routes are applied.
package dataplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Default timeouts, used when the corresponding Plane field is zero.
const (
	DefaultDialTimeout    = 3 * time.Second
	DefaultUDPIdleTimeout = 60 * time.Second
)

// Target is one backend of a route.
type Target struct {
	IP     string
	Port   int
	Weight int // 0 (or negative) means the target is never chosen.
}

// Route is what one listener forwards: VIP:Port..EndPort (EndPort 0 = single
// port) for "TCP" or "UDP". For a port range, VIP:(Port+i) forwards to target
// (IP, Port+i) — i.e. target.Port is the base of the range.
type Route struct {
	VIP      string
	Protocol string
	Port     int
	EndPort  int
	Targets  []Target
}

// Plane owns the forwarding sockets. Its zero value is not usable; call New.
type Plane struct {
	// DialTimeout bounds connecting to a TCP target (DefaultDialTimeout if
	// zero). Set it before the first Apply; it applies to sockets opened later.
	DialTimeout time.Duration
	// UDPIdleTimeout is how long a UDP client session may see no traffic in
	// either direction before it is dropped (DefaultUDPIdleTimeout if zero).
	// Set it before the first Apply; it applies to sockets opened later.
	UDPIdleTimeout time.Duration

	logf func(format string, args ...any)
	wg   sync.WaitGroup // every goroutine the plane starts, so Close can wait

	mu      sync.Mutex // serializes Apply and Close
	closed  bool
	eps     map[string]endpoint
	skipped map[string]struct{} // routes skipped by the last Apply, to log each only once
}

// endpoint is one open socket (one VIP:port of one protocol).
type endpoint interface {
	setTargets([]backend)
	close()
}

// backend is a target resolved for one port of a route.
type backend struct {
	addr   string // host:port
	weight int
}

// New returns an empty Plane. logf receives diagnostics; nil discards them.
func New(logf func(format string, args ...any)) *Plane {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Plane{logf: logf, eps: map[string]endpoint{}, skipped: map[string]struct{}{}}
}

// want is one socket the routes ask for.
type want struct {
	proto    string // "TCP" or "UDP"
	addr     netip.AddrPort
	backends []backend
}

// Apply makes the open sockets exactly match routes: it opens new ones,
// closes removed ones (with their established connections), and swaps the
// target lists of existing ones in place, so clients connected through them
// survive unrelated changes. Routes with a non-loopback VIP or another
// protocol than TCP/UDP are skipped and logged once. Invalid routes and
// sockets that fail to bind are reported in the joined error; everything
// else is still applied.
func (p *Plane) Apply(routes []Route) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("dataplane: apply on closed plane")
	}
	wants, errs := p.plan(routes)

	// Close removed sockets first so a socket that moves between routes is free.
	for k, ep := range p.eps {
		if _, ok := wants[k]; !ok {
			ep.close()
			delete(p.eps, k)
		}
	}
	// Sorted for a deterministic bind order and error text.
	for _, k := range slices.Sorted(maps.Keys(wants)) {
		w := wants[k]
		if ep, ok := p.eps[k]; ok {
			ep.setTargets(w.backends)
			continue
		}
		ep, err := p.open(k, w)
		if err != nil {
			errs = append(errs, fmt.Errorf("dataplane: %s: %w", k, err))
			continue
		}
		p.eps[k] = ep
	}
	return errors.Join(errs...)
}

// plan validates routes and expands port ranges into one want per socket.
func (p *Plane) plan(routes []Route) (map[string]want, []error) {
	wants := map[string]want{}
	skipped := map[string]struct{}{}
	var errs []error
	var local localAddrs
	hostRoutes, hostRoutes6 := readRoutes("/proc/net/route"), readIPv6Routes("/proc/net/ipv6_route")
	skip := func(r Route, why string) {
		k := fmt.Sprintf("%s %s:%d-%d", r.Protocol, r.VIP, r.Port, r.EndPort)
		if _, logged := p.skipped[k]; !logged {
			p.logf("dataplane: skipping %s: %s", k, why)
		}
		skipped[k] = struct{}{}
	}
	for _, r := range routes {
		proto := strings.ToUpper(r.Protocol)
		if proto != "TCP" && proto != "UDP" {
			skip(r, "protocol not forwarded (only TCP and UDP are)")
			continue
		}
		ip, err := netip.ParseAddr(r.VIP)
		if err != nil {
			skip(r, "VIP is not an IP address")
			continue
		}
		ip = ip.Unmap()
		if !ip.IsLoopback() && !isULA(ip) {
			skip(r, "VIP is neither a loopback nor a unique local IPv6 address")
			continue
		}
		end := r.EndPort
		if end == 0 {
			end = r.Port
		}
		if r.Port < 1 || end > 65535 || end < r.Port {
			errs = append(errs, fmt.Errorf("dataplane: %s %s: invalid port range %d-%d", proto, r.VIP, r.Port, r.EndPort))
			continue
		}
		span := end - r.Port
		var targets []Target
		for _, t := range r.Targets {
			if t.IP == "" || t.Port < 1 || t.Port+span > 65535 {
				errs = append(errs, fmt.Errorf("dataplane: %s %s:%d: invalid target %q port %d for a range of %d ports",
					proto, r.VIP, r.Port, t.IP, t.Port, span+1))
				continue
			}
			if a, err := netip.ParseAddr(t.IP); err == nil && a.Unmap().Is6() && !local.has(a) && !hostRoutes6.local(a) {
				errs = append(errs, fmt.Errorf("dataplane: %s %s:%d: target %s is neither an address of this host nor routed to a local device: IPv6 targets are only dialled on loopback, this host's addresses or a local device such as a Pod bridge, never through a gateway or the default route's device",
					proto, r.VIP, r.Port, t.IP))
				continue
			}
			if a, err := netip.ParseAddr(t.IP); err == nil && a.Unmap().Is4() && !local.has(a) && !hostRoutes.local(a.Unmap()) {
				errs = append(errs, fmt.Errorf("dataplane: %s %s:%d: target %s is routed off this host (through a gateway or the default route's device): IPv4 targets are only dialled on loopback or a local device such as a Pod bridge",
					proto, r.VIP, r.Port, t.IP))
				continue
			}
			targets = append(targets, t)
		}
		for i := 0; i <= span; i++ {
			w := want{proto: proto, addr: netip.AddrPortFrom(ip, uint16(r.Port+i))}
			k := proto + " " + w.addr.String()
			if _, dup := wants[k]; dup {
				errs = append(errs, fmt.Errorf("dataplane: %s: claimed by more than one route", k))
				continue
			}
			for _, t := range targets {
				w.backends = append(w.backends, backend{
					addr:   net.JoinHostPort(t.IP, strconv.Itoa(t.Port+i)),
					weight: t.Weight,
				})
			}
			wants[k] = w
		}
	}
	p.skipped = skipped
	return wants, errs
}

// isULA reports whether a is a unique local IPv6 address (fd00::/8).
func isULA(a netip.Addr) bool {
	return a.Is6() && a.As16()[0] == 0xfd
}

// localAddrs answers whether an address is this host's: loopback, or
// assigned to one of its interfaces (read once, on first use).
type localAddrs struct {
	read  bool
	addrs map[netip.Addr]bool
}

func (l *localAddrs) has(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() {
		return true
	}
	if !l.read {
		l.read, l.addrs = true, map[netip.Addr]bool{}
		as, _ := net.InterfaceAddrs() // on error nothing but loopback counts as local
		for _, ia := range as {
			if n, ok := ia.(*net.IPNet); ok {
				if x, ok := netip.AddrFromSlice(n.IP); ok {
					l.addrs[x.Unmap()] = true
				}
			}
		}
	}
	return l.addrs[a]
}

// open binds the socket for w and starts serving it.
func (p *Plane) open(name string, w want) (endpoint, error) {
	dial, idle := p.DialTimeout, p.UDPIdleTimeout
	if dial <= 0 {
		dial = DefaultDialTimeout
	}
	if idle <= 0 {
		idle = DefaultUDPIdleTimeout
	}
	if w.proto == "TCP" {
		ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(w.addr))
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		e := &tcpEndpoint{name: name, ln: ln, ctx: ctx, cancel: cancel, dialTimeout: dial,
			logf: p.logf, wg: &p.wg, conns: map[net.Conn]struct{}{}}
		e.setTargets(w.backends)
		p.wg.Go(e.serve)
		return e, nil
	}
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(w.addr))
	if err != nil {
		return nil, err
	}
	e := &udpEndpoint{name: name, pc: pc, idle: idle, logf: p.logf, wg: &p.wg,
		sessions: map[netip.AddrPort]*udpSession{}}
	e.setTargets(w.backends)
	p.wg.Go(e.serve)
	return e, nil
}

// Close closes every socket and connection and returns once all goroutines
// the plane started have exited. Later Apply calls fail; Close is idempotent.
func (p *Plane) Close() error {
	p.mu.Lock()
	p.closed = true
	for k, ep := range p.eps {
		ep.close()
		delete(p.eps, k)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// picker chooses backends by smooth weighted round robin (as nginx does):
// it honours weights exactly over each cycle while interleaving choices.
type picker struct {
	backends []backend // as given, for change detection
	mu       sync.Mutex
	eligible []backend // weight > 0 only
	current  []int
	total    int
}

func newPicker(bs []backend) *picker {
	p := &picker{backends: bs}
	for _, b := range bs {
		if b.weight > 0 {
			p.eligible = append(p.eligible, b)
			p.total += b.weight
		}
	}
	p.current = make([]int, len(p.eligible))
	return p
}

// next returns the chosen backend's address, or false if none is eligible.
func (p *picker) next() (string, bool) {
	if p == nil || p.total == 0 {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	best := 0
	for i, b := range p.eligible {
		p.current[i] += b.weight
		if p.current[i] > p.current[best] {
			best = i
		}
	}
	p.current[best] -= p.total
	return p.eligible[best].addr, true
}

// has reports whether addr is still an eligible backend.
func (p *picker) has(addr string) bool {
	return slices.ContainsFunc(p.eligible, func(b backend) bool { return b.addr == addr })
}

// samePicker reports whether cur already serves exactly bs, in which case
// keeping it preserves round-robin state across no-op Applies.
func samePicker(cur *picker, bs []backend) bool {
	return cur != nil && slices.Equal(cur.backends, bs)
}
