// Package reliability kills the provider, a real process, at random
// moments and checks what it leaves behind: the emulated cloud's inventory
// against what should exist, and every Pod's address against every other
// Pod's. It runs against a real kube-apiserver and etcd and the emulator,
// through the real SDK. Each test has its own emulator (its inventory is
// the test's alone) and namespaced ProviderConfig.
//
// CI runs the short variant; `make soak` the long one (see
// docs/reliability.md).
package reliability

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// The size of the run: CI's defaults, or the soak's (make soak).
var (
	cycles = flag.Int("reliability.cycles", 2, "scale cycles 0 → pods → 0 of TestCrashWhileScaling")
	pods   = flag.Int("reliability.pods", 100, "Pods per cycle of TestCrashWhileScaling")
	trials = flag.Int("reliability.trials", 10, "kills right after CreateLoadBalancer, per kind, of TestKillAfterCreateLoadBalancer")
)

// Shared by the tests, set once in TestMain.
var (
	env  *testenv.Env
	kube client.Client
	bin  string // the provider binary
)

// wait bounds every poll of a condition.
const wait = 120 * time.Second

// The tests run the provider binary, built once.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(suite.Main(m, func(s *suite.Suite) { env, kube, bin = s.Env, s.Kube, s.Bin }, suite.ProviderBinary()))
}

// providerFlags are those of every provider process of the tests: a short
// poll so that a restarted provider looks at everything soon.
var providerFlags = []string{"--poll", "5s", "--max-reconcile-rate", "50"}

// startProvider runs a provider process; it is stopped when the test ends
// unless the test kills it first.
func startProvider(t *testing.T, name string, flags ...string) *testenv.Provider {
	t.Helper()
	return testenv.RunProvider(t, env.KubeConfig, bin, name, append(append([]string{}, providerFlags...), flags...)...)
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rel-"}}
	if err := kube.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func eventually(t *testing.T, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), wait, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ownCloud gives ns a namespaced ProviderConfig "team-a" for emu, served
// at endpoint.
func ownCloud(t *testing.T, ns, endpoint string) *xpv2.ProviderConfigReference {
	t.Helper()
	if err := testenv.ApplyTeamProviderConfig(context.Background(), kube, ns, endpoint); err != nil {
		t.Fatal(err)
	}
	return &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}
}

// startCloud starts an emulator for one test with a ProviderConfig in ns.
func startCloud(t *testing.T, ns string, listenerQuota int) (*emulator.Emulator, *xpv2.ProviderConfigReference) {
	t.Helper()
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	cfg.ListenerQuota = listenerQuota
	emu, endpoint, err := emulator.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	return emu, ownCloud(t, ns, endpoint)
}
