package dataplane

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// maxDatagram fits any UDP payload, so nothing is truncated in transit.
const maxDatagram = 64 << 10

// udpEndpoint serves one VIP:port. Each client address gets a session: a
// connected socket to its chosen target, whose replies are sent back to the
// client from the VIP socket so the client sees the address it talked to.
type udpEndpoint struct {
	name   string
	pc     *net.UDPConn
	idle   time.Duration
	logf   func(string, ...any)
	wg     *sync.WaitGroup
	picker atomic.Pointer[picker]

	mu       sync.Mutex
	closed   bool
	sessions map[netip.AddrPort]*udpSession
}

type udpSession struct {
	client netip.AddrPort
	target string
	up     *net.UDPConn
	last   atomic.Int64 // unix nanos of the last packet either way
}

func (s *udpSession) touch() { s.last.Store(time.Now().UnixNano()) }

// setTargets swaps the target list. Sessions bound to a target that is no
// longer eligible are dropped: UDP has no connection to let finish, and
// keeping them would pin a client to a removed target until it goes idle.
func (e *udpEndpoint) setTargets(bs []backend) {
	if samePicker(e.picker.Load(), bs) {
		return
	}
	p := newPicker(bs)
	e.picker.Store(p)
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, s := range e.sessions {
		if !p.has(s.target) {
			delete(e.sessions, k)
			_ = s.up.Close()
		}
	}
}

func (e *udpEndpoint) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	_ = e.pc.Close()
	for _, s := range e.sessions {
		_ = s.up.Close()
	}
	clear(e.sessions)
}

func (e *udpEndpoint) serve() {
	buf := make([]byte, maxDatagram)
	for {
		n, client, err := e.pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			e.logf("dataplane: %s: read: %v", e.name, err)
			time.Sleep(10 * time.Millisecond) // don't spin on a persistent error
			continue
		}
		e.relay(client, buf[:n])
	}
}

// relay sends one client datagram upstream through the client's session.
func (e *udpEndpoint) relay(client netip.AddrPort, pkt []byte) {
	// A second attempt covers a session torn down by a concurrent setTargets.
	for range 2 {
		s := e.session(client)
		if s == nil {
			return // no eligible target (or closing): drop, as a real LB would
		}
		s.touch()
		_, err := s.up.Write(pkt)
		if !errors.Is(err, net.ErrClosed) {
			return // other errors (e.g. ICMP refusals) are the target's problem
		}
	}
}

// session returns the client's session, creating it on first contact.
func (e *udpEndpoint) session(client netip.AddrPort) *udpSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	if s := e.sessions[client]; s != nil {
		return s
	}
	addr, ok := e.picker.Load().next()
	if !ok {
		return nil
	}
	c, err := net.Dial("udp", addr)
	if err != nil {
		e.logf("dataplane: %s: dial target %s: %v", e.name, addr, err)
		return nil
	}
	s := &udpSession{client: client, target: addr, up: c.(*net.UDPConn)}
	s.touch()
	e.sessions[client] = s
	e.wg.Go(func() { e.replies(s) })
	return s
}

// replies relays the target's datagrams back to the client until the session
// has been idle for e.idle or is closed, then forgets it.
func (e *udpEndpoint) replies(s *udpSession) {
	defer e.drop(s)
	buf := make([]byte, maxDatagram)
	for {
		idleAt := time.Unix(0, s.last.Load()).Add(e.idle)
		if !time.Now().Before(idleAt) {
			return
		}
		// The deadline is re-armed each round because client packets extend it.
		_ = s.up.SetReadDeadline(idleAt)
		n, err := s.up.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) {
				continue // deadline: re-check idleness; refusal: target may come back
			}
			return
		}
		s.touch()
		if _, err := e.pc.WriteToUDPAddrPort(buf[:n], s.client); errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (e *udpEndpoint) drop(s *udpSession) {
	e.mu.Lock()
	if e.sessions[s.client] == s {
		delete(e.sessions, s.client)
	}
	e.mu.Unlock()
	_ = s.up.Close()
}
