// Package podaddress tests per-Pod public addresses end to end: a real
// kube-apiserver and etcd, the emulated cloud through the real SDK, and
// the provider's controllers. Each test starts its own provider instance,
// so a test can stop one mid-way and start another, as a restart would.
// There is no kubelet: tests create Pods through the API and set their
// status (IP, phase) themselves.
package podaddress

import (
	"context"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// Shared by the tests of this package, set once in TestMain.
var (
	shared *suite.Suite
	env    *testenv.Env
	kube   client.Client
	cloud  *emulator.Emulator
	// scan sees every provider log line; the suite checks it and every
	// Event for the secret key and the session token at the end.
	scan *testenv.SecretScan
)

// The provider signs with a session credential limited by README's CAM
// policy, and every log line goes through the secret scan.
func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, func(st *suite.Suite) {
		shared, env, kube, cloud, scan = st, st.Env, st.Kube, st.Cloud, st.Scan
	}, suite.Cloud(func(cfg *emulator.Config) { cfg.TaskDuration = 20 * time.Millisecond }),
		suite.CAMPolicy(), suite.ProviderConfig(), suite.SecretScan()))
}

// sealOf is the provider's records seal, for tests that write records as
// a killed provider would have.
func sealOf(t testing.TB) *seal.Sealer {
	t.Helper()
	s, err := env.Sealer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startProvider runs a fresh in-process provider (new allocator, new cloud
// clients) until the returned stop function is called or the test ends:
// 10 workers, the binary's Pod cache, EIPs warmed every 300 ms unless
// opts say otherwise, and the target audit off unless opts set it, so
// that no other test has its cloud state repaired behind its back.
func startProvider(t testing.TB, opts ...suite.ProviderOption) (stop func()) {
	t.Helper()
	opts = append([]suite.ProviderOption{suite.PodCache()}, opts...)
	opts = append(opts, func(p *suite.ProviderSettings) {
		if p.PodAddress.EIPWarmInterval == 0 {
			p.PodAddress.EIPWarmInterval = 300 * time.Millisecond
		}
	})
	return shared.StartProvider(t, opts...)
}
