package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

var build struct {
	once sync.Once
	dir  string
	err  error
}

// ProviderBinary builds cmd/provider once per test process and returns the
// path of the binary, so tests can run the provider the way users do: as
// its own process, with its default flags, killable with SIGKILL.
func ProviderBinary() (string, error) {
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "provider-bin-")
		if build.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(build.dir, "provider"), "./cmd/provider")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("cannot build the provider: %w\n%s", err, out)
		}
	})
	return filepath.Join(build.dir, "provider"), build.err
}

// A Process is a provider running as a child process.
type Process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	health string
	// Log is the file that holds the process's output.
	Log string
}

// StartProvider runs the provider binary against kubeconfig with extra
// flags, its output in a file under dir. Metrics are off and the health
// endpoint is on a free loopback port; Ready waits on it.
func StartProvider(dir, kubeconfig string, flags ...string) (*Process, error) {
	bin, err := ProviderBinary()
	if err != nil {
		return nil, err
	}
	health, err := freeAddr()
	if err != nil {
		return nil, err
	}
	log, err := os.CreateTemp(dir, "provider-*.log")
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", health}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{}), health: health, Log: log.Name()}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return p, nil
}

// Ready waits until the provider answers /readyz or exits.
func (p *Process) Ready(ctx context.Context, timeout time.Duration) error {
	return Eventually(ctx, timeout, func() error {
		select {
		case <-p.done:
			return errors.New("the provider exited; see " + p.Log)
		default:
		}
		resp, err := http.Get("http://" + p.health + "/readyz") //nolint:noctx // bounded by Eventually's poll
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
}

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
func (p *Process) Kill() { p.signal(syscall.SIGKILL, 0) }

// Stop asks the provider to shut down (SIGTERM) and kills it if it has not
// within grace.
func (p *Process) Stop(grace time.Duration) { p.signal(syscall.SIGTERM, grace) }

func (p *Process) signal(s syscall.Signal, grace time.Duration) {
	_ = p.cmd.Process.Signal(s)
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

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
