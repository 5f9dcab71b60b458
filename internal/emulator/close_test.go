package emulator_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// TestCloseEndsUnusedConnections opens a connection that never sends a
// request (as an SDK transport may) and closes the emulator: the server
// closes that connection and Close does not wait for it. http.Server's
// Shutdown alone would count it idle only after 5 s, so Close took its
// full 2 s timeout.
func TestCloseEndsUnusedConnections(t *testing.T) {
	e, endpoint, err := emulator.Start(emulator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// Connections are accepted in order: once a request on a later one is
	// answered, the server holds the unused one (not the listen backlog).
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + endpoint + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	closed := make(chan error, 1)
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := conn.Read(make([]byte, 1))
		closed <- err
	}()

	start := time.Now()
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	took := time.Since(start)
	if err := <-closed; err == nil || isTimeout(err) {
		t.Fatalf("the unused connection was not closed by the server: read returned %v", err)
	} else if !errors.Is(err, io.EOF) {
		t.Logf("unused connection ended with %v", err)
	}
	t.Logf("Close took %s", took)
	// Generous: without closing unused connections Close waits its whole
	// 2 s Shutdown timeout.
	if took >= time.Second {
		t.Fatalf("Close took %s with one unused connection open", took)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
