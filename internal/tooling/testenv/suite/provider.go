package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	xpcontroller "github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	pcontroller "github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	pwebhook "github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

// ProviderSettings say how an in-process provider runs. Options change
// them in order, so a test package's own defaults go first and a test's
// options after.
type ProviderSettings struct {
	// Config is its identity: the control plane's admin unless As or
	// AsProvider say otherwise.
	Config *rest.Config
	// AsProvider runs it as its ServiceAccount with only Crossplane's
	// grants and the RBAC files of core and Features.
	AsProvider bool
	// Features are the features whose RBAC AsProvider grants besides core.
	Features []testenv.Feature
	// Workers is MaxConcurrentReconciles (10).
	Workers int
	// RateLimit is the global reconcile rate per second (1000).
	RateLimit int
	// Poll is the poll interval (5 s).
	Poll time.Duration
	// Logger is the managed resource reconcilers' logger: the secret
	// scan's under SecretScan, else none.
	Logger logging.Logger
	// Clients builds the cloud clients (e.g. another target batch window).
	Clients clb.Options
	// PodAddress are the PodAddress controller's options.
	PodAddress podaddress.Options
	// WebhookServer serves Webhooks.
	WebhookServer webhook.Server
	// Webhooks are the Pod admission and random hostPort webhooks; the
	// PodAddress controller allocates for the admission one.
	Webhooks *pwebhook.Options
	// PodCache caches Pods as the binary does (slim Pods).
	PodCache bool
	// Controllers sets up the controllers; nil is every controller of the
	// provider (pcontroller.Setup with Clients and PodAddress).
	Controllers func(ctrl.Manager, xpcontroller.Options) error
	// GameServerSets adds the GameServerSet controller to every
	// controller of the provider, as --gameserverset-pools does.
	GameServerSets bool
	// SafeStart sets each controller up once the CRDs of its kinds are
	// established, through Crossplane's CRD gate, as cmd/provider does.
	SafeStart bool
	// StopWithin bounds the shutdown (10 s): a slow one is a bug,
	// reported with the goroutines still running.
	StopWithin time.Duration
}

// A ProviderOption changes the settings of an in-process provider.
type ProviderOption func(*ProviderSettings)

// As runs the provider with the identity of cfg.
func As(cfg *rest.Config) ProviderOption { return func(p *ProviderSettings) { p.Config = cfg } }

// AsProvider runs the provider as its ServiceAccount with the RBAC of core
// and features (examples/provider/rbac), so a rule missing there fails a
// test.
func AsProvider(features ...testenv.Feature) ProviderOption {
	return func(p *ProviderSettings) { p.AsProvider, p.Features = true, features }
}

// Workers sets MaxConcurrentReconciles.
func Workers(n int) ProviderOption { return func(p *ProviderSettings) { p.Workers = n } }

// RateLimit sets the global reconcile rate per second.
func RateLimit(n int) ProviderOption { return func(p *ProviderSettings) { p.RateLimit = n } }

// Poll sets the poll interval.
func Poll(d time.Duration) ProviderOption { return func(p *ProviderSettings) { p.Poll = d } }

// Logger sets the managed resource reconcilers' logger.
func Logger(l logging.Logger) ProviderOption { return func(p *ProviderSettings) { p.Logger = l } }

// Clients sets the options the cloud clients are built with.
func Clients(o clb.Options) ProviderOption { return func(p *ProviderSettings) { p.Clients = o } }

// PodAddress sets the PodAddress controller's options.
func PodAddress(o podaddress.Options) ProviderOption {
	return func(p *ProviderSettings) { p.PodAddress = o }
}

// Webhooks serves the webhooks wo sets on ws, as cmd/provider does.
func Webhooks(ws webhook.Server, wo pwebhook.Options) ProviderOption {
	return func(p *ProviderSettings) { p.WebhookServer, p.Webhooks = ws, &wo }
}

// PodCache caches Pods as the binary does.
func PodCache() ProviderOption { return func(p *ProviderSettings) { p.PodCache = true } }

// Controllers sets up only what setup sets up, instead of every
// controller.
func Controllers(setup func(ctrl.Manager, xpcontroller.Options) error) ProviderOption {
	return func(p *ProviderSettings) { p.Controllers = setup }
}

// IPPools runs only the NetPool and NetIPClaim controllers, with 4
// workers and a 1 min poll, and the CNI allocator API as api says; keep
// is how long a StatefulSet Pod's IP is kept when the Pod does not say.
func IPPools(api ippool.ServerOptions, keep time.Duration) ProviderOption {
	return func(p *ProviderSettings) {
		p.Workers, p.Poll = 4, time.Minute
		p.Controllers = func(mgr ctrl.Manager, o xpcontroller.Options) error {
			srv, err := ippool.NewServer(api, logging.NewNopLogger())
			if err != nil {
				return err
			}
			return pcontroller.SetupIPPools(mgr, o, srv, keep)
		}
	}
}

// GameServerSets runs the GameServerSet controller too (when the kind is
// served), as the binary does by default.
func GameServerSets() ProviderOption { return func(p *ProviderSettings) { p.GameServerSets = true } }

// SafeStart gates the controllers on their CRDs, as cmd/provider does.
func SafeStart() ProviderOption { return func(p *ProviderSettings) { p.SafeStart = true } }

// StopWithin bounds the shutdown.
func StopWithin(d time.Duration) ProviderOption {
	return func(p *ProviderSettings) { p.StopWithin = d }
}

// StartProvider runs a fresh in-process provider (new allocator, new cloud
// clients) until the returned stop function is called or the test ends.
func (s *Suite) StartProvider(t testing.TB, opts ...ProviderOption) (stop func()) {
	t.Helper()
	halt, err := s.RunProvider(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := halt(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// RunProvider runs an in-process provider until stop is called, for
// providers that outlive a test; StartProvider is the one for a test.
func (s *Suite) RunProvider(opts ...ProviderOption) (stop func() error, err error) {
	p := ProviderSettings{Config: s.Env.Config, Workers: 10, RateLimit: 1000, Poll: 5 * time.Second, StopWithin: 10 * time.Second}
	if s.Scan != nil {
		p.Logger = s.Scan.CrossplaneLogger()
	} else {
		p.Logger = logging.NewNopLogger()
	}
	for _, f := range opts {
		f(&p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if p.AsProvider {
		if p.Config, err = s.Env.AsProvider(ctx, p.Features...); err != nil {
			cancel()
			return nil, err
		}
	}
	mo := ctrl.Options{
		Scheme:        s.Env.Scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		Controller:    config.Controller{SkipNameValidation: ptr.To(true), UsePriorityQueue: ptr.To(pcontroller.UsePriorityQueue)},
		WebhookServer: p.WebhookServer,
	}
	if p.PodAddress.Seal == nil {
		if p.PodAddress.Seal, err = s.Env.Sealer(ctx); err != nil {
			cancel()
			return nil, err
		}
	}
	// PodAddresses are always cached as the binary does (records checked
	// against their seal); Pods only with PodCache.
	mo.Cache = pcontroller.CacheOptions(nil, p.PodAddress.Seal)
	if !p.PodCache {
		for o := range mo.Cache.ByObject {
			if _, ok := o.(*corev1.Pod); ok {
				delete(mo.Cache.ByObject, o)
			}
		}
	}
	mgr, err := ctrl.NewManager(p.Config, mo)
	if err != nil {
		cancel()
		return nil, err
	}
	direct, err := client.New(p.Config, client.Options{Scheme: s.Env.Scheme})
	if err != nil {
		cancel()
		return nil, err
	}
	if err := mgr.Add(&seal.Migrator{Sealer: p.PodAddress.Seal, Kube: direct, Namespace: seal.DefaultNamespace, Log: p.Logger}); err != nil {
		cancel()
		return nil, err
	}
	if p.Webhooks != nil {
		if err := pwebhook.Setup(mgr, *p.Webhooks); err != nil {
			cancel()
			return nil, err
		}
		p.PodAddress.Admission = p.Webhooks.Admission
	}
	flags := &feature.Flags{}
	flags.Enable(feature.EnableBetaManagementPolicies)
	o := xpcontroller.Options{
		Logger:                  p.Logger,
		GlobalRateLimiter:       ratelimiter.NewGlobal(p.RateLimit),
		PollInterval:            p.Poll,
		MaxConcurrentReconciles: p.Workers,
		Features:                flags,
	}
	if p.SafeStart {
		o.Gate = new(gate.Gate[schema.GroupVersionKind])
		if err := customresourcesgate.Setup(mgr, o); err != nil {
			cancel()
			return nil, err
		}
	}
	setup := p.Controllers
	if setup == nil {
		setup = func(mgr ctrl.Manager, o xpcontroller.Options) error {
			if err := pcontroller.Setup(mgr, o, pcontroller.NewPools(p.Clients), p.PodAddress); err != nil {
				return err
			}
			if p.GameServerSets {
				return pcontroller.SetupGameServerSets(mgr, o)
			}
			return nil
		}
	}
	if err := setup(mgr, o); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("provider: %w", err)
			}
			return nil
		case <-time.After(p.StopWithin):
			buf := make([]byte, 1<<22)
			n := runtime.Stack(buf, true)
			path := filepath.Join(os.TempDir(), "provider-shutdown-goroutines.txt")
			_ = os.WriteFile(path, buf[:n], 0o600)
			go func() { <-done }()
			return fmt.Errorf("the provider did not shut down within %s; its goroutines are in %s", p.StopWithin, path)
		}
	}, nil
}
