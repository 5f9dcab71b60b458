// Package okg runs OpenKruiseGame (OKG) on the real node as its users run
// it: kruise-manager (Advanced StatefulSet) and kruise-game-manager (the
// GameServerSet and GameServer controllers and the Pod webhook that calls
// OKG's network plugins) built from their Go modules at test time, never
// part of this repository, run as Deployments from images in the node's
// registry, with their CRDs read from the module cache and their webhooks
// serving the API server through Services.
package okg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// The releases run, both served by the Go module proxy.
const (
	KruiseModule  = "github.com/openkruise/kruise"
	KruiseVersion = "v1.8.0"
	GameModule    = "github.com/openkruise/kruise-game"
	GameVersion   = "v1.0.0"
)

// The binaries' names, also their images'.
const (
	KruiseManager = "kruise-manager"
	GameManager   = "kruise-game-manager"
)

// Binaries are the paths of the two managers, built for linux/GOARCH.
type Binaries struct {
	Kruise string
	Game   string
}

// Build returns the two managers, building each once per version: the
// binaries are kept in CacheDir, so a second run builds nothing. The Go
// builds' output goes to log.
func Build(ctx context.Context, log io.Writer) (Binaries, error) {
	kruise, err := build(ctx, KruiseModule, KruiseVersion, KruiseManager, log)
	if err != nil {
		return Binaries{}, err
	}
	game, err := build(ctx, GameModule, GameVersion, GameManager, log)
	if err != nil {
		return Binaries{}, err
	}
	return Binaries{Kruise: kruise, Game: game}, nil
}

// CacheDir is where the binaries are kept: $PTN_CACHE, else
// $XDG_CACHE_HOME/provider-tencentcloud-network, else
// ~/.cache/provider-tencentcloud-network (as cluster/local/*.sh cache).
func CacheDir() (string, error) {
	if d := os.Getenv("PTN_CACHE"); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "provider-tencentcloud-network"), nil
}

// build builds the main package at the root of module@version into the
// cache, unless it is there. The module's own go.mod, replace directives
// included, decides every dependency: it is built in a writable copy of
// the module (the module cache is read-only, and a replace block is only
// honoured in the main module).
func build(ctx context.Context, module, version, name string, log io.Writer) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, fmt.Sprintf("okg-%s-%s", name, version), name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src, err := ModuleDir(ctx, module, version)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "okg-build-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	tree := filepath.Join(tmp, "src")
	if err := testenv.Command(ctx, "", nil, log, "cp", "-r", src, tree); err != nil {
		return "", fmt.Errorf("copy %s@%s: %w", module, version, err)
	}
	if err := testenv.Command(ctx, "", nil, log, "chmod", "-R", "u+w", tree); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	out := bin + ".tmp"
	env := []string{"CGO_ENABLED=0", "GOOS=linux"}
	if err := testenv.Command(ctx, tree, env, log, "go", "build", "-trimpath", "-o", out, "."); err != nil {
		return "", fmt.Errorf("go build %s@%s: %w", module, version, err)
	}
	return bin, os.Rename(out, bin)
}

// ModuleDir downloads module@version through the module proxy, if the
// module cache lacks it, and returns its directory there.
func ModuleDir(ctx context.Context, module, version string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	var info struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out.Bytes(), &info)
	}
	if err == nil && info.Error != "" {
		err = errors.New(info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w: %s", module, version, err, testenv.LastLines(out.String(), 3))
	}
	return info.Dir, nil
}
