package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// runGitOps is the demo with Argo CD (--gitops), on the real node: Argo CD
// v3.2.0 (internal/tooling/argocd) syncs gitops/ from a Git repository on
// loopback, packages included, and the demo prints the Application's tree
// as Argo CD wrote it in the Application's status; then it deletes the
// Application and checks that the cloud is empty.
func runGitOps(ctx context.Context, say narrator, wait time.Duration) (err error) {
	work, err := os.MkdirTemp("", "ptn-demo-")
	if err != nil {
		return err
	}
	say.step("starting the product on a real node (Linux, root), leaving the packages to Argo CD")
	c, err := deployed.Start(ctx, deployed.Options{Dir: work, Version: version, Wait: wait, GitOps: true,
		Say: func(f string, a ...any) { fmt.Printf("    "+f+"\n", a...) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: logs are in", work)
		return err
	}
	defer func() {
		say.step("stopping everything; the node leaves the machine as it found it")
		err = errors.Join(err, c.Stop())
		if err == nil {
			_ = os.RemoveAll(work)
		} else {
			fmt.Fprintln(os.Stderr, "demo: logs are in", work)
		}
	}()
	for _, t := range c.Timings {
		fmt.Printf("    %-62s %s\n", t.Step, t.Took.Round(100*time.Millisecond))
	}
	image, err := c.PushGameServer(ctx)
	if err != nil {
		return err
	}

	say.step("starting Argo CD %s (application-controller, repo-server, Redis) with docs/argocd/argocd-cm.yaml in argocd-cm; gitops/ in a Git repository on loopback", argocd.Version)
	snippet, err := argocd.Snippet()
	if err != nil {
		return err
	}
	a, repo, err := argocd.Up(ctx, c.Kube, c.Env.KubeConfig, work, snippet, wait, os.Stdout)
	if err != nil {
		return err
	}
	defer repo.Close()
	defer a.Stop()
	files, err := argocd.Folder(argocd.Placeholders(image, c.Node.Registry(), c.Endpoint, repo.URL))
	if err != nil {
		return err
	}
	rev, err := repo.Commit(ctx, "the platform", files)
	if err != nil {
		return err
	}
	// The credentials are not in Git: created once, as a platform team does.
	if _, err := testenv.Apply(ctx, c.Kube, filepath.Join(testenv.RepoRoot(), "examples", "providerconfig", "secret.yaml")); err != nil {
		return err
	}

	say.step("creating the Application of examples/argocd/platform.yaml; Argo CD syncs gitops/ wave by wave")
	began := time.Now()
	app, err := argocd.Application(repo.URL)
	if err != nil {
		return err
	}
	if err := c.Kube.Create(ctx, app); err != nil {
		return err
	}
	var s argocd.AppStatus
	err = testenv.Eventually(ctx, wait, func() error {
		if s, err = argocd.ReadApp(ctx, c.Kube, argocd.AppName); err != nil {
			return err
		}
		return s.SyncedHealthy(rev)
	})
	if err != nil {
		return fmt.Errorf("the Application: %w; %s", err, s)
	}
	fmt.Printf("    Synced and Healthy in %s; the Application as Argo CD wrote it in its status:\n", since(began))
	fmt.Print(indent(s.Tree()))

	say.step("deleting the Application; Argo CD deletes what it synced, the last wave first")
	began = time.Now()
	if err := c.Kube.Delete(ctx, app); err != nil {
		return err
	}
	err = testenv.Eventually(ctx, wait, func() error {
		if _, err := argocd.ReadApp(ctx, c.Kube, argocd.AppName); err == nil {
			return errors.New("the Application is still there")
		} else if !kerrors.IsNotFound(err) {
			return err
		}
		inv := c.Cloud.Inventory()
		if len(inv.LoadBalancers) != 0 || inv.RunningTasks != 0 {
			return fmt.Errorf("%d load balancers (%d listeners) and %d running tasks left in the cloud", len(inv.LoadBalancers), inv.Listeners(), inv.RunningTasks)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("    gone in %s: 0 load balancers, 0 listeners, 0 running tasks: nothing leaked\n", since(began))
	return nil
}

// indent indents each line of s by four spaces, as the demo's details.
func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}
