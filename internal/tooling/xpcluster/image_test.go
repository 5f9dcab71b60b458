package xpcluster

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

func coreAndModule(t *testing.T) (bin, mod string) {
	t.Helper()
	bin, err := testenv.CrossplaneBinary("core")
	if err != nil {
		t.Fatal(err)
	}
	if mod, err = ModuleDir(context.Background()); err != nil {
		t.Fatal(err)
	}
	return bin, mod
}

// imageFiles returns the regular files of the image's filesystem.
func imageFiles(t *testing.T, rc io.ReadCloser) map[string][]byte {
	t.Helper()
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out["/"+strings.TrimPrefix(h.Name, "/")] = b
		}
	}
}

// TestImage checks the image the chart's Deployments run: the binary as
// entrypoint taking the chart's arguments, user 65532, and every CRD and
// webhook configuration `core init` reads, and nothing that is not YAML.
func TestImage(t *testing.T) {
	bin, mod := coreAndModule(t)
	img, err := Image(bin, mod)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if ep := cf.Config.Entrypoint; len(ep) != 1 || ep[0] != "/usr/local/bin/crossplane" || len(cf.Config.Cmd) != 0 {
		t.Errorf("entrypoint %v, cmd %v", ep, cf.Config.Cmd)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q", cf.Config.User)
	}
	fs := imageFiles(t, mutate.Extract(img))
	for src, dst := range map[string]string{"crds": "/crds", "webhookconfigurations": "/webhookconfigurations"} {
		names, _ := filepath.Glob(filepath.Join(mod, "cluster", src, "*.yaml"))
		if len(names) == 0 {
			t.Fatalf("no YAML in the module's cluster/%s", src)
		}
		for _, n := range names {
			want, _ := os.ReadFile(n) //nolint:gosec // module cache
			if got, ok := fs[dst+"/"+filepath.Base(n)]; !ok || !bytes.Equal(got, want) {
				t.Errorf("%s/%s missing or different", dst, filepath.Base(n))
			}
		}
	}
	if _, ok := fs["/webhookconfigurations/README.md"]; ok {
		t.Error("README.md copied")
	}

	// The entrypoint accepts what the chart's containers pass.
	exe := filepath.Join(t.TempDir(), "crossplane")
	if err := os.WriteFile(exe, fs["/usr/local/bin/crossplane"], 0o700); err != nil { //nolint:gosec // executable on purpose
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{{"core", "init"}, {"core", "start"}, {"rbac", "init"}, {"rbac", "start"}} {
		out, err := exec.CommandContext(ctx, exe, append(args, "--help")...).CombinedOutput() //nolint:gosec // the image's own binary
		if err != nil || !strings.Contains(string(out), "crossplane "+strings.Join(args, " ")) {
			t.Errorf("%v --help: %v\n%s", args, err, out)
		}
	}
}

// TestStaticArch refuses what cannot run in an image without libc.
func TestStaticArch(t *testing.T) {
	dynamic, err := exec.LookPath("ls")
	if err != nil {
		t.Skip(err)
	}
	if _, err := staticArch(dynamic); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("%s: %v", dynamic, err)
	}
	notELF := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := staticArch(notELF); err == nil {
		t.Error("a script was accepted")
	}
}
