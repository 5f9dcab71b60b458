// Command controlplane runs the provider's local control plane (etcd and
// kube-apiserver on loopback, CRDs installed) until interrupted, and writes a
// kubeconfig for it. Use it to run the provider by hand:
//
//	go run ./cluster/local/controlplane --kubeconfig /tmp/ptn.kubeconfig
//	go run ./cmd/provider --kubeconfig /tmp/ptn.kubeconfig --debug
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

func main() {
	// A FlagSet of our own: controller-runtime registers --kubeconfig on the
	// global one.
	fs := flag.NewFlagSet("controlplane", flag.ExitOnError)
	path := fs.String("kubeconfig", "kubeconfig.local", "Where to write the kubeconfig of the control plane.")
	_ = fs.Parse(os.Args[1:])
	if err := run(*path); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	if err := os.WriteFile(path, env.KubeConfig, 0o600); err != nil {
		return err
	}
	fmt.Printf("control plane up: server=%s kubeconfig=%s (Ctrl-C stops it)\n", env.Config.Host, path)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	fmt.Println("stopping the control plane")
	return nil
}
