// Command node runs the local control plane with a real node until
// interrupted (`make node`): etcd and kube-apiserver, containerd,
// kubelet, kube-controller-manager, kube-scheduler and kube-proxy on this
// machine. It writes an admin kubeconfig, prints the node's registry, and
// on Ctrl-C stops everything and leaves the machine as it found it.
// Linux and root only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

func main() {
	// Its own flag set: controller-runtime registers -kubeconfig globally.
	fs := flag.NewFlagSet("node", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "kubeconfig.local", "Where to write the admin kubeconfig.")
	_ = fs.Parse(os.Args[1:])
	if err := run(*kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	if err := node.Supported(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "ptn-node-certs-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	start := time.Now()
	opt, err := node.ControlPlane(dir)
	if err != nil {
		return err
	}
	env, err := testenv.Start(opt)
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	fmt.Printf("control plane up in %s\n", time.Since(start).Round(time.Millisecond))
	n, err := node.Start(ctx, node.Options{Env: env})
	if err != nil {
		return err
	}
	for _, t := range n.Timings {
		fmt.Printf("  %-12s %s\n", t.Step, t.Took.Round(time.Millisecond))
	}
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		_ = n.Stop()
		return err
	}
	fmt.Printf("node %s Ready in %s; kubeconfig %s; registry %s; logs %s\nCtrl-C stops it.\n",
		node.Name, time.Since(start).Round(time.Millisecond), kubeconfig, n.Registry(), n.Logs())
	<-ctx.Done()
	fmt.Println("stopping")
	return n.Stop()
}
