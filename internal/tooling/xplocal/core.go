package xplocal

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// CoreOptions say how to run Crossplane core.
type CoreOptions struct {
	// Binary is the crossplane binary (cmd/crossplane of
	// github.com/crossplane/crossplane/v2, version-stamped).
	Binary string
	// CRDs is the folder of core's own CRDs (cluster/crds of its module).
	CRDs string
	// Kubeconfig of the control plane.
	Kubeconfig string
	// Dir holds the package cache and the logs.
	Dir string
	// ClientCerts is the folder of the mutual TLS client certificate core
	// dials functions with (ca.crt, tls.crt, tls.key).
	ClientCerts string
	// Activations are ManagedResourceActivationPolicy patterns that init
	// installs; none means every MRD of a safe-start provider stays
	// inactive until a policy is created.
	Activations []string
}

// Core is Crossplane core and its RBAC manager running as processes.
type Core struct {
	Core, RBAC *testenv.Process
	lock       *os.File
}

// rbacLock is held while an RBAC manager runs: `crossplane rbac start` has
// no option for its metrics address and always listens on :8080, so two
// local Crossplanes (the demo and the e2e test, say) take turns.
func rbacLock(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "xplocal-rbac-8080.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	err = testenv.Eventually(ctx, 10*time.Minute, func() error {
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	})
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another local Crossplane holds :8080 for its RBAC manager: %w", err)
	}
	return f, nil
}

// StartCore runs `crossplane core init` (retried: its first run can fail
// while its own CRDs are not yet established), then `core start` with
// webhooks off and the External package runtime, and `rbac start`, which
// turns a provider package's permission requests into ClusterRoles, and
// waits until core is ready.
func StartCore(ctx context.Context, o CoreOptions) (*Core, error) {
	health, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	env := []string{
		"KUBECONFIG=" + o.Kubeconfig,
		"POD_NAMESPACE=" + Namespace,
		"ENABLE_WEBHOOKS=false",
		"TLS_CA_SECRET_NAME=crossplane-root-ca",
		"TLS_CLIENT_SECRET_NAME=crossplane-tls-client",
	}
	args := []string{"core", "init"}
	for _, a := range o.Activations {
		args = append(args, "--activation", a)
	}
	err = testenv.Eventually(ctx, 2*time.Minute, func() error {
		cmd := exec.CommandContext(ctx, o.Binary, args...)
		cmd.Env = append(append(os.Environ(), env...), "CRDS_PATH="+o.CRDs)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("crossplane core init: %w: %s", err, out)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(o.Dir, "xpkg-cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, err
	}
	core, err := testenv.StartProcess(o.Dir, "crossplane", o.Binary, append(env,
		"PACKAGE_RUNTIME=External",
		"TLS_CLIENT_CERTS_DIR="+o.ClientCerts,
		"XPKG_CACHE_DIR="+cache,
		"METRICS_PORT="+port(metrics),
		"HEALTH_PROBE_PORT="+port(health),
	), "core", "start", "--debug")
	if err != nil {
		return nil, err
	}
	if err := core.WaitHTTP(ctx, "http://"+health+"/readyz", 2*time.Minute); err != nil {
		core.Stop(10 * time.Second)
		return nil, fmt.Errorf("crossplane did not become ready: %w", err)
	}
	lock, err := rbacLock(ctx)
	if err != nil {
		core.Stop(10 * time.Second)
		return nil, err
	}
	rbac, err := testenv.StartProcess(o.Dir, "crossplane-rbac", o.Binary, env, "rbac", "start", "--debug")
	if err != nil {
		core.Stop(10 * time.Second)
		_ = lock.Close()
		return nil, err
	}
	return &Core{Core: core, RBAC: rbac, lock: lock}, nil
}

// Stop ends core and the RBAC manager.
func (c *Core) Stop() {
	c.RBAC.Stop(10 * time.Second)
	_ = c.lock.Close()
	c.Core.Stop(30 * time.Second)
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
