package dataplane

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tcpEndpoint accepts on one VIP:port and splices each connection to a target.
type tcpEndpoint struct {
	name        string
	ln          *net.TCPListener
	ctx         context.Context // cancelled on close to abort pending dials
	cancel      context.CancelFunc
	dialTimeout time.Duration
	logf        func(string, ...any)
	wg          *sync.WaitGroup
	picker      atomic.Pointer[picker]

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // both sides of every live connection, closed with the endpoint
}

func (e *tcpEndpoint) setTargets(bs []backend) {
	if !samePicker(e.picker.Load(), bs) {
		e.picker.Store(newPicker(bs)) // in-flight connections keep their target
	}
}

// close stops accepting and tears down established connections too, as
// deleting a real listener does; it does not wait (Plane.Close does).
func (e *tcpEndpoint) close() {
	e.cancel()
	_ = e.ln.Close()
	e.mu.Lock()
	e.closed = true
	for c := range e.conns {
		_ = c.Close()
	}
	clear(e.conns)
	e.mu.Unlock()
}

func (e *tcpEndpoint) serve() {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Likely transient (e.g. out of file descriptors): back off instead of spinning.
			e.logf("dataplane: %s: accept: %v", e.name, err)
			select {
			case <-e.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		addr, ok := e.picker.Load().next()
		if !ok {
			_ = c.Close() // no eligible target: refuse promptly rather than hang the client
			continue
		}
		if !e.track(c) {
			return
		}
		e.wg.Go(func() { e.forward(c, addr) })
	}
}

// track registers c for teardown on close; it closes c and reports false if
// the endpoint is already closed.
func (e *tcpEndpoint) track(c net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		_ = c.Close()
		return false
	}
	e.conns[c] = struct{}{}
	return true
}

func (e *tcpEndpoint) untrack(c net.Conn) {
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
	_ = c.Close()
}

func (e *tcpEndpoint) forward(c net.Conn, addr string) {
	defer e.untrack(c)
	d := net.Dialer{Timeout: e.dialTimeout}
	up, err := d.DialContext(e.ctx, "tcp", addr)
	if err != nil {
		if e.ctx.Err() == nil {
			e.logf("dataplane: %s: dial target %s: %v", e.name, addr, err)
		}
		return
	}
	if !e.track(up) {
		return
	}
	defer e.untrack(up)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(up, c)
	}()
	pipe(c, up)
	<-done
}

// pipe copies src to dst, then half-closes dst so its peer sees EOF while the
// other direction keeps flowing. A copy error means the stream is broken, so
// both conns are closed to unblock the other direction too.
func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		_ = src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		_ = dst.Close()
	}
}
