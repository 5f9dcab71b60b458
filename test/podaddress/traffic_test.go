package podaddress

import (
	"context"
	"net"
	"testing"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/udpstream"
)

// carryTraffic gives the shared emulator a data plane, for this test
// only, that serves the load balancers of vips (loopback addresses):
// their listeners forward from VIP:port to the registered targets.
func carryTraffic(t *testing.T, vips ...string) {
	t.Helper()
	plane := dataplane.New(t.Logf)
	only := map[string]bool{}
	for _, v := range vips {
		if ip := net.ParseIP(v); ip == nil || !ip.IsLoopback() {
			t.Fatalf("VIP %q is not a loopback address: no packet may leave the machine", v)
		}
		only[v] = true
	}
	cloud.SetDataPlane(onlyVIPs{plane: dataplane.ForEmulator(plane), vips: only})
	t.Cleanup(func() {
		cloud.SetDataPlane(nil)
		_ = plane.Close()
	})
}

// onlyVIPs serves the routes of some VIPs: the shared emulator holds
// other tests' load balancers too.
type onlyVIPs struct {
	plane emulator.DataPlane
	vips  map[string]bool
}

func (o onlyVIPs) Apply(routes []emulator.Route) error {
	var mine []emulator.Route
	for _, r := range routes {
		if o.vips[r.VIP] {
			mine = append(mine, r)
		}
	}
	return o.plane.Apply(mine)
}

// udpEcho plays a game server on a loopback Pod IP until the test ends.
func udpEcho(t *testing.T, name, addr string) {
	t.Helper()
	_, stop, err := udpstream.Echo(name, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// startStream starts a player of server through addr (a loopback
// VIP:port) once a probe there is answered by server.
func startStream(t *testing.T, server, addr string) *udpstream.Stream {
	t.Helper()
	s, err := udpstream.Start(context.Background(), server, addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
