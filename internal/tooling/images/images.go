// Package images builds the container images of the project's binaries that
// are not Crossplane packages — the NAT agent, the game server of the demo
// and the e2e tests, and the pause binary of the node's Pod sandboxes — as
// xpkgbuild builds a package's runtime: a static binary, non-root, no base
// image.
package images

import (
	"context"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

// module is the import path the main packages are built by, so that a
// build works from any directory of the module (tests run in their own).
const module = "github.com/tencentcloud-network/provider-tencentcloud-network"

// The images' names; each binary is /usr/local/bin/<name>, the entrypoint.
const (
	AgentName      = "tencentcloud-network-agent"
	GameServerName = "gameserver"
	PauseName      = "pause"
)

// Names lists the images Build knows.
func Names() []string { return []string{AgentName, GameServerName, PauseName} }

// mainPackage is the Go main package of an image.
func mainPackage(name string) (string, bool) {
	switch name {
	case AgentName:
		return module + "/cmd/agent", true
	case GameServerName:
		return module + "/cmd/gameserver", true
	case PauseName:
		return module + "/cmd/pause", true
	}
	return "", false
}

// Build builds the image called name for linux/<arch> ("" is the host's
// GOARCH); a version, if given, is recorded as the
// org.opencontainers.image.version label. It must run inside this module.
func Build(ctx context.Context, name, arch, version string) (v1.Image, error) {
	main, ok := mainPackage(name)
	if !ok {
		return nil, fmt.Errorf("no image %q; there are %s", name, strings.Join(Names(), ", "))
	}
	var labels map[string]string
	if version != "" {
		labels = map[string]string{xpkgbuild.LabelVersion: version}
	}
	return xpkgbuild.RuntimeImage(ctx, xpkgbuild.RuntimeOptions{MainPackage: main, Name: name, Arch: arch, Labels: labels})
}

// BuildIndex builds the image for each arch and returns them as one index.
func BuildIndex(ctx context.Context, name, version string, archs ...string) (v1.ImageIndex, error) {
	var imgs []v1.Image
	for _, a := range archs {
		img, err := Build(ctx, name, a, version)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	return xpkgbuild.Index(imgs...)
}

// Agent is the NAT agent's image (examples/nat/agent.yaml).
func Agent(ctx context.Context, arch, version string) (v1.Image, error) {
	return Build(ctx, AgentName, arch, version)
}

// GameServer is the game server's image: it echoes on TCP and UDP 7777
// unless given flags, tagging replies with $POD_NAME (cmd/gameserver).
func GameServer(ctx context.Context, arch string) (v1.Image, error) {
	return Build(ctx, GameServerName, arch, "")
}

// Pause is the node's sandbox image (cmd/pause).
func Pause(ctx context.Context, arch string) (v1.Image, error) {
	return Build(ctx, PauseName, arch, "")
}

// Push writes an image or an image index to a registry reference; loopback
// registries over plain HTTP, any other over TLS only (xpkgbuild.Push).
func Push(ctx context.Context, t remote.Taggable, ref string) error {
	switch t := t.(type) {
	case v1.ImageIndex:
		return xpkgbuild.PushIndex(ctx, t, ref)
	case v1.Image:
		return xpkgbuild.Push(ctx, t, ref)
	default:
		return fmt.Errorf("push %s: %T is neither an image nor an index", ref, t)
	}
}
