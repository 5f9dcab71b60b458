package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A Process is a program a test runs beside it: the provider, the
// composition function, Crossplane core.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	// Log is the file that holds the process's output.
	Log string
}

// StartProcess runs bin with args and extra environment, its output in a
// new file under dir named after name.
func StartProcess(dir, name, bin string, env []string, args ...string) (*Process, error) {
	log, err := os.CreateTemp(dir, name+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{}), Log: log.Name()}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return p, nil
}

// WaitHTTP waits until url answers 200 OK, failing early if the process
// exits.
func (p *Process) WaitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	return Eventually(ctx, timeout, func() error {
		if p.Exited() {
			return errors.New("the process exited; see " + p.Log)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// PID is the process id, e.g. to read its CPU time and RSS from /proc.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL, as a crash or an OOM kill would, and waits for the
// process to end.
func (p *Process) Kill() { p.signal(syscall.SIGKILL, 0, 0) }

// Stop asks the process to shut down (SIGTERM) and kills it if it has not
// within grace.
func (p *Process) Stop(grace time.Duration) { p.signal(syscall.SIGTERM, grace, 0) }

// signal sends s and waits for the process to end: up to grace, then it is
// killed (grace 0: no bound); or, with wait > 0, up to wait, leaving it
// running.
func (p *Process) signal(s syscall.Signal, grace, wait time.Duration) {
	_ = p.cmd.Process.Signal(s)
	if wait > 0 {
		select {
		case <-p.done:
		case <-time.After(wait):
		}
		return
	}
	if grace > 0 {
		select {
		case <-p.done:
			return
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
		}
	}
	<-p.done
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, for a server a test starts.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
