package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// build is the one provider build of a process, shared by all its tests.
var build struct { //nolint:gochecknoglobals // built once per process on purpose; RemoveProviderBinary deletes its output.
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

// A Provider is the provider binary running as a process.
type Provider struct {
	*Process
	health string
}

// StartProvider runs the provider binary against kubeconfig with extra
// flags, its output in a file under dir. Metrics are off and the health
// endpoint is on a free loopback port; Ready waits on it.
func StartProvider(dir, kubeconfig string, flags ...string) (*Provider, error) {
	bin, err := ProviderBinary()
	if err != nil {
		return nil, err
	}
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

// RemoveProviderBinary deletes what ProviderBinary built, for a program
// that must leave no files behind (the demo); call it once no provider
// process runs any more.
func RemoveProviderBinary() error {
	if build.dir == "" {
		return nil
	}
	return os.RemoveAll(build.dir)
}
