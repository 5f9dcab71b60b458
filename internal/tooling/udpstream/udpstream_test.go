package udpstream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

const wait = time.Minute

func echo(t *testing.T, name string) (string, func()) {
	t.Helper()
	addr, stop, err := Echo(name, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr, stop
}

// sendsAtLeast waits until s has sent n packets.
func sendsAtLeast(t *testing.T, s *Stream, n int64) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), wait, func() error {
		if s.sent.Load() < n {
			return context.DeadlineExceeded
		}
		return nil
	}); err != nil {
		t.Fatalf("%s sent %d packets, want %d", s, s.sent.Load(), n)
	}
}

// TestStreamCounts: every packet to a server that answers is counted
// answered; once the server stops, the packets after are counted lost.
func TestStreamCounts(t *testing.T) {
	ctx := context.Background()
	addr, stop := echo(t, "gs-0")
	s, err := Start(ctx, "gs-0", addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	sendsAtLeast(t, s, 20)
	if sent, answered, wrong := s.Finish(); sent < 20 || answered != sent || wrong != 0 {
		t.Errorf("a server that answers: %d sent, %d answered, %d by another server", sent, answered, wrong)
	}

	s, err = Start(ctx, "gs-0", addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	sendsAtLeast(t, s, 5)
	stop()
	sendsAtLeast(t, s, s.sent.Load()+10)
	if sent, answered, _ := s.Finish(); sent-answered < 10 {
		t.Errorf("a server stopped for 10 packets: %d sent, %d answered", sent, answered)
	}
}

// TestStreamWantsItsServer: a stream starts only once its own server
// answers, and counts answers of another server apart.
func TestStreamWantsItsServer(t *testing.T) {
	addr, stop := echo(t, "gs-1")
	if _, err := Start(context.Background(), "gs-0", addr, 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), "answered by gs-1") {
		t.Errorf("a stream of gs-0 through gs-1's address started: %v", err)
	}
	// gs-2 takes gs-1's address: its answers are not gs-1's.
	s, err := Start(context.Background(), "gs-1", addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	sendsAtLeast(t, s, 5)
	stop()
	if _, stop, err = Echo("gs-2", addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	sendsAtLeast(t, s, s.sent.Load()+10)
	if sent, answered, wrong := s.Finish(); wrong < 5 || answered >= sent {
		t.Errorf("gs-2 answering for gs-1: %d sent, %d counted answered, %d counted wrong", sent, answered, wrong)
	}
}

// TestLoopbackOnly: no packet is sent to an address off the machine.
func TestLoopbackOnly(t *testing.T) {
	if _, err := Start(context.Background(), "gs-0", "192.0.2.1:7777", wait); err == nil {
		t.Error("a stream to 192.0.2.1 started")
	}
	if _, _, err := Echo("gs-0", "192.0.2.1:7777"); err == nil {
		t.Error("an echo on 192.0.2.1 started")
	}
}
