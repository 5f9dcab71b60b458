package xpkgbuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func TestBinaryImage(t *testing.T) {
	bin := []byte("\x7fELF not really, but bytes to find again")
	img, err := BinaryImage(bin, RuntimeOptions{Name: "coredns", Arch: "arm64", CABundle: "/dev/null"})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/usr/local/bin/coredns" {
		t.Errorf("user %q, entrypoint %q; want the non-root user running /usr/local/bin/coredns", cf.Config.User, cf.Config.Entrypoint)
	}
	if cf.Architecture != "arm64" || cf.OS != "linux" {
		t.Errorf("platform %s/%s, want linux/arm64", cf.OS, cf.Architecture)
	}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("the image has no usr/local/bin/coredns")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "usr/local/bin/coredns" {
			continue
		}
		got, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, bin) || h.Mode&0o111 == 0 {
			t.Errorf("usr/local/bin/coredns: mode %o, %q; want the executable binary %q", h.Mode, got, bin)
		}
		return
	}
}

func TestBinaryImageNeedsBinary(t *testing.T) {
	if _, err := BinaryImage(nil, RuntimeOptions{Name: "coredns"}); err == nil {
		t.Error("an image without a binary was made")
	}
}
