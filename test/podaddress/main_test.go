// Package podaddress tests per-Pod public addresses end to end: a real
// kube-apiserver and etcd, the emulated cloud through the real SDK, and
// the provider's controllers. Each test starts its own provider instance,
// so a test can stop one mid-way and start another, as a restart would.
// There is no kubelet: tests create Pods through the API and set their
// status (IP, phase) themselves.
package podaddress

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	xpcontroller "github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"k8s.io/client-go/rest"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	pcontroller "github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Shared by the tests of this package, set once in TestMain.
var (
	env   *testenv.Env
	kube  client.Client
	cloud *emulator.Emulator
	// scan sees every provider log line; TestMain checks it and every
	// Event for the secret key and the session token at the end.
	scan = testenv.NewSecretScan(emulator.DefaultSecretKey, testenv.SessionSecretKey, testenv.SessionToken)
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	kube = env.Client

	// The provider signs with a session credential (key pair and token),
	// which may do exactly what README's CAM policy allows. Tests' own SDK
	// clients keep the default key pair, or the Console key.
	cfg, err := emulatortest.WithPolicyFile(emulator.DefaultConfig(), camPolicyFile(), testenv.SessionCredential())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.TaskDuration = 20 * time.Millisecond
	emu, endpoint, err := emulator.Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = emu.Close() }()
	cloud = emu

	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		if _, err := testenv.Apply(context.Background(), kube, filepath.Join(dir, f), testenv.WithEndpoint(endpoint), testenv.WithSessionCredentials); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	// Every log line, debug included, goes through the scan; errors are
	// also printed.
	ctrl.SetLogger(scan.Logger())
	code := m.Run()
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
	if r := emulatortest.Refused(emu, testenv.SessionSecretID); len(r) > 0 {
		fmt.Fprintf(os.Stderr, "the CAM policy README documents refused calls of the provider: %v\n", r)
		return 1
	}
	return code
}

// camPolicyFile is the CAM policy README documents for the provider.
func camPolicyFile() string {
	return filepath.Join(testenv.RepoRoot(), "examples", "providerconfig", "cam-policy.json")
}

// startProvider runs a fresh provider (new allocator, new cloud clients)
// until the returned stop function is called or the test ends.
func startProvider(t testing.TB) (stop func()) {
	t.Helper()
	return startProviderWith(t, env.Config, 10)
}

// startProviderAllEvents is startProvider with --pod-events=all: Normal
// Events on Pods (bound, isolated, moved) as well as Warnings.
func startProviderAllEvents(t testing.TB) (stop func()) {
	t.Helper()
	return startProviderOpts(t, env.Config, 10, clb.Options{}, nil, podaddress.Options{PodEvents: podaddress.PodEventsAll})
}

func startProviderWith(t testing.TB, cfg *rest.Config, workers int) (stop func()) {
	t.Helper()
	return startProviderClients(t, cfg, workers, clb.Options{})
}

// startProviderClients is startProviderWith whose cloud clients are built
// with co (e.g. another target batch window).
func startProviderClients(t testing.TB, cfg *rest.Config, workers int, co clb.Options) (stop func()) {
	t.Helper()
	return startProviderOpts(t, cfg, workers, co, nil, podaddress.Options{})
}

// startProviderOpts is startProviderClients with PodAddress options: the
// target audit (off unless po sets it, so that no other test has its cloud
// state repaired behind its back) and the Pod admission webhook
// (po.Admission, served on ws).
func startProviderOpts(t testing.TB, cfg *rest.Config, workers int, co clb.Options, ws webhook.Server, po podaddress.Options) (stop func()) {
	t.Helper()
	if po.EIPWarmInterval == 0 {
		po.EIPWarmInterval = 300 * time.Millisecond
	}
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The provider's own cache: slim Pods, as the binary runs.
		Cache:         pcontroller.CacheOptions(nil),
		Controller:    config.Controller{SkipNameValidation: &skip, UsePriorityQueue: ptr.To(pcontroller.UsePriorityQueue)},
		WebhookServer: ws,
	})
	if err != nil {
		t.Fatal(err)
	}
	flags := &feature.Flags{}
	flags.Enable(feature.EnableBetaManagementPolicies)
	o := xpcontroller.Options{
		Logger:                  scan.CrossplaneLogger(),
		GlobalRateLimiter:       ratelimiter.NewGlobal(1000),
		PollInterval:            5 * time.Second,
		MaxConcurrentReconciles: workers,
		Features:                flags,
	}
	if err := pcontroller.Setup(mgr, o, pcontroller.NewPools(co), po); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		// Every controller and the binder stop with the manager; a slow
		// shutdown is a bug, reported with the goroutines still running.
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("provider: %v", err)
			}
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<22)
			n := runtime.Stack(buf, true)
			path := filepath.Join(os.TempDir(), "provider-shutdown-goroutines.txt")
			_ = os.WriteFile(path, buf[:n], 0o600)
			t.Errorf("the provider did not shut down within 10 s; its goroutines are in %s", path)
			go func() { <-done }()
		}
	}
	t.Cleanup(stop)
	return stop
}
