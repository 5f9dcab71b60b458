// Package gitops runs Argo CD itself against the product on the real node:
// Argo CD v3.2.0's application-controller, repo-server and Redis
// (internal/tooling/argocd) sync the gitops/ folder, served from a Git
// repository on loopback, into the deployed cluster (internal/tooling/deployed)
// whose packages it installs; each step is asserted from the Application's
// own status (sync and health) as Argo CD computes it with the argocd-cm
// snippet of docs/argocd.md.
package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// version tags the packages: the Configuration of gitops/packages.yaml names it.
const version = "v0.1.0"

// wait bounds every poll: the suite shares two cores with the control
// plane, the node, Crossplane, the provider, the function and Argo CD.
const wait = 4 * time.Minute

var (
	cluster *deployed.Cluster
	kube    client.Client
	repo    *argocd.Repo
	// gameImage is the game server's image in the node's registry.
	gameImage string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ptn-gitops-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := 1
	defer func() {
		if code != 0 {
			fmt.Fprintln(os.Stderr, "gitops: logs of the node, Argo CD and the Pods are in", dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	start := time.Now()
	bin, err := argocd.Build(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops: argocd:", err)
		return code
	}
	cluster, err = deployed.Start(ctx, deployed.Options{Dir: dir, Version: version, GitOps: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops:", err)
		return code
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "gitops: stop:", err)
			code = 1
		}
	}()
	kube = cluster.Kube
	if gameImage, err = cluster.PushGameServer(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "gitops: game server image:", err)
		return code
	}
	settings, err := healthSettings()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops:", err)
		return code
	}
	kubeconfig := filepath.Join(dir, "argocd-kubeconfig")
	if err := os.WriteFile(kubeconfig, cluster.Env.KubeConfig, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return code
	}
	argoDir := filepath.Join(dir, "argocd")
	if err := os.MkdirAll(argoDir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return code
	}
	a, err := argocd.Start(ctx, kube, argocd.Options{Binary: bin, Kubeconfig: kubeconfig, Dir: argoDir, Settings: settings, Wait: wait})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops: argocd:", err)
		return code
	}
	defer a.Stop()
	if repo, err = argocd.ServeRepo(ctx, filepath.Join(dir, "git")); err != nil {
		fmt.Fprintln(os.Stderr, "gitops: git:", err)
		return code
	}
	defer repo.Close()
	fmt.Printf("gitops: the node, Crossplane and Argo CD are up in %s\n", time.Since(start).Round(time.Second))
	code = m.Run()
	return code
}

// healthSettings are the argocd-cm keys of docs/argocd/argocd-cm.yaml (our
// health scripts) and the ImageConfig's (imageConfigHealth).
func healthSettings() (map[string]string, error) {
	objs, err := testenv.ReadYAML(filepath.Join(testenv.RepoRoot(), "docs", "argocd", "argocd-cm.yaml"))
	if err != nil || len(objs) != 1 {
		return nil, fmt.Errorf("docs/argocd/argocd-cm.yaml: %d objects, %v", len(objs), err)
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	if len(data) == 0 {
		return nil, fmt.Errorf("docs/argocd/argocd-cm.yaml has no data")
	}
	data[imageConfigHealthKey] = imageConfigHealth
	return data, nil
}
