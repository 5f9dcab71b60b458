package testenv

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// EchoTimeout bounds each step of a round trip: the dial, and then the
// write and the answer together.
const EchoTimeout = 2 * time.Second

// An EchoServer plays a backend's process (a Pod's server) on a loopback
// address: it answers every line it reads with its name and the line, so
// a round trip through a load balancer tells which backend answered and
// that the bytes went both ways.
type EchoServer struct {
	Name string
	ln   net.Listener

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	stopped bool
	wg      sync.WaitGroup
}

// StartEcho starts an EchoServer named name listening on addr (host:port;
// port 0 picks a free one). It stops when the test ends.
func StartEcho(t testing.TB, name, addr string) *EchoServer {
	t.Helper()
	if name == "" || strings.ContainsAny(name, " \n") {
		t.Fatalf("echo server name %q: want one word", name)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &EchoServer{Name: name, ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.Stop)
	return s
}

// Addr is the host:port the server listens on.
func (s *EchoServer) Addr() string { return s.ln.Addr().String() }

// Port is the port the server listens on.
func (s *EchoServer) Port() int32 {
	return int32(s.ln.Addr().(*net.TCPAddr).Port) //nolint:gosec // G115: a TCP port.
}

// Stop closes the listener and the open connections, as a process that
// exits does, and returns once nothing of the server runs. It may be
// called more than once.
func (s *EchoServer) Stop() {
	s.mu.Lock()
	s.stopped = true
	_ = s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *EchoServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.answer(c)
	}
}

// answer echoes each line of c until the peer closes it or it idles for
// longer than a round trip may take (health probes connect and say
// nothing).
func (s *EchoServer) answer(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		_ = c.SetDeadline(time.Now().Add(2 * EchoTimeout))
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := c.Write([]byte(s.Name + " " + line)); err != nil {
			return
		}
	}
}

// RoundTrip sends msg as a line to addr and returns the name of the
// EchoServer that answered. An answer that does not echo msg is an error.
// Each step is bounded by EchoTimeout; callers poll it.
func RoundTrip(addr, msg string) (string, error) {
	if strings.Contains(msg, "\n") {
		return "", fmt.Errorf("message %q: want one line", msg)
	}
	c, err := net.DialTimeout("tcp", addr, EchoTimeout)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(EchoTimeout))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("round trip through %s: %w", addr, err)
	}
	name, echoed, ok := strings.Cut(strings.TrimSuffix(got, "\n"), " ")
	if !ok || echoed != msg {
		return "", fmt.Errorf("round trip through %s: answer %q, want a name and %q", addr, got, msg)
	}
	return name, nil
}
