// Package integration tests the provider against a real kube-apiserver and
// etcd (the local control plane of internal/tooling/testenv) and the emulated
// Tencent Cloud, through the real SDK.
package integration

import (
	"net/netip"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// vpcLoopbackCIDR is the emulated VPC's range whose addresses are served on
// loopback: Pod IP 10.250.a.b is reached at 127.250.a.b.
const vpcLoopbackCIDR = "10.250.0.0/16"

// Shared by the tests of this package, set once in TestMain: a client of
// the control plane, and the emulated cloud the in-process provider's
// controllers talk to through the ClusterProviderConfig "default".
var (
	kube  client.Client
	cloud *emulator.Emulator
	// endpoint is the emulator's host:port, which ClusterProviderConfig
	// "default" names, so ProviderConfigs of every namespace may use it.
	endpoint string
	// env is the control plane, for the provider's records key.
	env *testenv.Env
)

// The provider runs in-process for the whole suite, as its ServiceAccount
// with only Crossplane's grants and the RBAC of core and Pod addresses
// (examples/provider/rbac; a rule missing there fails a test), signing
// with a session credential that may do exactly what README's CAM policy
// allows; every log line and Event is
// scanned for it. Tests' own SDK clients keep the default key pair, or the
// Console key.
func TestMain(m *testing.M) {
	// The data plane forwards each listener's VIP:port to its targets, so a
	// test can send traffic through a load balancer to a local server.
	plane := dataplane.New(func(string, ...any) {})
	code := suite.Main(m, func(s *suite.Suite) { kube, cloud, endpoint, env = s.Kube, s.Cloud, s.Endpoint, s.Env },
		suite.Cloud(func(cfg *emulator.Config) {
			// Targets on loopback addresses are health-checked for real.
			cfg.ProbeTargets = true
			// Pods get VPC addresses (EndpointSlices refuse loopback ones),
			// and the data plane and probes reach those of this /16 at
			// 127.250.x.y. Only a /16 the other tests leave alone: their
			// made-up 10.x targets would otherwise be probed at 127.x.y.z
			// and turn Dead.
			cfg.VPCLoopbackCIDR = netip.MustParsePrefix(vpcLoopbackCIDR)
			cfg.DataPlane = dataplane.ForEmulator(plane)
		}),
		suite.CAMPolicy(), suite.ProviderConfig(), suite.SecretScan(),
		suite.Provider(suite.AsProvider(testenv.FeaturePodAddresses), suite.RateLimit(100)))
	_ = plane.Close()
	os.Exit(code)
}
