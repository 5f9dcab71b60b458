// Command gameserver is the stand-in game server of the demo and the e2e
// tests: it echoes what clients send over TCP and UDP, each reply tagged
// with the name of the Pod that answered, so a client reaching a Pod
// through a load balancer can tell which Pod it reached.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// maxMessage bounds a TCP line and a UDP datagram: a longer line is echoed
// in pieces of this size, each tagged.
const maxMessage = 64 << 10

type config struct {
	name     string
	host     string
	tcp, udp []int
}

func parseFlags(args []string, getenv func(string) string, hostname func() (string, error)) (config, error) {
	c := config{}
	fs := flag.NewFlagSet("gameserver", flag.ContinueOnError)
	tcp := fs.String("tcp", envOr(getenv, "GAMESERVER_TCP_PORTS", "7777"), "Comma-separated TCP ports to echo on; empty for none ($GAMESERVER_TCP_PORTS).")
	udp := fs.String("udp", envOr(getenv, "GAMESERVER_UDP_PORTS", "7777"), "Comma-separated UDP ports to echo on; empty for none ($GAMESERVER_UDP_PORTS).")
	fs.StringVar(&c.host, "host", "", "Address to listen on; empty for all.")
	fs.StringVar(&c.name, "name", "", "Tag of every reply; empty for $POD_NAME, else the hostname.")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.tcp, err = ports(*tcp); err != nil {
		return c, fmt.Errorf("--tcp: %w", err)
	}
	if c.udp, err = ports(*udp); err != nil {
		return c, fmt.Errorf("--udp: %w", err)
	}
	if len(c.tcp)+len(c.udp) == 0 {
		return c, errors.New("no port to listen on: give --tcp or --udp")
	}
	if c.name == "" {
		c.name = getenv("POD_NAME")
	}
	if c.name == "" {
		if c.name, err = hostname(); err != nil {
			return c, fmt.Errorf("no --name, no POD_NAME and no hostname: %w", err)
		}
	}
	return c, nil
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// ports parses "7777,7778"; port 0 asks the kernel for a free one.
func ports(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("%q is not a port", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// server echoes on its listeners until its context ends.
type server struct {
	tag   []byte
	tcp   []net.Listener
	udp   []net.PacketConn
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// listen opens every port of c; nothing is served until serve.
func listen(ctx context.Context, c config) (*server, error) {
	s := &server{tag: []byte(c.name + ": "), conns: map[net.Conn]struct{}{}}
	var lc net.ListenConfig
	for _, p := range c.tcp {
		l, err := lc.Listen(ctx, "tcp", net.JoinHostPort(c.host, strconv.Itoa(p)))
		if err != nil {
			s.close()
			return nil, err
		}
		s.tcp = append(s.tcp, l)
	}
	for _, p := range c.udp {
		pc, err := lc.ListenPacket(ctx, "udp", net.JoinHostPort(c.host, strconv.Itoa(p)))
		if err != nil {
			s.close()
			return nil, err
		}
		s.udp = append(s.udp, pc)
	}
	return s, nil
}

func (s *server) close() {
	for _, l := range s.tcp {
		_ = l.Close()
	}
	for _, pc := range s.udp {
		_ = pc.Close()
	}
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
}

// serve echoes until ctx ends, then closes every listener and connection
// and returns once all are done.
func (s *server) serve(ctx context.Context) {
	for _, l := range s.tcp {
		s.wg.Go(func() { s.accept(l) })
	}
	for _, pc := range s.udp {
		s.wg.Go(func() { s.echoUDP(pc) })
	}
	<-ctx.Done()
	s.close()
	s.wg.Wait()
}

func (s *server) accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return // closed by serve
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			s.echoTCP(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			_ = c.Close()
		})
	}
}

// echoTCP sends back every line the client sends, tag first, as soon as
// the line is complete; a last line without a newline is echoed when the
// client closes its side.
func (s *server) echoTCP(c net.Conn) {
	r := bufio.NewReaderSize(c, maxMessage)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := c.Write(append(append([]byte{}, s.tag...), line...)); werr != nil {
				return
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// echoUDP answers every datagram with the tag and the datagram.
func (s *server) echoUDP(pc net.PacketConn) {
	buf := make([]byte, maxMessage)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP unreachable from an earlier reply
		}
		_, _ = pc.WriteTo(append(append([]byte{}, s.tag...), buf[:n]...), from)
	}
}

func (s *server) addrs() []string {
	var out []string
	for _, l := range s.tcp {
		out = append(out, "tcp "+l.Addr().String())
	}
	for _, pc := range s.udp {
		out = append(out, "udp "+pc.LocalAddr().String())
	}
	return out
}

func main() {
	c, err := parseFlags(os.Args[1:], os.Getenv, os.Hostname)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	// The kubelet stops a container with SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s, err := listen(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("%s echoing on %s", c.name, strings.Join(s.addrs(), ", "))
	s.serve(ctx)
	log.Print("stopped")
}
