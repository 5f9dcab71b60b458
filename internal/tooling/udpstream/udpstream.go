// Package udpstream plays the players of game servers over UDP, to count
// the packets an address loses while the cloud behind it changes: a
// Stream sends a numbered datagram every Every through a VIP:port and
// counts those answered by the game server it expects. Answers are
// "<name>: <datagram>", as cmd/gameserver answers; Echo is such a server
// on a local address, for tests without Pods. Every packet goes to a
// loopback address: none leaves the machine.
package udpstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Every is how often a stream sends a packet.
const Every = 10 * time.Millisecond

// drain bounds how long Finish waits for the answers in flight.
const drain = 2 * time.Second

// Echo answers each datagram to addr (a loopback address; port 0 picks
// one) with name, ": " and the datagram, until stop is called. It returns
// the address it listens on.
func Echo(name, addr string) (at string, stop func(), err error) {
	if err := loopback(addr); err != nil {
		return "", nil, err
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return "", nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte(name+": "), buf[:n]...), from)
		}
	})
	return pc.LocalAddr().String(), func() {
		_ = pc.Close()
		wg.Wait()
	}, nil
}

// A Stream is a player of one game server.
type Stream struct {
	server string
	addr   string
	conn   net.Conn
	sent   atomic.Int64
	wrong  atomic.Int64

	mu       sync.Mutex
	answered map[int64]bool

	stop    chan struct{}
	sending sync.WaitGroup
	reading sync.WaitGroup
}

// Start starts a stream to addr (a loopback VIP:port) once a probe there
// is answered by server, within wait.
func Start(ctx context.Context, server, addr string, wait time.Duration) (*Stream, error) {
	if err := loopback(addr); err != nil {
		return nil, err
	}
	if err := testenv.Eventually(ctx, wait, func() error {
		got, err := roundTrip(addr)
		if err == nil && got != server {
			err = fmt.Errorf("answered by %s, want %s", got, server)
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("a probe through %s: %w", addr, err)
	}
	c, err := net.Dial("udp", addr)
	if err != nil {
		return nil, err
	}
	s := &Stream{server: server, addr: addr, conn: c, answered: map[int64]bool{}, stop: make(chan struct{})}
	s.reading.Go(s.read)
	s.sending.Go(s.send)
	return s, nil
}

func (s *Stream) send() {
	tick := time.NewTicker(Every)
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

func (s *Stream) read() {
	buf := make([]byte, 2048)
	for {
		n, err := s.conn.Read(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // a refused datagram (ICMP): its packet is counted lost
		}
		name, msg, _ := strings.Cut(string(buf[:n]), ": ")
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

// Finish stops sending, waits (bounded) for the answers in flight and
// returns how many packets were sent, how many the server answered, and
// how many answers came from another server.
func (s *Stream) Finish() (sent, answered, wrong int) {
	close(s.stop)
	s.sending.Wait()
	count := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.answered)
	}
	sent = int(s.sent.Load())
	for deadline := time.Now().Add(drain); count() < sent && time.Now().Before(deadline); {
		time.Sleep(Every)
	}
	_ = s.conn.Close()
	s.reading.Wait()
	return sent, count(), int(s.wrong.Load())
}

func (s *Stream) String() string { return fmt.Sprintf("%s via %s", s.server, s.addr) }

// roundTrip sends one datagram to addr and returns who answered it.
func roundTrip(addr string) (string, error) {
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
	name, msg, _ := strings.Cut(string(buf[:n]), ": ")
	if msg != "probe" {
		return "", fmt.Errorf("answer %q does not echo the probe", buf[:n])
	}
	return name, nil
}

// loopback refuses an address that is not on loopback.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address: no packet may leave the machine", addr)
	}
	return nil
}
