// Package ingress reproduces bcs-ingress-controller's Ingress scenarios end
// to end: real Crossplane core v2.4 (out of cluster, on the local control
// plane) installs the Configuration package with the provider and the
// function as its dependencies, and each scenario applies the seed's
// Ingress with only its apiVersion changed (and the load balancer id and
// namespace replaced), then reads the emulated cloud.
package ingress

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/xplocal"
)

const version = "v0.1.0"

// vpcLoopbackCIDR is the emulated VPC range served on loopback: Pod IP
// 10.250.a.b is reached at 127.250.a.b.
const vpcLoopbackCIDR = "10.250.0.0/16"

// Shared by the tests of this package, set once in TestMain.
var (
	kube  client.Client
	cloud *emulator.Emulator
	local *xplocal.Local
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	// No provider CRDs: the package manager installs them.
	env, err := testenv.Start(testenv.WithCRDs())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	// The data plane forwards each listener's VIP:port to its targets and
	// DescribeTargetHealth probes targets on loopback for real. Pods of
	// vpcLoopbackCIDR are reached at 127.250.x.y; the other scenarios' Pods
	// and the made-up addresses of their nodes lie outside it, so they are
	// neither probed (they stay Alive) nor reachable.
	cfg.ProbeTargets = true
	cfg.VPCLoopbackCIDR = netip.MustParsePrefix(vpcLoopbackCIDR)
	plane := dataplane.New(func(string, ...any) {})
	defer func() { _ = plane.Close() }()
	cfg.DataPlane = dataplane.ForEmulator(plane)
	var endpoint string
	if cloud, endpoint, err = emulator.Start(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cloud.Close() }()

	dir, err := os.MkdirTemp("", "ingress-e2e-")
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
	if local, err = xplocal.Start(ctx, xplocal.Options{Env: env, Dir: dir, Version: version}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer local.Stop()
	kube = local.Kube
	if err := install(ctx, endpoint); err != nil {
		fmt.Fprintln(os.Stderr, err)
		keep = true
		fmt.Fprintln(os.Stderr, "logs are in", dir)
		return 1
	}

	code := m.Run()
	if code != 0 {
		keep = true
		fmt.Fprintln(os.Stderr, "logs of crossplane, the provider and the function are in", dir)
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			fmt.Fprintln(os.Stderr, " ", l)
		}
	}
	return code
}

// install installs the packages as a user does, activates the provider's
// kinds and points the default ClusterProviderConfig at the emulator.
func install(ctx context.Context, endpoint string) error {
	if err := local.Install(ctx, version); err != nil {
		return err
	}
	if err := local.WaitHealthy(ctx, wait); err != nil {
		return err
	}
	if _, err := local.Activate(ctx, wait, "tencentcloud-network", "*.clb.tencentcloud.m.crossplane.io"); err != nil {
		return err
	}
	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		if _, err := testenv.Apply(ctx, kube, filepath.Join(dir, f), testenv.WithEndpoint(endpoint)); err != nil {
			return err
		}
	}
	return nil
}
