package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
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

// Ready waits until the provider answers /readyz.
func (p *Provider) Ready(ctx context.Context, timeout time.Duration) error {
	return p.WaitHTTP(ctx, "http://"+p.health+"/readyz", timeout)
}
