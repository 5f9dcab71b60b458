// Command demo is what `make demo` runs: it starts the local control plane,
// runs the provider binary against it as a user would, applies the examples
// and reports what happened, then stops everything.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

func main() {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	provider := fs.String("provider", "", "Path to the provider binary (built from ./cmd/provider when empty).")
	timeout := fs.Duration("timeout", 2*time.Minute, "How long to wait for the provider to settle.")
	_ = fs.Parse(os.Args[1:])
	if err := run(*provider, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

func run(provider string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Minute)
	defer cancel()
	work, err := os.MkdirTemp("", "ptn-demo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()

	if provider == "" {
		step("building the provider")
		provider = filepath.Join(work, "provider")
		b := exec.CommandContext(ctx, "go", "build", "-o", provider, "./cmd/provider")
		b.Dir, b.Stdout, b.Stderr = testenv.RepoRoot(), os.Stdout, os.Stderr
		if err := b.Run(); err != nil {
			return fmt.Errorf("cannot build the provider: %w", err)
		}
	}

	step("starting the local control plane (etcd + kube-apiserver on loopback)")
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return err
	}
	kube := env.Client
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := kube.List(ctx, crds); err != nil {
		return err
	}
	fmt.Printf("    api server %s, %d CRDs installed:\n", env.Config.Host, len(crds.Items))
	for _, c := range crds.Items {
		fmt.Printf("      %s\n", c.Name)
	}

	step("starting the emulated Tencent Cloud (data plane on: VIPs forward real traffic)")
	plane := dataplane.New(nil)
	defer func() { _ = plane.Close() }()
	cfg := emulator.DefaultConfig()
	cfg.DataPlane = dataplane.ForEmulator(plane)
	cloud, endpoint, err := emulator.Start(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = cloud.Close() }()
	fmt.Printf("    endpoint %s (scheme http)\n", endpoint)

	health, err := freePort()
	if err != nil {
		return err
	}
	step("running the provider out of cluster (health on 127.0.0.1:%d)", health)
	logPath := filepath.Join(work, "provider.log")
	logFile, err := os.Create(logPath) //nolint:gosec // G304: a file in our own temporary folder.
	if err != nil {
		return err
	}
	p := exec.CommandContext(ctx, provider, "--kubeconfig", kubeconfig, "--metrics-bind-address", "0",
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(health), "--poll", "10s")
	p.Stdout, p.Stderr = logFile, logFile
	if err := p.Start(); err != nil {
		return err
	}
	defer func() {
		_ = p.Process.Signal(os.Interrupt)
		_ = p.Wait()
		_ = logFile.Close()
	}()
	if err := testenv.Eventually(ctx, 30*time.Second, func() error {
		return get(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
	}); err != nil {
		return fmt.Errorf("provider never became ready (log: %s): %w", tail(logPath), err)
	}
	fmt.Println("    provider /readyz: ok")

	step("applying examples/providerconfig")
	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml", "providerconfig.yaml"} {
		objs, err := testenv.Apply(ctx, kube, filepath.Join(dir, f), testenv.WithEndpoint(endpoint))
		if err != nil {
			return err
		}
		for _, o := range objs {
			fmt.Printf("    created %s %s\n", o.GetKind(), client.ObjectKeyFromObject(o))
		}
	}

	step("waiting for the provider to check the credentials of each config")
	configs := []struct {
		obj interface {
			client.Object
			GetCondition(xpv2.ConditionType) xpv2.Condition
		}
		key client.ObjectKey
	}{
		{&clusterv1alpha1.ClusterProviderConfig{}, client.ObjectKey{Name: "default"}},
		{&v1alpha1.ProviderConfig{}, client.ObjectKey{Namespace: "team-a", Name: "team-a"}},
	}
	for _, c := range configs {
		err := testenv.Eventually(ctx, timeout, func() error {
			if err := kube.Get(ctx, c.key, c.obj); err != nil {
				return err
			}
			if r := c.obj.GetCondition(xpv2.TypeReady); r.Status != "True" {
				return fmt.Errorf("%s Ready=%q %s", c.key, r.Status, r.Message)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%w (provider log: %s)", err, tail(logPath))
		}
		fmt.Printf("    %T %s: Ready, finalizers %v\n", c.obj, c.key, c.obj.GetFinalizers())
	}
	if err := clbDemo(ctx, kube, cloud, timeout, logPath); err != nil {
		return err
	}
	step("demo finished; stopping")
	return nil
}

func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil //nolint:forcetypeassert // a TCP listener always has a TCP address.
}

// tail returns the end of a log file for an error message.
func tail(path string) string {
	f, err := os.Open(path) //nolint:gosec // G304: a file in our own temporary folder.
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	b, _ := io.ReadAll(f)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
