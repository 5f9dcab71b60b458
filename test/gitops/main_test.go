// Package gitops runs Argo CD itself against the product: Argo CD v3.2.0's
// application-controller, repo-server and Redis (internal/tooling/argocd)
// sync a folder served from a Git repository on loopback, and each step is
// asserted from the Application's own status (sync and health) as Argo CD
// computes it. TestGitOps syncs gitops/ into the product deployed on the
// real node (internal/tooling/deployed), packages included;
// TestArgoCDOnControlPlane checks the harness itself on the local control
// plane alone.
package gitops

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
)

// TestMain gives controller-runtime's clients a logger (errors only), which
// they otherwise complain of with a stack trace.
func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(m.Run())
}

// version tags the packages: the Configuration of gitops/packages.yaml names it.
const version = "v0.1.0"

// wait bounds every poll: the suite shares two cores with the control
// plane, the node, Crossplane, the provider, the function and Argo CD.
const wait = 4 * time.Minute

// What the running test started: the cluster Argo CD syncs into, its
// client, and the Git repository.
var (
	cluster *deployed.Cluster
	kube    client.Client
	repo    *argocd.Repo
	// gameImage is the game server's image in the node's registry.
	gameImage string
)

// logDir makes a folder for the logs of what a test starts, kept when the
// test fails.
func logDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ptn-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs of the cluster, Argo CD and the Pods are in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// startArgoCD builds (once per version) and starts Argo CD against the
// cluster of kubeconfig, with settings in argocd-cm, and serves an empty
// Git repository; both stop when the test ends.
func startArgoCD(t *testing.T, dir string, kubeconfig []byte, settings map[string]string) {
	t.Helper()
	a, r, err := argocd.Up(context.Background(), kube, kubeconfig, dir, settings, wait, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	repo = r
	t.Cleanup(a.Stop)
	t.Cleanup(repo.Close)
}
