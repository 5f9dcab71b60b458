// Package tenancy tries, as the people a shared cluster trusts least, the
// requests that would reach past what an admin granted: two teams whose
// users may only run Pods and write PodAddressPolicies in their own
// namespace (impersonated through the real API server, so its RBAC and
// admission decide), a workload-cluster agent, a node, an anonymous caller.
// Each attack is one request someone could make; it must be refused with a
// clear message and leave the emulated cloud and the other team's objects
// as they were. The allowed paths are tried by the same users afterwards.
//
// Cases are registered from the files of this package, one file per area
// (pools, EIPs, the allocator API, agents, the provider's own reach), by
// calling attack and allow in an init function; an area whose objects live
// outside the two teams' namespaces (NetPools, WorkloadClusters, grants)
// adds them to every before/after comparison with compare. TestTenancy
// runs the cases in order and prints the table docs/security.md shows;
// -write-doc rewrites that table.
package tenancy

import (
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// Shared by the tests of this package, set once in TestMain.
var (
	shared *suite.Suite
	env    *testenv.Env
	kube   client.Client
	cloud  *emulator.Emulator
)

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, func(st *suite.Suite) {
		shared, env, kube, cloud = st, st.Env, st.Kube, st.Cloud
	}, suite.Cloud(func(cfg *emulator.Config) { cfg.TaskDuration = 20 * time.Millisecond }),
		suite.CAMPolicy(), suite.ProviderConfig(), webhookClients()))
}
