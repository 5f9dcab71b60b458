// Package crossplane installs the provider the way users take it: real
// Crossplane core v2.4 (out of cluster, against the local control plane)
// pulls the Configuration package from a registry on loopback, resolves
// the provider and the function as its dependencies, and runs them
// through the External package runtime of internal/xplocal as local
// processes. Then claims and composites give Pods public addresses from
// the emulated cloud.
package crossplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/xplocal"
)

const version = "v0.1.0"

// Shared by the tests of this package, set once in TestMain.
var (
	env   *testenv.Env
	kube  client.Client
	cloud *emulator.Emulator
	local *xplocal.Local
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	var err error
	// No provider CRDs: the package manager installs them.
	if env, err = testenv.Start(testenv.WithCRDs()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	var endpoint string
	if cloud, endpoint, err = emulator.Start(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cloud.Close() }()

	dir, err := os.MkdirTemp("", "crossplane-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(dir)
		}
	}()
	local, err = xplocal.Start(ctx, xplocal.Options{Env: env, Dir: dir, Version: version})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer local.Stop()
	kube = local.Kube
	endpointHost = endpoint

	code := m.Run()
	if code != 0 {
		// Keep the logs of core, the provider and the function.
		keep = true
		fmt.Fprintln(os.Stderr, "logs of crossplane, the provider and the function are in", dir)
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			fmt.Fprintln(os.Stderr, " ", l)
		}
	}
	return code
}

// endpointHost is the emulator's host:port for ProviderConfigs.
var endpointHost string
