package xpkgbuild

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestBinaryImage checks that a prebuilt binary becomes the entrypoint, that
// extra files land with the directories above them, and that the digest does
// not depend on the order the files are given in.
func TestBinaryImage(t *testing.T) {
	bin := []byte("\x7fELF not really")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := []File{
		{Path: "/crds/b.yaml", Data: []byte("b")},
		{Path: "/crds/a.yaml", Data: []byte("a")},
		{Path: "/webhookconfigurations/w.yaml", Data: []byte("w"), Mode: 0o600},
	}
	img, err := BinaryImage(BinaryOptions{Binary: bin, Name: "tool", Arch: "arm64", CABundle: ca, Files: fs})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if ep := cf.Config.Entrypoint; len(ep) != 1 || ep[0] != "/usr/local/bin/tool" {
		t.Errorf("entrypoint %v", ep)
	}
	if cf.Config.User != "65532:65532" || cf.Architecture != "arm64" {
		t.Errorf("user %q, arch %q", cf.Config.User, cf.Architecture)
	}
	got := files(t, img)
	for p, typ := range map[string]byte{"/crds": tar.TypeDir, "/crds/a.yaml": tar.TypeReg, "/webhookconfigurations": tar.TypeDir, "/webhookconfigurations/w.yaml": tar.TypeReg} {
		if h := got[p]; h == nil || h.Typeflag != typ {
			t.Errorf("%s: %+v", p, h)
		}
	}
	if m := got["/webhookconfigurations/w.yaml"].Mode; m != 0o600 {
		t.Errorf("mode %o", m)
	}
	if m := got["/crds/a.yaml"].Mode; m != 0o644 {
		t.Errorf("default mode %o", m)
	}
	if b := fileContent(t, img, "/usr/local/bin/tool"); !bytes.Equal(b, bin) {
		t.Errorf("binary %q", b)
	}

	fs[0], fs[1] = fs[1], fs[0]
	again, err := BinaryImage(BinaryOptions{Binary: bin, Name: "tool", Arch: "arm64", CABundle: ca, Files: fs})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("digest depends on file order: %s, %s", d1, d2)
	}

	if _, err := BinaryImage(BinaryOptions{Binary: bin, Name: "tool", Files: []File{{Path: "crds/x.yaml"}}}); err == nil {
		t.Error("a relative file path was accepted")
	}
}
