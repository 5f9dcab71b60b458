// Command peer builds the peer (tkestack/tke-extend-network-controller)
// outside this repository and, with "run", measures it alone on the
// benchmark's workload; `go run ./cmd/bench` runs it beside the provider.
//
//	go run ./hack/peer build [dir]   # prints the binary's path, or why not
//	go run ./hack/peer run           # build, then measure (PEER_PODS, default 1000)
//
// PEER_SRC names the peer's source (a work tree or a git repository); by
// default the workspace's mirror.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/benchpeer"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

func main() {
	ctrl.SetLogger(logr.Discard()) // envtest logs through controller-runtime
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peer build [dir] | peer run")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(ctx)
	case "run":
		err = run(ctx)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer: not measured —", err)
		os.Exit(1)
	}
}

func build(ctx context.Context) error {
	dir := ""
	if len(os.Args) > 2 {
		dir = os.Args[2]
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "peer-build-"); err != nil {
			return err
		}
	}
	src, err := benchpeer.Source()
	if err != nil {
		return err
	}
	bin, err := benchpeer.Build(ctx, src, dir, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Println(bin)
	return nil
}

func run(ctx context.Context) error {
	pods := 1000
	if n, err := strconv.Atoi(os.Getenv("PEER_PODS")); err == nil && n > 0 {
		pods = n
	}
	src, err := benchpeer.Source()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "peer-bench-")
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "peer: building from", src, "in", dir)
	bin, err := benchpeer.Build(ctx, src, dir, os.Stderr)
	if err != nil {
		return err
	}
	var results []*benchpeer.Result
	for _, s := range []benchpeer.Settings{benchpeer.Defaults(), benchpeer.Best()} {
		for _, policy := range []string{"LeastUsed", "InOrder"} {
			if !wanted("PEER_SETTINGS", s.Name) || !wanted("PEER_POLICIES", policy) {
				continue
			}
			res, err := measure(ctx, dir, bin, s, policy, pods)
			if res != nil {
				results = append(results, res)
				fmt.Fprintf(os.Stderr, "peer %s %s: %d Pods created in %.1f s, %d published after %.1f s, p50 %.2f s, p99 %.2f s, %d cloud writes (%.3f per Pod), %d throttled, CPU %.1f s, RSS %.0f MiB\n",
					res.Settings, res.Policy, res.Pods, res.CreatedSeconds, res.Published, res.AllSeconds, res.P50Seconds, res.P99Seconds,
					res.CloudWrites, float64(res.CloudWrites)/float64(res.Pods), res.Throttled, res.CPUSeconds, res.RSSMiB)
			}
			if err != nil {
				return err
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// measure runs one setting on a fresh control plane and emulator, so that
// no run sees another's Pods or pools.
func measure(ctx context.Context, dir, bin string, s benchpeer.Settings, policy string, pods int) (*benchpeer.Result, error) {
	env, err := testenv.Start()
	if err != nil {
		return nil, err
	}
	defer func() { _ = env.Stop() }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return nil, err
	}
	if err := benchpeer.InstallCRDs(ctx, env.Client, dir); err != nil {
		return nil, err
	}
	emu, endpoint, err := emulator.Start(emulator.RealisticConfig())
	if err != nil {
		return nil, err
	}
	defer func() { _ = emu.Close() }()
	front, err := benchpeer.StartFront(dir, endpoint)
	if err != nil {
		return nil, err
	}
	defer func() { _ = front.Close() }()
	return benchpeer.Measure(ctx, benchpeer.Run{
		Dir: dir, Bin: bin, KubeConfig: kubeconfig, Kube: env.Client,
		Emulator: emu, Endpoint: endpoint, Front: front,
		Settings: s, Pods: pods, LoadBalancers: 20, Policy: policy, StartPort: 40000,
		Timeout: 10 * time.Minute,
	})
}

// wanted filters runs by a comma-separated environment variable; unset
// means all.
func wanted(env, name string) bool {
	v := os.Getenv(env)
	return v == "" || slices.Contains(strings.Split(v, ","), name)
}
