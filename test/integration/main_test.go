// Package integration tests the provider against a real kube-apiserver and
// etcd (the local control plane of internal/tooling/testenv) and the emulated
// Tencent Cloud, through the real SDK.
package integration

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	pcontroller "github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
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
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	kube = env.Client

	// The provider signs with a session credential (key pair and token),
	// which may do exactly what README's CAM policy allows: secrets.go scans
	// its logs and the Events for it. Tests' own SDK clients keep the
	// default key pair, or the Console key.
	cfg, err := emulatortest.WithPolicyFile(emulator.DefaultConfig(), camPolicyFile(), testenv.SessionCredential())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Targets on loopback addresses are health-checked for real.
	cfg.ProbeTargets = true
	// Pods get VPC addresses (EndpointSlices refuse loopback ones), and the
	// data plane and probes reach those of this /16 at 127.250.x.y. Only a
	// /16 the other tests leave alone: their made-up 10.x targets would
	// otherwise be probed at 127.x.y.z and turn Dead.
	cfg.VPCLoopbackCIDR = netip.MustParsePrefix(vpcLoopbackCIDR)
	// The data plane forwards each listener's VIP:port to its targets, so a
	// test can send traffic through a load balancer to a local server.
	plane := dataplane.New(func(string, ...any) {})
	defer func() { _ = plane.Close() }()
	cfg.DataPlane = dataplane.ForEmulator(plane)
	emu, endpoint, err := emulator.Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = emu.Close() }()
	cloud = emu

	// The examples' Secret, holding the session credential, and
	// ClusterProviderConfig "default", pointed at this test's emulator.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		if _, err := testenv.Apply(ctx, kube, filepath.Join(dir, f), testenv.WithEndpoint(endpoint), testenv.WithSessionCredentials); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}

	// Every log line, debug included, goes through the secret scan; errors
	// are also printed.
	scan := testenv.NewSecretScan(emulator.DefaultSecretKey, testenv.SessionSecretKey, testenv.SessionToken)
	ctrl.SetLogger(scan.Logger())
	// The provider runs as its ServiceAccount with only Crossplane's grants
	// and examples/provider/rbac.yaml, so a rule missing there fails a test.
	sa, err := env.AsProvider(ctx, filepath.Join(testenv.RepoRoot(), "examples", "provider", "rbac.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, err := ctrl.NewManager(sa, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{UsePriorityQueue: ptr.To(pcontroller.UsePriorityQueue)},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	flags := &feature.Flags{}
	flags.Enable(feature.EnableBetaManagementPolicies)
	o := controller.Options{
		Logger:                  scan.CrossplaneLogger(),
		GlobalRateLimiter:       ratelimiter.NewGlobal(100),
		PollInterval:            5 * time.Second,
		MaxConcurrentReconciles: 10,
		Features:                flags,
	}
	if err := pcontroller.Setup(mgr, o, pcontroller.NewPools(clb.Options{}), podaddress.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		<-done
	}
	code := m.Run()
	stop()
	if r := emulatortest.Refused(emu, testenv.SessionSecretID); len(r) > 0 {
		fmt.Fprintf(os.Stderr, "the CAM policy README documents refused calls of the provider: %v\n", r)
		return 1
	}
	return secretScan(scan, code)
}

// camPolicyFile is the CAM policy README documents for the provider.
func camPolicyFile() string {
	return filepath.Join(testenv.RepoRoot(), "examples", "providerconfig", "cam-policy.json")
}

// secretScan fails the suite when a secret value reached a log line or an
// Event.
func secretScan(scan *testenv.SecretScan, code int) int {
	if err := scan.ScanEvents(context.Background(), kube); err != nil {
		fmt.Fprintln(os.Stderr, "secret scan:", err)
		return 1
	}
	summary, err := scan.Result()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	fmt.Println(summary)
	return code
}
