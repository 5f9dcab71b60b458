// Package xplocaltest is what the test packages that install this
// repository's packages into real Crossplane core share (test/crossplane,
// test/ingress): their TestMain's setup, with the logs kept when a test
// fails, and the helpers they wait and seed the emulated cloud with.
package xplocaltest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// Wait bounds every poll: generous, because a suite shares two cores with
// the control plane, core, the provider and the function.
const Wait = 3 * time.Minute

// Options say what Main starts.
type Options struct {
	// Name names the folder of the logs, e.g. "ingress-e2e".
	Name string
	// Version tags the packages.
	Version string
	// Cloud, if set, edits the emulator's configuration.
	Cloud func(*emulator.Config)
	// Setup, if set, runs before the tests, e.g. to install the packages.
	Setup func(context.Context, *Suite) error
}

// A Suite is what a TestMain started for its tests.
type Suite struct {
	Env   *testenv.Env
	Local *xplocal.Local
	Kube  client.Client
	Cloud *emulator.Emulator
	// Endpoint is the emulator's host:port, for ProviderConfigs.
	Endpoint string
	// Dir holds the logs of core, the provider and the function.
	Dir string
}

// Main starts, through suite.Main, the local control plane with no
// provider CRDs (the package manager installs them), the emulator and
// Crossplane core with the packages in its registry; hands them to use;
// runs Setup and m; stops it all and returns m's exit code. The logs stay
// when anything fails.
func Main(m *testing.M, o Options, use func(*Suite)) int {
	code, dir := run(m, o, use)
	if code != 0 && dir != "" {
		fmt.Fprintln(os.Stderr, "logs of crossplane, the provider and the function are in", dir)
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			fmt.Fprintln(os.Stderr, " ", l)
		}
	} else if dir != "" {
		_ = os.RemoveAll(dir)
	}
	return code
}

func run(m *testing.M, o Options, use func(*Suite)) (int, string) {
	s := &Suite{}
	code := suite.Main(m, nil, suite.ControlPlane(testenv.WithCRDs()),
		suite.Cloud(func(cfg *emulator.Config) {
			cfg.TaskDuration = 20 * time.Millisecond
			if o.Cloud != nil {
				o.Cloud(cfg)
			}
		}),
		suite.Setup(func(ctx context.Context, base *suite.Suite) error {
			s.Env, s.Cloud, s.Endpoint = base.Env, base.Cloud, base.Endpoint
			var err error
			if s.Dir, err = os.MkdirTemp("", o.Name+"-"); err != nil {
				return err
			}
			if s.Local, err = xplocal.Start(ctx, xplocal.Options{Env: s.Env, Dir: s.Dir, Version: o.Version}); err != nil {
				return err
			}
			base.Cleanup(s.Local.Stop)
			s.Kube = s.Local.Kube
			use(s)
			if o.Setup != nil {
				return o.Setup(ctx, s)
			}
			return nil
		}))
	return code, s.Dir
}

// ProviderConfig applies the examples' Secret and ClusterProviderConfig
// "default", pointed at the emulator; the provider's CRDs must be
// installed.
func (s *Suite) ProviderConfig(ctx context.Context) error {
	return suite.ApplyProviderConfig(ctx, s.Kube, s.Endpoint)
}

// Eventually polls fn for at most Wait and fails the test with what it
// waited for and fn's last error.
func Eventually(t testing.TB, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), Wait, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Namespace creates namespace ns unless it exists.
func (s *Suite) Namespace(t testing.TB, ns string) {
	t.Helper()
	err := s.Kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// ExistingLB creates a load balancer outside Crossplane, as one a user
// already has, waits until it is up and returns its id.
func (s *Suite) ExistingLB(t testing.TB, region, name string) string {
	t.Helper()
	return emulatortest.ExistingLB(t, s.Cloud, region, name, Wait)
}

// InventoryLB is the emulator's load balancer id, if it has it.
func (s *Suite) InventoryLB(id string) (emulator.InventoryLoadBalancer, bool) {
	for _, lb := range s.Cloud.Inventory().LoadBalancers {
		if lb.ID == id {
			return lb, true
		}
	}
	return emulator.InventoryLoadBalancer{}, false
}
