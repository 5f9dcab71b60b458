package emulator

import (
	"cmp"
	"slices"
)

// DataPlane carries traffic for the emulated load balancers. Apply receives
// the complete set of routes after every completed mutation and must make
// the open sockets match it exactly. The internal/emulator/dataplane
// package implements it over loopback sockets; the route types mirror its
// own so an adapter is a plain field copy.
type DataPlane interface {
	Apply(routes []Route) error
}

// Route is one listener as the data plane sees it: VIP:Port (or the range
// Port..EndPort) of a transport protocol, forwarded to Targets.
type Route struct {
	VIP      string
	Protocol string // "TCP" or "UDP"
	Port     int
	EndPort  int // 0 for a single port; for a range, port Port+i forwards to target port T+i
	Targets  []RouteTarget
}

// RouteTarget is one backend of a route. IP is the address to dial: the
// registered one, or its loopback image under Config.VPCLoopbackCIDR.
type RouteTarget struct {
	IP     string
	Port   int
	Weight int
}

// Routes returns the routes the data plane currently serves (or would
// serve, when none is configured).
func (e *Emulator) Routes() []Route {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.computeRoutes()
}

// routesLocked computes the routes when a data plane is configured.
// Called with e.mu held.
func (e *Emulator) routesLocked() ([]Route, bool) {
	if e.cfg.DataPlane == nil {
		return nil, false
	}
	return e.computeRoutes(), true
}

// computeRoutes derives the L4 view of the cloud. A load balancer whose
// task is still running contributes its last committed configuration, so
// traffic changes only when the task completes; one still being created
// contributes nothing; one being deleted keeps serving until its task ends.
// HTTP/HTTPS/TCP_SSL listeners forward as TCP (the union of their rules'
// targets for L7), UDP/QUIC ones as UDP. Target addresses are the ones the
// sockets dial: mapped onto loopback under VPCLoopbackCIDR.
func (e *Emulator) computeRoutes() []Route {
	var routes []Route
	add := func(lb *lbState) {
		if lb.committed != nil {
			lb = lb.committed
		}
		if lb.Status != 1 {
			return
		}
		for _, l := range lb.Listeners {
			r := Route{VIP: lb.VIP, Protocol: protocolFamily(l.Protocol), Port: int(l.Port), EndPort: int(l.EndPort)}
			seen := map[targetKey]bool{}
			addTargets := func(ts []*targetState) {
				for _, t := range ts {
					k := targetKey{t.IP, t.Port}
					if !seen[k] {
						seen[k] = true
						r.Targets = append(r.Targets, RouteTarget{IP: e.cfg.socketIP(t.IP), Port: int(t.Port), Weight: int(t.Weight)})
					}
				}
			}
			addTargets(l.Targets)
			for _, rule := range l.Rules {
				addTargets(rule.Targets)
			}
			routes = append(routes, r)
		}
	}
	for _, lb := range e.st.lbs {
		add(lb)
	}
	for _, lb := range e.st.dying {
		add(lb)
	}
	slices.SortFunc(routes, func(a, b Route) int {
		return cmp.Or(cmp.Compare(a.VIP, b.VIP), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.Port, b.Port))
	})
	return routes
}

// applyRoutes hands routes to the data plane unless they equal the last
// set applied. Called with e.dpMu held and e.mu released: Apply may block
// on sockets.
func (e *Emulator) applyRoutes(routes []Route) {
	if e.lastRoutes != nil && routesEqual(e.lastRoutes, routes) {
		return
	}
	if err := e.cfg.DataPlane.Apply(routes); err != nil {
		e.cfg.Logf("emulator: data plane: %v", err)
		e.lastRoutes = nil // retry on the next change
		return
	}
	if routes == nil {
		routes = []Route{}
	}
	e.lastRoutes = routes
}

// pushDataPlane recomputes and applies the routes after a synchronous change.
func (e *Emulator) pushDataPlane() {
	e.dpMu.Lock()
	defer e.dpMu.Unlock()
	e.mu.RLock()
	routes, push := e.routesLocked()
	e.mu.RUnlock()
	if push {
		e.applyRoutes(routes)
	}
}

// SetDataPlane attaches dp to a running emulator, or detaches the data
// plane (nil), and hands dp the current routes at once: a test of a
// shared emulator carries traffic only while it needs to, so that the
// others pay nothing for routes. Config.DataPlane does so from the start.
func (e *Emulator) SetDataPlane(dp DataPlane) {
	e.dpMu.Lock()
	defer e.dpMu.Unlock()
	e.mu.Lock()
	e.cfg.DataPlane = dp
	routes, push := e.routesLocked()
	e.mu.Unlock()
	e.lastRoutes = nil
	if push {
		e.applyRoutes(routes)
	}
}

func routesEqual(a, b []Route) bool {
	return slices.EqualFunc(a, b, func(x, y Route) bool {
		return x.VIP == y.VIP && x.Protocol == y.Protocol && x.Port == y.Port && x.EndPort == y.EndPort &&
			slices.Equal(x.Targets, y.Targets)
	})
}
