package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

func TestRoundTripNamesTheServerThatAnswered(t *testing.T) {
	a := StartEcho(t, "a", "127.0.0.1:0")
	b := StartEcho(t, "b", "127.0.0.2:0")
	for _, s := range []*EchoServer{a, b, a} {
		got, err := RoundTrip(s.Addr(), "hello "+s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if got != s.Name {
			t.Errorf("round trip to %s answered by %q, want %q", s.Addr(), got, s.Name)
		}
	}
	if want := fmt.Sprintf("127.0.0.1:%d", a.Port()); a.Port() == 0 || a.Addr() != want {
		t.Errorf("Addr %s, want %s", a.Addr(), want)
	}
	if _, err := RoundTrip(a.Addr(), "two\nlines"); err == nil {
		t.Error("a message of two lines was sent")
	}
}

// One connection carries many lines, as a game client's does.
func TestEchoAnswersEveryLine(t *testing.T) {
	s := StartEcho(t, "pod-0", "127.0.0.1:0")
	c := dial(t, s.Addr())
	for _, msg := range []string{"one", "two words"} {
		if got, err := c.send(msg); err != nil || got != "pod-0 "+msg+"\n" {
			t.Fatalf("answer %q, %v; want %q", got, err, "pod-0 "+msg+"\n")
		}
	}
}

// A stopped server is gone: its open connections close and new ones are
// refused, as when a Pod's process exits.
func TestEchoStop(t *testing.T) {
	s := StartEcho(t, "pod-0", "127.0.0.1:0")
	c := dial(t, s.Addr())
	// The server holds the connection once it has answered on it.
	if _, err := c.send("ping"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if _, err := c.r.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Errorf("read on an open connection after Stop: %v, want EOF", err)
	}
	if got, err := RoundTrip(s.Addr(), "ping"); err == nil {
		t.Errorf("round trip after Stop answered by %q", got)
	}
	s.Stop() // again, as the test's cleanup does
}

// An answer that is not the echo of the message fails the round trip, and
// a server that never answers fails it within EchoTimeout.
func TestRoundTripRejectsWrongOrNoAnswer(t *testing.T) {
	wrong := listen(t, func(c net.Conn) {
		_, _ = bufio.NewReader(c).ReadString('\n')
		_, _ = c.Write([]byte("pod-0 pong\n"))
	})
	if got, err := RoundTrip(wrong, "ping"); err == nil {
		t.Errorf("a wrong echo was a round trip answered by %q", got)
	}

	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	silent := listen(t, func(net.Conn) { <-hold })
	start := time.Now()
	if got, err := RoundTrip(silent, "ping"); err == nil {
		t.Errorf("a silent server answered %q", got)
	}
	if d := time.Since(start); d > EchoTimeout+time.Second {
		t.Errorf("round trip to a silent server took %s, want at most about %s", d, EchoTimeout)
	}
}

// listen serves each connection with fn on a loopback port.
func listen(t *testing.T, fn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				fn(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// conn is a client connection with a deadline of EchoTimeout.
type conn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, EchoTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(EchoTimeout))
	return &conn{Conn: c, r: bufio.NewReader(c)}
}

// send writes msg as a line and returns the answer's line.
func (c *conn) send(msg string) (string, error) {
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	return c.r.ReadString('\n')
}
