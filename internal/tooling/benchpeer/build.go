// Package benchpeer runs the best-known open-source peer,
// tkestack/tke-extend-network-controller, as a system under test of the
// benchmark: built from its source into a temp dir at bench time (never
// part of this repository or its binaries), pointed at the emulator, given
// the same Pods as the provider.
package benchpeer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// MirrorPath is where this workspace keeps a read-only git mirror of the
// peer; Source falls back to it when PEER_SRC is unset.
const MirrorPath = "/work/.mirror/tkestack+tke-extend-network-controller/repo"

// Module is the peer's Go module path, checked so that a wrong PEER_SRC is
// reported as such and not as a build error.
const Module = "github.com/tkestack/tke-extend-network-controller"

// agonesModule is the one dependency the module proxy refuses (every
// version); the build replaces it with the stand-in below.
const agonesModule = "agones.dev/agones"

// ErrNoSource says that neither PEER_SRC nor the mirror is there: the
// benchmark then reports the peer as not measured.
var ErrNoSource = errors.New("no peer source: set PEER_SRC to a checkout of " + Module)

// Source returns the peer's source: PEER_SRC (a work tree or a bare git
// repository) or else the mirror, if present.
func Source() (string, error) {
	if s := os.Getenv("PEER_SRC"); s != "" {
		if _, err := os.Stat(s); err != nil {
			return "", fmt.Errorf("PEER_SRC=%s: %w", s, err)
		}
		return s, nil
	}
	if _, err := os.Stat(MirrorPath); err == nil {
		return MirrorPath, nil
	}
	return "", ErrNoSource
}

// Build copies the peer's source from src into dir/src, replaces the
// agones module with the stand-in, and builds the controller binary as
// dir/peer, which it returns. The Go build's output goes to log. Every
// error says which step failed.
func Build(ctx context.Context, src, dir string, log io.Writer) (string, error) {
	tree := filepath.Join(dir, "src")
	if err := os.RemoveAll(tree); err != nil {
		return "", err
	}
	if err := copyTree(ctx, src, tree); err != nil {
		return "", fmt.Errorf("copy the peer source from %s: %w", src, err)
	}
	gomod, err := os.ReadFile(filepath.Join(tree, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("%s is not the peer's source: %w", src, err)
	}
	if !bytes.Contains(gomod, []byte("module "+Module+"\n")) {
		return "", fmt.Errorf("%s is not the peer's source: its go.mod is not module %s", src, Module)
	}
	standin := filepath.Join(dir, "agones-standin")
	if err := writeStandin(standin); err != nil {
		return "", fmt.Errorf("write the agones stand-in: %w", err)
	}
	if err := testenv.Command(ctx, tree, nil, log, "go", "mod", "edit", "-replace", agonesModule+"="+standin); err != nil {
		return "", fmt.Errorf("replace %s: %w", agonesModule, err)
	}
	bin := filepath.Join(dir, "peer")
	// -mod=mod lets go.sum gain what the replacement needs; the peer's own
	// pinned versions stay as they are.
	if err := testenv.Command(ctx, tree, nil, log, "go", "build", "-mod=mod", "-o", bin, "./cmd/"); err != nil {
		return "", fmt.Errorf("go build of the peer (module proxy %s): %w", goEnv("GOPROXY"), err)
	}
	return bin, nil
}

// CRDFiles are the peer's CRDs the benchmark installs, from the copy Build
// made in dir.
func CRDFiles(dir string) []string {
	base := filepath.Join(dir, "src", "config", "crd", "bases")
	return []string{
		filepath.Join(base, "networking.cloud.tencent.com_clbportpools.yaml"),
		filepath.Join(base, "networking.cloud.tencent.com_clbpodbindings.yaml"),
		filepath.Join(base, "networking.cloud.tencent.com_clbnodebindings.yaml"),
	}
}

// copyTree copies a work tree, or exports HEAD of a (bare) git repository.
func copyTree(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err == nil {
		return testenv.Command(ctx, "", nil, io.Discard, "cp", "-a", src+"/.", dst)
	}
	archive := exec.CommandContext(ctx, "git", "-C", src, "archive", "HEAD")
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dst)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return fmt.Errorf("git archive: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("tar: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// Version is the peer's release, from its Helm chart's appVersion in the
// copy Build made in dir ("" if unknown).
func Version(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "src", "charts", "tke-extend-network-controller", "Chart.yaml"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return "v" + strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}
