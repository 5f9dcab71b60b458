package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	host := func() (string, error) { return "host-1", nil }

	c, err := parseFlags(nil, getenv, host)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.tcp) != 1 || c.tcp[0] != 7777 || len(c.udp) != 1 || c.udp[0] != 7777 || c.name != "host-1" {
		t.Errorf("defaults: %+v, want TCP and UDP 7777 tagged with the hostname", c)
	}

	env["POD_NAME"], env["GAMESERVER_UDP_PORTS"] = "room-0", "8000,8001"
	c, err = parseFlags([]string{"--tcp", "9000, 9001"}, getenv, host)
	if err != nil {
		t.Fatal(err)
	}
	if c.name != "room-0" || len(c.tcp) != 2 || c.tcp[1] != 9001 || len(c.udp) != 2 || c.udp[1] != 8001 {
		t.Errorf("POD_NAME, --tcp and $GAMESERVER_UDP_PORTS: %+v", c)
	}
	if c, _ := parseFlags([]string{"--udp", ""}, getenv, host); len(c.udp) != 0 {
		t.Errorf("--udp '' still listens on UDP %v", c.udp)
	}

	for _, bad := range [][]string{{"--tcp", "x"}, {"--udp", "70000"}, {"--tcp", "", "--udp", ""}} {
		if _, err := parseFlags(bad, getenv, host); err == nil {
			t.Errorf("parseFlags(%q): want an error", bad)
		}
	}
	delete(env, "POD_NAME")
	noHost := func() (string, error) { return "", errors.New("no hostname") }
	if _, err := parseFlags(nil, getenv, noHost); err == nil {
		t.Error("no name at all: want an error")
	}
}

func TestEcho(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := listen(ctx, config{name: "room-7", host: "127.0.0.1", tcp: []int{0, 0}, udp: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.serve(ctx); close(done) }()

	for _, l := range s.tcp {
		c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(c)
		for _, msg := range []string{"hello\n", "second line\n"} {
			if _, err := c.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			got, err := r.ReadString('\n')
			if err != nil || got != "room-7: "+msg {
				t.Errorf("TCP %s: sent %q, got %q, %v", l.Addr(), msg, got, err)
			}
		}
		// A last line without a newline comes back when the client closes
		// its side.
		_, _ = c.Write([]byte("bye"))
		_ = c.(*net.TCPConn).CloseWrite()
		rest, _ := r.ReadString(0)
		if rest != "room-7: bye" {
			t.Errorf("TCP last line: got %q", rest)
		}
		_ = c.Close()
	}

	// A connection left open is closed by the shutdown.
	idle, err := net.Dial("tcp", s.tcp[0].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idle.Close() }()

	u, err := net.Dial("udp", s.udp[0].LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = u.Close() }()
	_ = u.SetDeadline(time.Now().Add(5 * time.Second))
	for _, msg := range []string{"ping 1", "ping 2"} {
		if _, err := u.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1024)
		n, err := u.Read(buf)
		if err != nil || string(buf[:n]) != "room-7: "+msg {
			t.Errorf("UDP: sent %q, got %q, %v", msg, buf[:n], err)
		}
	}

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
	_ = idle.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("open connection after shutdown: read gave %v, want it closed", err)
	}
	if _, err := net.Dial("tcp", s.tcp[0].Addr().String()); err == nil {
		t.Error("still accepting after shutdown")
	}
}
