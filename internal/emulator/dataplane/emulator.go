package dataplane

import "github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"

// ForEmulator adapts p to the emulator's DataPlane hook, so the emulated
// load balancers carry real traffic:
//
//	cfg.DataPlane = dataplane.ForEmulator(p)
func ForEmulator(p *Plane) emulator.DataPlane { return emulatorPlane{p} }

type emulatorPlane struct{ p *Plane }

func (a emulatorPlane) Apply(routes []emulator.Route) error {
	out := make([]Route, len(routes))
	for i, r := range routes {
		ts := make([]Target, len(r.Targets))
		for j, t := range r.Targets {
			ts[j] = Target{IP: t.IP, Port: t.Port, Weight: t.Weight}
		}
		out[i] = Route{VIP: r.VIP, Protocol: r.Protocol, Port: r.Port, EndPort: r.EndPort, Targets: ts}
	}
	return a.p.Apply(out)
}
