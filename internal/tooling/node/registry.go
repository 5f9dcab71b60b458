package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/images"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

// RegistryPort is the port of the node's registry on the node's IP. Pods
// (Crossplane's package manager) and containerd both reach it there; an
// address in 10/8 is one go-containerregistry, and so Crossplane, speaks
// plain HTTP to.
const RegistryPort = 5000

// PauseImage is the sandbox image containerd runs for every Pod, built
// from cmd/pause and pushed to the registry when the node starts.
func (n *Node) PauseImage() string { return n.Registry() + "/ptn/pause:node" }

// Registry is the host:port of the node's image registry.
func (n *Node) Registry() string { return net.JoinHostPort(IP().String(), fmt.Sprint(RegistryPort)) }

// startRegistry serves an in-memory registry on the node's IP and pushes
// the pause image into it.
func (n *Node) startRegistry(ctx context.Context) error {
	l, err := net.Listen("tcp", n.Registry())
	if err != nil {
		return err
	}
	n.registry = &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := n.registry.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("node registry: %v", err)
		}
	}()
	img, err := images.Pause(ctx, "")
	if err != nil {
		return fmt.Errorf("cannot build the pause image: %w", err)
	}
	return xpkgbuild.Push(ctx, img, n.PauseImage())
}
