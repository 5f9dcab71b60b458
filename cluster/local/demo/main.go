// Command demo is what `make demo` runs: the product the way users get it.
// Real Crossplane core installs this repository's packages from a
// registry on loopback, one PodPublicAddress gives a game server's Pods
// public addresses in the emulated cloud, and a real packet makes a round
// trip through each address; the game server scales and the addresses
// follow. Then everything is deleted, checked for leaks and stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	pkgv1 "github.com/crossplane/crossplane/apis/v2/pkg/v1"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// version tags the packages the demo builds.
const version = "v0.1.0"

func main() {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	wait := fs.Duration("wait", 3*time.Minute, "How long any one step may take.")
	process := fs.Bool("process", false, "Run without the real node (no root needed): Crossplane core, the provider and the function as local processes, Pods whose IPs the demo writes and answers on itself.")
	gitops := fs.Bool("gitops", false, "On the real node, Argo CD syncs gitops/ (packages included) from a Git repository on loopback; prints the Application's tree as Argo CD wrote it, then deletes the Application.")
	_ = fs.Parse(os.Args[1:])
	// controller-runtime's clients want a logger (errors only: the API
	// server's warnings are not the demo's), else the first warning makes
	// them complain of its absence with a stack trace.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	say := narrator{start: time.Now()}
	// Ctrl-C stops everything the demo started, as the end of a run does.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	switch {
	case *process:
		err = run(ctx, say, *wait)
	case *gitops:
		err = runGitOps(ctx, say, *wait)
	default:
		err = runOnNode(ctx, say, *wait)
	}
	interrupted := ctx.Err() != nil
	stop()
	if interrupted {
		fmt.Fprintln(os.Stderr, "demo: interrupted; everything it started is stopped and its temporary files removed")
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	say.step("done: everything stopped, temporary files removed")
}

// A narrator prints the demo's steps with the time since it started.
type narrator struct{ start time.Time }

func (n narrator) step(format string, args ...any) {
	d := time.Since(n.start).Round(time.Second)
	fmt.Printf("==> [%d:%02d] "+format+"\n", append([]any{int(d.Minutes()), int(d.Seconds()) % 60}, args...)...)
}

func run(ctx context.Context, say narrator, wait time.Duration) (err error) {
	work, err := os.MkdirTemp("", "ptn-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && ctx.Err() == nil {
			// Keep the logs of core, the provider and the function.
			fmt.Fprintln(os.Stderr, "demo: logs of crossplane, the provider and the function are in", work)
			return
		}
		err = joinErr(err, os.RemoveAll(work))
	}()

	say.step("starting the local control plane (etcd + kube-apiserver on loopback), without the provider's CRDs")
	began := time.Now()
	env, err := testenv.Start(testenv.WithCRDs())
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	fmt.Printf("    api server %s, up in %s\n", env.Config.Host, since(began))

	say.step("starting the emulated Tencent Cloud; its data plane is on: VIPs are loopback addresses that forward TCP and UDP to the registered targets")
	plane := dataplane.New(nil)
	defer func() { _ = plane.Close() }()
	cfg := emulator.DefaultConfig()
	cfg.DataPlane = dataplane.ForEmulator(plane)
	cloud, endpoint, err := emulator.Start(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = cloud.Close() }()
	fmt.Printf("    API endpoint http://%s\n", endpoint)

	say.step("building the provider, function and configuration packages; starting Crossplane core %s with the External package runtime", "v2.4.0")
	began = time.Now()
	local, err := xplocal.Start(ctx, xplocal.Options{Env: env, Dir: work, Version: version})
	if err != nil {
		return err
	}
	defer local.Stop()
	fmt.Printf("    packages pushed to the registry on %s, Crossplane ready, in %s\n", local.Registry, since(began))

	say.step("installing Configuration %s:%s; Crossplane pulls the Provider and the Function it depends on", xplocal.Registry+"/"+xplocal.ConfigurationName, version)
	fmt.Printf("    (examples/provider/imageconfig.yaml, its prefix pointed at the loopback registry, rewrites %s/;\n     the runtime starts the provider and the function as local processes)\n", xplocal.Registry)
	began = time.Now()
	if err := local.Install(ctx, version); err != nil {
		return err
	}
	if err := waitHealthy(ctx, local, wait); err != nil {
		return err
	}
	if err := printPackages(ctx, local.Kube); err != nil {
		return err
	}
	fmt.Printf("    Installed and Healthy in %s\n", since(began))

	say.step("activating the provider's managed resource kinds (safe-start: a ManagedResourceActivationPolicy)")
	activated, err := local.Activate(ctx, wait, "tencentcloud-network",
		"*.clb.tencentcloud.m.crossplane.io", "*.network.tencentcloud.m.crossplane.io")
	if err != nil {
		return err
	}
	fmt.Printf("    %d CRDs established: %v\n", len(activated), activated)

	say.step("applying examples/providerconfig (the credentials Secret and ClusterProviderConfig default, pointed at the emulator)")
	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		if _, err := testenv.Apply(ctx, local.Kube, filepath.Join(dir, f), testenv.WithEndpoint(endpoint)); err != nil {
			return err
		}
	}
	pc := &clusterv1alpha1.ClusterProviderConfig{}
	err = testenv.Eventually(ctx, wait, func() error {
		if err := local.Kube.Get(ctx, client.ObjectKey{Name: "default"}, pc); err != nil {
			return err
		}
		if c := pc.GetCondition(xpv2.TypeReady); c.Status != "True" {
			return fmt.Errorf("ClusterProviderConfig default: Ready=%q %s", c.Status, c.Message)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Println("    ClusterProviderConfig default: Ready (the provider checked the credentials against the cloud)")

	if err := gameServerDemo(ctx, say, local, cloud, wait); err != nil {
		return err
	}

	calls := cloud.Calls()
	fmt.Println("    cloud API calls the provider made in all (action: result: count):")
	for _, action := range slices.Sorted(maps.Keys(calls)) {
		fmt.Printf("      %-28s %v\n", action, calls[action])
	}
	say.step("stopping the provider, the function, Crossplane, the registry, the emulator and the control plane")
	return nil
}

// printPackages prints each installed package: what was asked for and
// where Crossplane pulled it from.
func printPackages(ctx context.Context, kube client.Client) error {
	for _, p := range []struct {
		kind string
		obj  pkgv1.Package
	}{
		{"Configuration", &pkgv1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: xplocal.ConfigurationName}}},
		{"Provider", &pkgv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: xplocal.ProviderPackage}}},
		{"Function", &pkgv1.Function{ObjectMeta: metav1.ObjectMeta{Name: xplocal.FunctionPackage}}},
	} {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p.obj), p.obj); err != nil {
			return err
		}
		fmt.Printf("    %-13s %-34s %s (pulled from %s)\n", p.kind, p.obj.GetName(), p.obj.GetSource(), p.obj.GetResolvedSource())
	}
	return nil
}

// waitHealthy waits for the packages, and fails as soon as core or its
// RBAC manager has exited rather than when the wait runs out.
func waitHealthy(ctx context.Context, local *xplocal.Local, wait time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan error, 1)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			for _, p := range []*testenv.Process{local.Core.Core, local.Core.RBAC} {
				if p.Exited() {
					// The RBAC manager always serves metrics on :8080;
					// another program holding it ends it at once.
					exited <- fmt.Errorf("crossplane exited (is port 8080 in use?); its log: %s", p.Log)
					cancel()
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	err := local.WaitHealthy(ctx, wait)
	cancel()
	select {
	case e := <-exited:
		return e
	default:
		return err
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

func joinErr(err, more error) error {
	if err != nil {
		return err
	}
	return more
}
