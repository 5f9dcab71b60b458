package xplocal

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
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
	rbac, err := testenv.StartProcess(o.Dir, "crossplane-rbac", o.Binary, env, "rbac", "start", "--debug")
	if err != nil {
		core.Stop(10 * time.Second)
		return nil, err
	}
	return &Core{Core: core, RBAC: rbac}, nil
}

// Stop ends core and the RBAC manager.
func (c *Core) Stop() {
	c.RBAC.Stop(10 * time.Second)
	c.Core.Stop(30 * time.Second)
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
