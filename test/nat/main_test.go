// Package nat tests clusters behind NAT with two local control planes: the
// management cluster (hub), where the provider's WorkloadCluster controller
// runs in-process as the provider's ServiceAccount, and a workload cluster,
// where the agent runs with exactly examples/nat/agent-rbac.yaml. The agent
// reaches the hub only with the tokens it obtains by registering; nothing
// of the hub side has credentials for the workload cluster.
package nat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	xpcontroller "github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/agent"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/workloadcluster"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// The agent's ServiceAccount in the workload cluster (agent-rbac.yaml).
const (
	agentSANamespace = "tencentcloud-network-agent"
	agentSA          = "tencentcloud-network-agent"
)

const (
	// heartbeat is the agents' renew interval in these tests: a stopped
	// agent counts as disconnected 3 s after its last renewal.
	heartbeat = time.Second
	// wait bounds every poll on a controller or the agent.
	wait = 30 * time.Second
)

// Shared by the tests, set once in TestMain.
var (
	shared        *suite.Suite
	hub, workload *testenv.Env
	// hubKube and workKube are admin clients of each control plane.
	hubKube, workKube client.Client
	// agentLocal is the agent's config of its own cluster: the
	// ServiceAccount of agent-rbac.yaml and nothing else.
	agentLocal *rest.Config
	// registry holds the WorkloadCluster controller's gauges.
	registry = prometheus.NewRegistry()
	// providerCfg is the hub as the provider's ServiceAccount; stopProvider
	// stops the in-process WorkloadCluster controller (see pauseProvider).
	providerCfg  *rest.Config
	stopProvider func()
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New())
	os.Exit(suite.Main(m, func(s *suite.Suite) { shared, hub, hubKube = s, s.Env, s.Kube }, suite.Setup(setup)))
}

// setup starts the workload cluster and its agent's identity, and the
// provider's WorkloadCluster controller on the hub.
func setup(ctx context.Context, s *suite.Suite) error {
	var err error
	if workload, err = testenv.Start(); err != nil {
		return err
	}
	s.Cleanup(func() { _ = workload.Stop() })
	workKube = workload.Client
	if agentLocal, err = workload.ServiceAccountOnly(ctx, agentSANamespace, agentSA,
		filepath.Join(testenv.RepoRoot(), "examples", "nat", "agent-rbac.yaml")); err != nil {
		return err
	}
	// The provider's side: its ServiceAccount with Crossplane's grants
	// and the RBAC of the Pod address and NAT features, so the Roles it
	// creates for agents are within what it holds.
	if providerCfg, err = hub.AsProvider(ctx, testenv.FeaturePodAddresses, testenv.FeatureNATClusters); err != nil {
		return err
	}
	if stopProvider, err = startProvider(); err != nil {
		return err
	}
	s.Cleanup(func() { stopProvider() })
	return nil
}

// pauseProvider stops the in-process WorkloadCluster controller until the
// test ends, for a test that runs the provider binary against the hub: one
// provider at a time, as in a cluster.
func pauseProvider(t *testing.T) {
	t.Helper()
	stopProvider()
	stopProvider = func() {}
	t.Cleanup(func() {
		stop, err := startProvider()
		if err != nil {
			t.Fatalf("cannot restart the in-process provider: %v", err)
		}
		stopProvider = stop
	})
}

// startProvider runs the WorkloadCluster controller against the hub as
// the provider's ServiceAccount.
func startProvider() (func(), error) {
	stop, err := shared.RunProvider(suite.As(providerCfg), suite.Workers(4), suite.RateLimit(100), suite.Poll(time.Second),
		suite.Logger(logging.NewLogrLogger(ctrl.Log.WithName("provider"))),
		suite.Controllers(func(mgr ctrl.Manager, o xpcontroller.Options) error {
			return workloadcluster.Setup(mgr, o, workloadcluster.Options{CheckInterval: 200 * time.Millisecond, Registerer: registry})
		}))
	if err != nil {
		return nil, err
	}
	return func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}, nil
}

// hubServer is the hub's address and CA and nothing else: what an admin
// hands the agent besides the bootstrap token.
func hubServer() *rest.Config {
	return &rest.Config{Host: hub.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: hub.Config.CAData}}
}

// withToken is a hub config authenticated by token.
func withToken(token string) *rest.Config {
	c := hubServer()
	c.BearerToken = strings.TrimSpace(token)
	return c
}

func hubClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: hub.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newCluster creates namespace ns and WorkloadCluster name in it, and
// waits until the provider created the bootstrap ServiceAccount.
func newCluster(t *testing.T, ns, name string, grace time.Duration) *v1alpha1.WorkloadCluster {
	t.Helper()
	ctx := context.Background()
	if err := hubKube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	wc := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if grace > 0 {
		wc.Spec.DisconnectGracePeriod = &metav1.Duration{Duration: grace}
	}
	if err := hubKube.Create(ctx, wc); err != nil {
		t.Fatal(err)
	}
	if err := testenv.Eventually(ctx, wait, func() error {
		return hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.BootstrapServiceAccount(name)}, &corev1.ServiceAccount{})
	}); err != nil {
		t.Fatal(err)
	}
	return wc
}

// bootstrapToken is what the docs have the admin run:
// kubectl create token <name>-bootstrap --duration=1h.
func bootstrapToken(t *testing.T, ns, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), v1alpha1.BootstrapServiceAccount(name),
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// An agentRun is an agent of a test: its files and how to stop it.
type agentRun struct {
	ns, name  string
	tokenFile string
	bootstrap string
	stop      func()
}

// register writes a bootstrap token for cluster ns/name into a new dir and
// starts an agent with it.
func register(t *testing.T, ns, name string) *agentRun {
	t.Helper()
	dir := t.TempDir()
	a := &agentRun{ns: ns, name: name, tokenFile: filepath.Join(dir, "token"), bootstrap: filepath.Join(dir, "bootstrap")}
	if err := os.WriteFile(a.bootstrap, []byte(bootstrapToken(t, ns, name)), 0o600); err != nil {
		t.Fatal(err)
	}
	a.start(t)
	return a
}

// start runs the agent in-process until stop or the end of the test.
func (a *agentRun) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.Config{
			Local: agentLocal, Hub: hubServer(), Cluster: a.name, Namespace: a.ns,
			TokenFile: a.tokenFile, BootstrapTokenFile: a.bootstrap, TokenTTL: time.Hour,
			HeartbeatInterval: heartbeat, Log: ctrl.Log.WithName("agent").WithValues("cluster", a.name),
		})
	}()
	stopped := false
	a.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("agent %s: %v", a.name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("agent %s did not stop within 10s", a.name)
		}
	}
	t.Cleanup(a.stop)
}

// token is the agent's own token, once it registered.
func (a *agentRun) token(t *testing.T) string {
	t.Helper()
	var tok []byte
	if err := testenv.Eventually(context.Background(), wait, func() error {
		var err error
		tok, err = os.ReadFile(a.tokenFile)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return string(tok)
}

// getCluster polls until the WorkloadCluster satisfies ok.
func waitCluster(t *testing.T, ns, name string, what string, ok func(*v1alpha1.WorkloadCluster) bool) *v1alpha1.WorkloadCluster {
	t.Helper()
	wc := &v1alpha1.WorkloadCluster{}
	if err := testenv.Eventually(context.Background(), wait, func() error {
		if err := hubKube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, wc); err != nil {
			return err
		}
		if !ok(wc) {
			return fmt.Errorf("WorkloadCluster %s/%s is not %s: status %+v", ns, name, what, wc.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return wc
}
