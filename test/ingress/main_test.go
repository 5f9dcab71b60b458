// Package ingress reproduces bcs-ingress-controller's Ingress scenarios end
// to end: real Crossplane core v2.4 (out of cluster, on the local control
// plane) installs the Configuration package with the provider and the
// function as its dependencies, and each scenario applies the seed's
// Ingress with only its apiVersion changed (and the load balancer id and
// namespace replaced), then reads the emulated cloud.
package ingress

import (
	"context"
	"net/netip"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal/xplocaltest"
)

const version = "v0.1.0"

// vpcLoopbackCIDR is the emulated VPC range served on loopback: Pod IP
// 10.250.a.b is reached at 127.250.a.b.
const vpcLoopbackCIDR = "10.250.0.0/16"

// Shared by the tests of this package, set once in TestMain.
var (
	suite *xplocaltest.Suite
	kube  client.Client
	cloud *emulator.Emulator
	local *xplocal.Local
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	plane := dataplane.New(func(string, ...any) {})
	defer func() { _ = plane.Close() }()
	return xplocaltest.Main(m, xplocaltest.Options{
		Name:    "ingress-e2e",
		Version: version,
		// The data plane forwards each listener's VIP:port to its targets
		// and DescribeTargetHealth probes targets on loopback for real.
		// Pods of vpcLoopbackCIDR are reached at 127.250.x.y; the other
		// scenarios' Pods and the made-up addresses of their nodes lie
		// outside it, so they are neither probed (they stay Alive) nor
		// reachable.
		Cloud: func(cfg *emulator.Config) {
			cfg.ProbeTargets = true
			cfg.VPCLoopbackCIDR = netip.MustParsePrefix(vpcLoopbackCIDR)
			cfg.DataPlane = dataplane.ForEmulator(plane)
		},
		Setup: install,
	}, func(s *xplocaltest.Suite) {
		suite, kube, cloud, local = s, s.Kube, s.Cloud, s.Local
	})
}

// install installs the packages as a user does, activates the provider's
// kinds and points the default ClusterProviderConfig at the emulator.
func install(ctx context.Context, s *xplocaltest.Suite) error {
	if err := s.Local.Install(ctx, version); err != nil {
		return err
	}
	if err := s.Local.WaitHealthy(ctx, wait); err != nil {
		return err
	}
	if _, err := s.Local.Activate(ctx, wait, "tencentcloud-network", "*.clb.tencentcloud.m.crossplane.io"); err != nil {
		return err
	}
	return s.ProviderConfig(ctx)
}
