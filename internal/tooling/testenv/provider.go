package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BuildProvider builds cmd/provider into dir and returns the binary, so
// tests run the provider the way users do: as its own process, with its
// default flags, killable with SIGKILL.
func BuildProvider(dir string) (string, error) {
	bin := filepath.Join(dir, "provider")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/provider")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build the provider: %w\n%s", err, out)
	}
	return bin, nil
}

// A Provider is the provider binary running as a process.
type Provider struct {
	*Process
	health string
}

// StartProvider runs the provider binary bin against kubeconfig with extra
// flags, its output in a file under dir. Metrics are off and the health
// endpoint is on a free loopback port; Ready waits on it.
func StartProvider(dir, bin, kubeconfig string, flags ...string) (*Provider, error) {
	health, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", health}, flags...)
	p, err := StartProcess(dir, "provider", bin, nil, args...)
	if err != nil {
		return nil, err
	}
	return &Provider{Process: p, health: health}, nil
}

// Health is the address of its /healthz and /readyz.
func (p *Provider) Health() string { return p.health }

// Ready waits until the provider answers /readyz.
func (p *Provider) Ready(ctx context.Context, timeout time.Duration) error {
	return p.WaitHTTP(ctx, "http://"+p.health+"/readyz", timeout)
}

// RunProvider starts the provider binary bin for test t against the
// control plane of kubeconfig; cloud endpoints come from the
// ProviderConfigs, as in a cluster. When the test ends the provider is
// stopped with SIGTERM (see StopWithin) and, if the test failed, the tail
// of its log is shown under name.
func RunProvider(t testing.TB, kubeconfig []byte, bin, name string, flags ...string) *Provider {
	t.Helper()
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := StartProvider(dir, bin, kc, flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.StopWithin(t, 10*time.Second)
		if t.Failed() {
			if out, err := os.ReadFile(p.Log); err == nil {
				const tail = 8000
				if len(out) > tail {
					out = out[len(out)-tail:]
				}
				t.Logf("provider %s log (tail):\n%s", name, out)
			}
		}
	})
	return p
}

// StopWithin ends the provider with SIGTERM; one still running after grace
// fails the test: a slow shutdown is a bug. It is then sent SIGQUIT, so the
// Go runtime writes every goroutine's stack to its log (shown, the part that
// says what it waited on), and killed.
func (p *Provider) StopWithin(t testing.TB, grace time.Duration) {
	t.Helper()
	if p.Exited() {
		return
	}
	p.signal(syscall.SIGTERM, 0, grace)
	if p.Exited() {
		return
	}
	t.Errorf("the provider process did not end within %s of SIGTERM", grace)
	size := logSize(p.Log)
	p.signal(syscall.SIGQUIT, 5*time.Second, 0)
	if out, err := os.ReadFile(p.Log); err == nil && int64(len(out)) > size {
		t.Logf("its goroutines at SIGQUIT:\n%s", out[size:])
	}
}

func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
