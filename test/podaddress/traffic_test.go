package podaddress

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// streamEvery is how often a stream sends a packet.
const streamEvery = 10 * time.Millisecond

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

// udpEcho plays a game server on a loopback Pod IP: it answers each
// datagram with its name and the datagram.
func udpEcho(t *testing.T, name, addr string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte(name+" "), buf[:n]...), from)
		}
	}()
	t.Cleanup(func() {
		_ = pc.Close()
		wg.Wait()
	})
}

// udpRoundTrip sends one datagram to addr and returns who answered it.
func udpRoundTrip(addr string) (string, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	if err := c.SetDeadline(time.Now().Add(testenv.EchoTimeout)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte("probe")); err != nil {
		return "", err
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	name, msg, _ := strings.Cut(string(buf[:n]), " ")
	if msg != "probe" {
		return "", errors.Errorf("answer %q does not echo the probe", buf[:n])
	}
	return name, nil
}

// A stream is a player of one game server: a numbered packet to its
// VIP:port every streamEvery, each answer counted when the server
// expected answered it.
type stream struct {
	server string
	addr   string
	conn   net.Conn
	sent   atomic.Int64
	wrong  atomic.Int64 // answered by another server

	mu       sync.Mutex
	answered map[int64]bool

	stop    chan struct{}
	sending sync.WaitGroup
	reading sync.WaitGroup
}

// startStream starts a stream to addr (a loopback VIP:port) once a probe
// there is answered by server.
func startStream(t *testing.T, server, addr string) *stream {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Fatalf("%s is not a loopback address: no packet may leave the machine", addr)
	}
	eventually(t, "a probe through "+addr, func() error {
		got, err := udpRoundTrip(addr)
		if err == nil && got != server {
			err = errors.Errorf("answered by %s, want %s", got, server)
		}
		return err
	})
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{server: server, addr: addr, conn: c, answered: map[int64]bool{}, stop: make(chan struct{})}
	s.reading.Add(1)
	go s.read()
	s.sending.Add(1)
	go s.send()
	return s
}

func (s *stream) send() {
	defer s.sending.Done()
	tick := time.NewTicker(streamEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		seq := s.sent.Add(1)
		_, _ = s.conn.Write([]byte(strconv.FormatInt(seq, 10))) // a failed send is a lost packet
	}
}

func (s *stream) read() {
	defer s.reading.Done()
	buf := make([]byte, 2048)
	for {
		n, err := s.conn.Read(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // a refused datagram (ICMP): its packet is counted lost
		}
		name, msg, _ := strings.Cut(string(buf[:n]), " ")
		seq, perr := strconv.ParseInt(msg, 10, 64)
		if name != s.server || perr != nil {
			s.wrong.Add(1)
			continue
		}
		s.mu.Lock()
		s.answered[seq] = true
		s.mu.Unlock()
	}
}

// finish stops sending, waits (bounded) for the answers in flight and
// returns how many packets were sent and answered by the server.
func (s *stream) finish() (sent, answered int) {
	close(s.stop)
	s.sending.Wait()
	count := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.answered)
	}
	sent = int(s.sent.Load())
	for deadline := time.Now().Add(2 * time.Second); count() < sent && time.Now().Before(deadline); {
		time.Sleep(streamEvery)
	}
	_ = s.conn.Close()
	s.reading.Wait()
	return sent, count()
}

func (s *stream) String() string { return fmt.Sprintf("%s via %s", s.server, s.addr) }
