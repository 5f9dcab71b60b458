// Command peer builds the peer, tkestack/tke-extend-network-controller,
// outside this repository, as the benchmark does, and prints the binary's
// path or says why it cannot:
//
//	go run ./hack/peer [dir]
//
// PEER_SRC names the peer's source (a work tree or a git repository); by
// default the workspace's mirror. The build happens in dir (default a new
// temp dir). `go run ./cmd/bench -systems peer` measures the peer alone;
// `make bench` measures it beside the provider.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/benchpeer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin, err := build(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer: not built —", err)
		stop()
		os.Exit(1) //nolint:gocritic // stop() ran
	}
	fmt.Println(bin)
}

func build(ctx context.Context) (string, error) {
	src, err := benchpeer.Source()
	if err != nil {
		return "", err
	}
	dir := ""
	if len(os.Args) > 1 {
		dir = os.Args[1]
	} else if dir, err = os.MkdirTemp("", "peer-build-"); err != nil {
		return "", err
	}
	fmt.Fprintln(os.Stderr, "peer: building", src, "in", dir)
	return benchpeer.Build(ctx, src, dir, os.Stderr)
}
