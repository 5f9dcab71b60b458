package dataplane

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logRec collects the plane's log lines for assertions.
type logRec struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (l *logRec) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.t.Logf(format, args...)
}

func (l *logRec) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

func newPlane(t *testing.T) (*Plane, *logRec) {
	t.Helper()
	rec := &logRec{t: t}
	p := New(rec.logf)
	t.Cleanup(func() { p.Close() })
	return p, rec
}

// consecutive binds n listeners on consecutive ports of 127.0.0.1, retrying
// on conflicts, and returns them.
func consecutive[L io.Closer](t *testing.T, n int, listen func(port int) (L, int, error)) []L {
	t.Helper()
	for range 50 {
		first, base, err := listen(0)
		if err != nil {
			t.Fatal(err)
		}
		ls := []L{first}
		for i := 1; i < n; i++ {
			l, _, err := listen(base + i)
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		if len(ls) == n {
			return ls
		}
		for _, l := range ls {
			l.Close()
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return nil
}

// echoTCP starts n line-echo servers on consecutive ports; server i answers
// each line with "<name><i>:<line>" and closes when the client half-closes.
// It returns the first port.
func echoTCP(t *testing.T, name string, n int) int {
	t.Helper()
	lns := consecutive(t, n, func(port int) (*net.TCPListener, int, error) {
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			return nil, 0, err
		}
		return ln, ln.Addr().(*net.TCPAddr).Port, nil
	})
	var wg sync.WaitGroup
	for i, ln := range lns {
		id := name + strconv.Itoa(i)
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				wg.Go(func() {
					defer c.Close()
					sc := bufio.NewScanner(c)
					for sc.Scan() {
						if _, err := fmt.Fprintf(c, "%s:%s\n", id, sc.Text()); err != nil {
							return
						}
					}
				})
			}
		})
	}
	t.Cleanup(func() {
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
	})
	return lns[0].Addr().(*net.TCPAddr).Port
}

// echoUDP is echoTCP for datagrams: each one is answered with "<name><i>:<payload>".
func echoUDP(t *testing.T, name string, n int) int {
	t.Helper()
	pcs := consecutive(t, n, func(port int) (*net.UDPConn, int, error) {
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			return nil, 0, err
		}
		return pc, pc.LocalAddr().(*net.UDPAddr).Port, nil
	})
	var wg sync.WaitGroup
	for i, pc := range pcs {
		id := name + strconv.Itoa(i)
		wg.Go(func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := pc.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				pc.WriteToUDPAddrPort([]byte(id+":"+string(buf[:n])), from)
			}
		})
	}
	t.Cleanup(func() {
		for _, pc := range pcs {
			pc.Close()
		}
		wg.Wait()
	})
	return pcs[0].LocalAddr().(*net.UDPAddr).Port
}

// freeRange finds n consecutive ports free for both TCP and UDP on vip.
func freeRange(t *testing.T, vip string, n int) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", net.JoinHostPort(vip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ok := base+n-1 <= 65535
		for i := 0; ok && i < n; i++ {
			addr := net.JoinHostPort(vip, strconv.Itoa(base+i))
			l, err1 := net.Listen("tcp", addr)
			pc, err2 := net.ListenPacket("udp", addr)
			ok = err1 == nil && err2 == nil
			if l != nil {
				l.Close()
			}
			if pc != nil {
				pc.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d free ports on %s", n, vip)
	return 0
}

// applyFresh applies mk(base) for a free port range on vip, retrying with new
// ports if another process grabbed one in between. It returns base.
func applyFresh(t *testing.T, p *Plane, vip string, n int, mk func(base int) []Route) int {
	t.Helper()
	for range 10 {
		base := freeRange(t, vip, n)
		err := p.Apply(mk(base))
		if err == nil {
			return base
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("Apply: %v", err)
		}
	}
	t.Fatal("Apply kept hitting ports in use")
	return 0
}

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

// ask sends one line on c and returns the answer line.
func ask(t *testing.T, c net.Conn, msg string) string {
	t.Helper()
	if _, err := fmt.Fprintln(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	// Byte-at-a-time so no reply data is buffered away from later asks.
	var b strings.Builder
	one := make([]byte, 1)
	for {
		if _, err := c.Read(one); err != nil {
			t.Fatalf("read after %q: %v", b.String(), err)
		}
		if one[0] == '\n' {
			return b.String()
		}
		b.WriteByte(one[0])
	}
}

// askTCP makes one connection, asks once and closes.
func askTCP(t *testing.T, addr, msg string) string {
	t.Helper()
	c := dialTCP(t, addr)
	defer c.Close()
	return ask(t, c, msg)
}

func dialUDP(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.UDPConn)
}

func askUDP(t *testing.T, c *net.UDPConn, msg string) string {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("udp write: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("udp read after %q: %v", msg, err)
	}
	return string(buf[:n])
}

// refused reports whether nothing listens on addr for TCP.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

func target(port, weight int) Target { return Target{IP: "127.0.0.1", Port: port, Weight: weight} }

func TestTCPRoundTrip(t *testing.T) {
	p, _ := newPlane(t)
	a := echoTCP(t, "A", 1)
	const vip = "127.1.200.1"
	port := applyFresh(t, p, vip, 1, func(base int) []Route {
		return []Route{{VIP: vip, Protocol: "TCP", Port: base, Targets: []Target{target(a, 10)}}}
	})
	if got := askTCP(t, hostPort(vip, port), "hello"); got != "A0:hello" {
		t.Fatalf("got %q, want A0:hello", got)
	}

	// Half-close: the client's FIN must reach the target while replies still
	// flow back, and the target's close must reach the client as EOF.
	c := dialTCP(t, hostPort(vip, port))
	io.WriteString(c, "x\ny\n")
	c.(*net.TCPConn).CloseWrite()
	all, err := io.ReadAll(c)
	if err != nil || string(all) != "A0:x\nA0:y\n" {
		t.Fatalf("after half-close read %q, %v", all, err)
	}
}

func TestUDPRoundTrip(t *testing.T) {
	p, _ := newPlane(t)
	a := echoUDP(t, "A", 1)
	const vip = "127.1.200.2"
	port := applyFresh(t, p, vip, 1, func(base int) []Route {
		return []Route{{VIP: vip, Protocol: "udp", Port: base, Targets: []Target{target(a, 1)}}}
	})
	c := dialUDP(t, hostPort(vip, port))
	for i := range 3 {
		msg := "ping" + strconv.Itoa(i)
		if got := askUDP(t, c, msg); got != "A0:"+msg {
			t.Fatalf("got %q, want A0:%s", got, msg)
		}
	}
	// Replies must come from the VIP, or a connected client socket would drop them.
	if got := c.RemoteAddr().String(); got != hostPort(vip, port) {
		t.Fatalf("remote %s", got)
	}
}

func TestPortRangeMapsToTargetBasePlusOffset(t *testing.T) {
	p, _ := newPlane(t)
	tcpBase := echoTCP(t, "T", 3)
	udpBase := echoUDP(t, "U", 3)
	const vip = "127.1.200.3"
	base := applyFresh(t, p, vip, 3, func(base int) []Route {
		return []Route{
			{VIP: vip, Protocol: "TCP", Port: base, EndPort: base + 2, Targets: []Target{target(tcpBase, 1)}},
			{VIP: vip, Protocol: "UDP", Port: base, EndPort: base + 2, Targets: []Target{target(udpBase, 1)}},
		}
	})
	for i := range 3 {
		addr := hostPort(vip, base+i)
		if got, want := askTCP(t, addr, "r"), fmt.Sprintf("T%d:r", i); got != want {
			t.Errorf("TCP port base+%d: got %q, want %q", i, got, want)
		}
		if got, want := askUDP(t, dialUDP(t, addr), "r"), fmt.Sprintf("U%d:r", i); got != want {
			t.Errorf("UDP port base+%d: got %q, want %q", i, got, want)
		}
	}
	if !refused(hostPort(vip, base+3)) {
		t.Error("port past the range is open")
	}
}

func TestApplySwapsTargetsInPlaceAndRemovesRoutes(t *testing.T) {
	p, _ := newPlane(t)
	a, b := echoTCP(t, "A", 1), echoTCP(t, "B", 1)
	const vip = "127.1.200.4"
	route := func(port, to int) []Route {
		return []Route{{VIP: vip, Protocol: "TCP", Port: port, Targets: []Target{target(to, 1)}}}
	}
	port := applyFresh(t, p, vip, 1, func(base int) []Route { return route(base, a) })
	addr := hostPort(vip, port)

	held := dialTCP(t, addr)
	if got := ask(t, held, "1"); got != "A0:1" {
		t.Fatalf("got %q", got)
	}
	ep := p.eps["TCP "+addr]

	if err := p.Apply(route(port, b)); err != nil {
		t.Fatal(err)
	}
	if p.eps["TCP "+addr] != ep {
		t.Fatal("listener was replaced instead of updated in place")
	}
	if got := askTCP(t, addr, "2"); got != "B0:2" {
		t.Fatalf("new connection after target change: got %q, want B0:2", got)
	}
	if got := ask(t, held, "3"); got != "A0:3" {
		t.Fatalf("established connection after target change: got %q, want A0:3", got)
	}

	if err := p.Apply(nil); err != nil {
		t.Fatal(err)
	}
	if !refused(addr) {
		t.Fatal("removed route still accepts connections")
	}
	// Deleting the listener also ends connections through it.
	if _, err := held.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection through removed listener still open")
	}
}

func TestUDPApplySwitchesTargetAndRemoves(t *testing.T) {
	p, _ := newPlane(t)
	a, b := echoUDP(t, "A", 1), echoUDP(t, "B", 1)
	const vip = "127.1.200.5"
	route := func(port, to int) []Route {
		return []Route{{VIP: vip, Protocol: "UDP", Port: port, Targets: []Target{target(to, 1)}}}
	}
	port := applyFresh(t, p, vip, 1, func(base int) []Route { return route(base, a) })
	addr := hostPort(vip, port)
	c := dialUDP(t, addr)
	if got := askUDP(t, c, "1"); got != "A0:1" {
		t.Fatalf("got %q", got)
	}
	if err := p.Apply(route(port, b)); err != nil {
		t.Fatal(err)
	}
	// The session to the removed target is dropped, so the same client moves on.
	if got := askUDP(t, c, "2"); got != "B0:2" {
		t.Fatalf("after target change got %q, want B0:2", got)
	}
	if err := p.Apply(nil); err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("removed UDP route still holds its port: %v", err)
	}
	pc.Close()
}

func TestWeightedRoundRobin(t *testing.T) {
	p, _ := newPlane(t)
	a, b, z := echoTCP(t, "A", 1), echoTCP(t, "B", 1), echoTCP(t, "Z", 1)
	const vip = "127.1.200.6"
	port := applyFresh(t, p, vip, 1, func(base int) []Route {
		return []Route{{VIP: vip, Protocol: "TCP", Port: base, Targets: []Target{target(a, 1), target(b, 3), target(z, 0)}}}
	})
	counts := map[string]int{}
	for range 400 {
		got := askTCP(t, hostPort(vip, port), "w")
		counts[strings.TrimSuffix(got, ":w")]++
	}
	t.Logf("distribution: %v", counts)
	if counts["Z0"] != 0 {
		t.Errorf("weight-0 target chosen %d times", counts["Z0"])
	}
	if counts["A0"] < 70 || counts["A0"] > 130 || counts["A0"]+counts["B0"] != 400 {
		t.Errorf("want roughly 100:300, got %v", counts)
	}
}

func TestNoEligibleTargetClosesConnection(t *testing.T) {
	p, _ := newPlane(t)
	z := echoTCP(t, "Z", 1)
	const vip = "127.1.200.7"
	base := applyFresh(t, p, vip, 2, func(base int) []Route {
		return []Route{
			{VIP: vip, Protocol: "TCP", Port: base},
			{VIP: vip, Protocol: "TCP", Port: base + 1, Targets: []Target{target(z, 0)}},
		}
	})
	for i := range 2 {
		c := dialTCP(t, hostPort(vip, base+i))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := c.Read(make([]byte, 1))
		if err == nil || errors.Is(err, syscall.ETIMEDOUT) || isTimeout(err) {
			t.Errorf("port base+%d: want prompt close, got %v", i, err)
		}
	}

	// UDP without an eligible target drops datagrams and keeps no session.
	const uvip = "127.1.200.13"
	port := applyFresh(t, p, uvip, 1, func(base int) []Route {
		return []Route{{VIP: uvip, Protocol: "UDP", Port: base, Targets: []Target{target(z, 0)}}}
	})
	c := dialUDP(t, hostPort(uvip, port))
	c.Write([]byte("x"))
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c.Read(make([]byte, 64)); !isTimeout(err) {
		t.Errorf("UDP without targets answered: %d bytes, %v", n, err)
	}
	ep := p.eps["UDP "+hostPort(uvip, port)].(*udpEndpoint)
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if len(ep.sessions) != 0 {
		t.Errorf("%d sessions without targets", len(ep.sessions))
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestSkipsNonLoopbackAndReportsBindFailures(t *testing.T) {
	p, rec := newPlane(t)
	a := echoTCP(t, "A", 1)
	const vip = "127.1.200.8"
	base := freeRange(t, vip, 2)
	busy, err := net.Listen("tcp", hostPort(vip, base))
	if err != nil {
		t.Skipf("port taken meanwhile: %v", err)
	}
	defer busy.Close()
	routes := []Route{
		{VIP: "10.1.2.3", Protocol: "TCP", Port: 80, Targets: []Target{target(a, 1)}},
		{VIP: vip, Protocol: "HTTP", Port: 80, Targets: []Target{target(a, 1)}},
		{VIP: vip, Protocol: "TCP", Port: base, Targets: []Target{target(a, 1)}},
		{VIP: vip, Protocol: "TCP", Port: base + 1, Targets: []Target{target(a, 1)}},
	}
	for range 2 {
		err := p.Apply(routes)
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("want EADDRINUSE for the busy port, got %v", err)
		}
		if got := askTCP(t, hostPort(vip, base+1), "ok"); got != "A0:ok" {
			t.Fatalf("healthy route: got %q", got)
		}
	}
	if n := rec.count("10.1.2.3"); n != 1 {
		t.Errorf("non-loopback route logged %d times, want once", n)
	}
	if n := rec.count("HTTP"); n != 1 {
		t.Errorf("HTTP route logged %d times, want once", n)
	}
	// Once the port frees up, the next Apply binds it.
	busy.Close()
	if err := p.Apply(routes); err != nil {
		t.Fatalf("after freeing the port: %v", err)
	}
	if got := askTCP(t, hostPort(vip, base), "late"); got != "A0:late" {
		t.Fatalf("got %q", got)
	}
}

func TestInvalidRoutesAreErrorsButOthersApply(t *testing.T) {
	p, _ := newPlane(t)
	a := echoTCP(t, "A", 1)
	const vip = "127.1.200.9"
	base := freeRange(t, vip, 1)
	err := p.Apply([]Route{
		{VIP: vip, Protocol: "TCP", Port: 0},
		{VIP: vip, Protocol: "TCP", Port: 20, EndPort: 10},
		{VIP: vip, Protocol: "TCP", Port: base, Targets: []Target{target(a, 1), {IP: "127.0.0.1", Port: 70000, Weight: 1}}},
		{VIP: vip, Protocol: "TCP", Port: base},
	})
	for _, want := range []string{"invalid port range 0-0", "invalid port range 20-10", "invalid target", "more than one route"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
	if got := askTCP(t, hostPort(vip, base), "v"); got != "A0:v" {
		t.Fatalf("valid part of the route: got %q", got)
	}
}

func TestUDPIdleSessionsExpire(t *testing.T) {
	p, _ := newPlane(t)
	p.UDPIdleTimeout = 200 * time.Millisecond
	a := echoUDP(t, "A", 1)
	const vip = "127.1.200.10"
	port := applyFresh(t, p, vip, 1, func(base int) []Route {
		return []Route{{VIP: vip, Protocol: "UDP", Port: base, Targets: []Target{target(a, 1)}}}
	})
	addr := hostPort(vip, port)
	ep := p.eps["UDP "+addr].(*udpEndpoint)
	sessions := func() int {
		ep.mu.Lock()
		defer ep.mu.Unlock()
		return len(ep.sessions)
	}
	c := dialUDP(t, addr)
	askUDP(t, c, "1")
	askUDP(t, dialUDP(t, addr), "2")
	if n := sessions(); n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
	// Traffic keeps a session alive past the timeout.
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		askUDP(t, c, "keep")
	}
	if n := sessions(); n != 1 {
		t.Fatalf("%d sessions, want only the active one", n)
	}
	waitFor(t, 3*time.Second, "idle sessions to expire", func() bool { return sessions() == 0 })
	if got := askUDP(t, c, "again"); got != "A0:again" {
		t.Fatalf("after expiry got %q", got)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConcurrentApply(t *testing.T) {
	p, _ := newPlane(t)
	a := echoTCP(t, "A", 1)
	u := echoUDP(t, "U", 1)
	const vip = "127.1.200.11"
	base := freeRange(t, vip, 3)
	all := []Route{
		{VIP: vip, Protocol: "TCP", Port: base, Targets: []Target{target(a, 1)}},
		{VIP: vip, Protocol: "TCP", Port: base + 1, EndPort: base + 2, Targets: []Target{target(a, 1)}},
		{VIP: vip, Protocol: "UDP", Port: base, Targets: []Target{target(u, 1)}},
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 25 {
				var sub []Route
				for _, rt := range all {
					if r.IntN(2) == 0 {
						sub = append(sub, rt)
					}
				}
				if err := p.Apply(sub); err != nil {
					t.Errorf("Apply: %v", err)
				}
			}
		})
	}
	// Traffic while the routes churn must never crash or hang the plane.
	wg.Go(func() {
		for range 50 {
			if c, err := net.DialTimeout("tcp", hostPort(vip, base), time.Second); err == nil {
				c.Close()
			}
		}
	})
	wg.Wait()
	if err := p.Apply(all); err != nil {
		t.Fatal(err)
	}
	if got := askTCP(t, hostPort(vip, base+1), "c"); got != "A0:c" {
		t.Fatalf("got %q", got)
	}
	if got := askUDP(t, dialUDP(t, hostPort(vip, base)), "c"); got != "U0:c" {
		t.Fatalf("got %q", got)
	}
}

func TestCloseReleasesPortsAndGoroutines(t *testing.T) {
	a := echoTCP(t, "A", 1)
	u := echoUDP(t, "U", 1)
	before := runtime.NumGoroutine()

	p := New(nil)
	const vip = "127.1.200.12"
	port := applyFresh(t, p, vip, 1, func(base int) []Route {
		return []Route{
			{VIP: vip, Protocol: "TCP", Port: base, Targets: []Target{target(a, 1)}},
			{VIP: vip, Protocol: "UDP", Port: base, Targets: []Target{target(u, 1)}},
		}
	})
	addr := hostPort(vip, port)
	held := dialTCP(t, addr)
	ask(t, held, "h")
	askUDP(t, dialUDP(t, addr), "h")

	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with a connection and a session open")
	}
	if _, err := held.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection survived Close")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("TCP port not released: %v", err)
	}
	ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("UDP port not released: %v", err)
	}
	pc.Close()

	if err := p.Apply(nil); err == nil {
		t.Error("Apply after Close succeeded")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// Close already waited for the plane's goroutines; the echo servers'
	// per-connection handlers may need a moment to see EOF.
	waitFor(t, 3*time.Second, "goroutines to drain", func() bool { return runtime.NumGoroutine() <= before+1 })
}
