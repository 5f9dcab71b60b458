// Package crossplane installs the provider the way users take it: real
// Crossplane core v2.4 (out of cluster, against the local control plane)
// pulls the Configuration package from a registry on loopback, resolves
// the provider and the function as its dependencies, and runs them
// through the External package runtime of internal/tooling/xplocal as local
// processes. Then claims and composites give Pods public addresses from
// the emulated cloud.
package crossplane

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal/xplocaltest"
)

const version = "v0.1.0"

// Shared by the tests of this package, set once in TestMain.
var (
	suite *xplocaltest.Suite
	kube  client.Client
	cloud *emulator.Emulator
	local *xplocal.Local
)

// The tests install the packages themselves: that is their story.
func TestMain(m *testing.M) {
	os.Exit(xplocaltest.Main(m, xplocaltest.Options{Name: "crossplane-e2e", Version: version}, func(s *xplocaltest.Suite) {
		suite, kube, cloud, local = s, s.Kube, s.Cloud, s.Local
	}))
}
