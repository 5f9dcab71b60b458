// Package suite is the one way a test package under test/ starts what its
// tests share: the local control plane, the emulated cloud (optionally
// with the CAM policy README documents for the provider), the examples'
// ProviderConfig pointed at it, and the provider, in-process or as its
// binary. A TestMain says which of these it needs with options; Main
// starts them in that order, runs the tests, checks what the options
// promise (no secret in a log line or Event, no call the CAM policy
// refused) and stops everything, so no process outlives the suite.
// xplocaltest.Main, for the suites that install the packages into real
// Crossplane core, is built on it. test/e2e alone starts otherwise: the
// product deployed on the real node (internal/tooling/deployed) has a
// control plane of its own and no in-process part.
//
// It is a package of its own, not part of testenv, because it links the
// provider's controllers and emulatortest, which itself uses testenv.
package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// A Suite is what Main started for the tests of one package.
type Suite struct {
	Env  *testenv.Env
	Kube client.Client
	// Cloud and Endpoint (its host:port) are set with the Cloud option.
	Cloud    *emulator.Emulator
	Endpoint string
	// Scan sees every log line, set with the SecretScan option.
	Scan *testenv.SecretScan
	// Bin is the provider binary, built with the ProviderBinary option.
	Bin string

	cleanups []func()
}

type options struct {
	controlPlane   []testenv.Option
	cloud          func(*emulator.Config)
	withCloud      bool
	camPolicy      bool
	providerConfig bool
	scan           bool
	binary         bool
	setup          []func(context.Context, *Suite) error
	provider       []ProviderOption
	withProvider   bool
}

// An Option says what Main starts.
type Option func(*options)

// ControlPlane passes opts to testenv.Start (e.g. testenv.WithCRDs).
func ControlPlane(opts ...testenv.Option) Option {
	return func(o *options) { o.controlPlane = append(o.controlPlane, opts...) }
}

// Cloud starts an emulator from emulator.DefaultConfig, changed by edit
// (which may be nil).
func Cloud(edit func(*emulator.Config)) Option {
	return func(o *options) { o.withCloud, o.cloud = true, edit }
}

// CAMPolicy has the provider sign with a session credential (key pair and
// token) that may do exactly what README's CAM policy allows; the suite
// fails if the emulator refused any of its calls. Tests' own SDK clients
// keep the default key pair, or the Console key. It needs Cloud.
func CAMPolicy() Option {
	return func(o *options) { o.camPolicy = true }
}

// ProviderConfig applies the examples' Secret and ClusterProviderConfig
// "default", pointed at the emulator (with the session credential under
// CAMPolicy). It needs Cloud.
func ProviderConfig() Option {
	return func(o *options) { o.providerConfig = true }
}

// SecretScan sends every log line, debug included, through a scan for the
// emulator's secret key and the session credential (errors are also
// printed); at the end it scans every Event too and the suite fails on a
// find.
func SecretScan() Option {
	return func(o *options) { o.scan = true }
}

// ProviderBinary builds cmd/provider once, for tests that run it as a
// process (Suite.Bin, testenv.RunProvider).
func ProviderBinary() Option {
	return func(o *options) { o.binary = true }
}

// Setup runs fn after everything else the options start but the provider,
// before the tests; a failure fails the suite.
func Setup(fn func(context.Context, *Suite) error) Option {
	return func(o *options) { o.setup = append(o.setup, fn) }
}

// Provider runs an in-process provider for the whole suite, stopped after
// the tests.
func Provider(opts ...ProviderOption) Option {
	return func(o *options) { o.withProvider, o.provider = true, opts }
}

// CAMPolicyFile is the CAM policy README documents for the provider.
func CAMPolicyFile() string {
	return filepath.Join(testenv.RepoRoot(), "examples", "providerconfig", "cam-policy.json")
}

// ApplyProviderConfig applies the examples' Secret and ClusterProviderConfig
// "default", pointed at the emulator at endpoint, serving every namespace,
// and changed by edits.
func ApplyProviderConfig(ctx context.Context, kube client.Client, endpoint string, edits ...func(*unstructured.Unstructured)) error {
	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		if _, err := testenv.Apply(ctx, kube, filepath.Join(dir, f), append([]func(*unstructured.Unstructured){testenv.WithEndpoint(endpoint), testenv.ServingAll}, edits...)...); err != nil {
			return err
		}
	}
	return nil
}

// Main starts what opts ask for, hands it to use (which may be nil),
// runs the tests and returns their exit code, or 1 if starting, a check
// or the suite's provider's shutdown failed. Call it as os.Exit(suite.Main(m, …)).
func Main(m *testing.M, use func(*Suite), opts ...Option) int {
	var o options
	for _, f := range opts {
		f(&o)
	}
	s := &Suite{}
	defer s.stop()
	code, err := s.run(m, o, use)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// Cleanup registers fn to run after the tests, before what was started
// earlier stops (last registered, first run).
func (s *Suite) Cleanup(fn func()) { s.cleanups = append(s.cleanups, fn) }

func (s *Suite) stop() {
	for _, fn := range slices.Backward(s.cleanups) {
		fn()
	}
	s.cleanups = nil
}

func (s *Suite) run(m *testing.M, o options, use func(*Suite)) (int, error) {
	ctx := context.Background()
	env, err := testenv.Start(o.controlPlane...)
	if err != nil {
		return 1, err
	}
	s.Cleanup(func() { _ = env.Stop() })
	s.Env, s.Kube = env, env.Client

	if (o.camPolicy || o.providerConfig) && !o.withCloud {
		return 1, fmt.Errorf("suite: CAMPolicy and ProviderConfig need Cloud")
	}
	if o.withCloud {
		cfg := emulator.DefaultConfig()
		if o.camPolicy {
			if cfg, err = emulatortest.WithPolicyFile(cfg, CAMPolicyFile(), testenv.SessionCredential()); err != nil {
				return 1, err
			}
		}
		if o.cloud != nil {
			o.cloud(&cfg)
		}
		emu, endpoint, err := emulator.Start(cfg)
		if err != nil {
			return 1, err
		}
		s.Cleanup(func() { _ = emu.Close() })
		s.Cloud, s.Endpoint = emu, endpoint
	}
	if o.providerConfig {
		var edits []func(*unstructured.Unstructured)
		if o.camPolicy {
			edits = append(edits, testenv.WithSessionCredentials)
		}
		if err := ApplyProviderConfig(ctx, s.Kube, s.Endpoint, edits...); err != nil {
			return 1, err
		}
	}
	if o.scan {
		s.Scan = testenv.NewSecretScan(emulator.DefaultSecretKey, testenv.SessionSecretKey, testenv.SessionToken)
		ctrl.SetLogger(s.Scan.Logger())
	}
	if o.binary {
		dir, err := os.MkdirTemp("", "provider-")
		if err != nil {
			return 1, err
		}
		s.Cleanup(func() { _ = os.RemoveAll(dir) })
		if s.Bin, err = testenv.BuildProvider(dir); err != nil {
			return 1, err
		}
	}
	if use != nil {
		use(s)
	}
	for _, fn := range o.setup {
		if err := fn(ctx, s); err != nil {
			return 1, err
		}
	}
	stopProvider := func() error { return nil }
	if o.withProvider {
		if stopProvider, err = s.RunProvider(o.provider...); err != nil {
			return 1, err
		}
	}

	code := m.Run()

	if err := stopProvider(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if o.scan {
		if err := s.Scan.ScanEvents(ctx, s.Kube); err != nil {
			return 1, fmt.Errorf("secret scan: %w", err)
		}
		summary, err := s.Scan.Result()
		if err != nil {
			return 1, fmt.Errorf("FAIL: %w", err)
		}
		fmt.Println(summary)
	}
	if o.camPolicy {
		if r := emulatortest.Refused(s.Cloud, testenv.SessionSecretID); len(r) > 0 {
			return 1, fmt.Errorf("the CAM policy README documents refused calls of the provider: %v", r)
		}
	}
	return code, nil
}
