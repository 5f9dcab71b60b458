// Package argocdhealth checks the Argo CD health scripts on live objects: a
// real kube-apiserver and etcd, the emulated cloud and the provider's
// controllers. Each case waits for a moment in an object's life (creating,
// ready, failing), assesses the object as it is then with its kind's
// script, and with -update records it under
// internal/tooling/argocdhealth/testdata, where the unit tests assess the same
// objects again.
package argocdhealth

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	xpcontroller "github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	pcontroller "github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

var update = flag.Bool("update", false, "record the captured objects as testdata of internal/tooling/argocdhealth")

var (
	env      *testenv.Env
	kube     client.Client
	endpoint string
)

func TestMain(m *testing.M) {
	flag.Parse()
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

	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	// Slow enough creations that a poll sees the objects while they are
	// being created, on a busy machine too: a pool's listeners took 1 s
	// once, and the capture of a pool creating them missed that window
	// in a CI run sharing two cores with other suites.
	cfg.ActionTaskDuration = map[string]time.Duration{"CreateLoadBalancer": 3 * time.Second, "CreateListener": 5 * time.Second}
	// The Address example binds to a private IP no test registers.
	cfg.AutoENI = true
	emu, host, err := emulator.Start(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = emu.Close() }()
	endpoint = host

	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		if _, err := testenv.Apply(context.Background(), kube, filepath.Join(dir, f), testenv.WithEndpoint(endpoint)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	return m.Run()
}

// startProvider runs the provider's controllers until the test ends.
func startProvider(t *testing.T) {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip, UsePriorityQueue: ptr.To(pcontroller.UsePriorityQueue)},
	})
	if err != nil {
		t.Fatal(err)
	}
	flags := &feature.Flags{}
	flags.Enable(feature.EnableBetaManagementPolicies)
	o := xpcontroller.Options{
		Logger:                  logging.NewNopLogger(),
		GlobalRateLimiter:       ratelimiter.NewGlobal(1000),
		PollInterval:            5 * time.Second,
		MaxConcurrentReconciles: 10,
		Features:                flags,
	}
	if err := pcontroller.Setup(mgr, o, pcontroller.NewPools(clb.Options{}), podaddress.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("provider: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the provider did not stop within 30s")
		}
	})
}
