// Package argocdhealth checks the Argo CD health scripts on live objects: a
// real kube-apiserver and etcd, the emulated cloud and the provider's
// controllers. Each case waits for a moment in an object's life (creating,
// ready, failing), assesses the object as it is then with its kind's
// script, and with -update records it under
// internal/tooling/argocdhealth/testdata, where the unit tests assess the same
// objects again.
package argocdhealth

import (
	"flag"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

var update = flag.Bool("update", false, "record the captured objects as testdata of internal/tooling/argocdhealth")

var (
	shared   *suite.Suite
	env      *testenv.Env
	kube     client.Client
	endpoint string
)

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(suite.Main(m, func(s *suite.Suite) { shared, env, kube, endpoint = s, s.Env, s.Kube, s.Endpoint },
		suite.Cloud(func(cfg *emulator.Config) {
			cfg.TaskDuration = 20 * time.Millisecond
			// Slow enough creations that a poll sees the objects while they
			// are being created, on a busy machine too: a pool's listeners
			// took 1 s once, and the capture of a pool creating them missed
			// that window in a CI run sharing two cores with other suites,
			// and at 5 s it missed it again on a fresh clone while another
			// build ran beside the suites.
			cfg.ActionTaskDuration = map[string]time.Duration{"CreateLoadBalancer": 3 * time.Second, "CreateListener": 15 * time.Second}
			// The Address example binds to a private IP no test registers.
			cfg.AutoENI = true
		}),
		suite.ProviderConfig()))
}

// startProvider runs the provider's controllers until the test ends.
func startProvider(t *testing.T) {
	t.Helper()
	shared.StartProvider(t, suite.StopWithin(30*time.Second))
}
