package deployed

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCopyTree: the regular files under src land under dst at the same
// relative paths (the kubelet's Pod logs are namespace_name_uid/container/0.log).
func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "out")
	files := map[string]string{"kubelet.log": "a", filepath.Join("ns_pod_uid", "c", "0.log"): "b"}
	for rel, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, rel)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, rel), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("kubelet.log", filepath.Join(src, "link.log")); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	for rel, body := range files {
		if b, err := os.ReadFile(filepath.Join(dst, rel)); err != nil || string(b) != body {
			t.Errorf("%s: %q, %v; want %q", rel, b, err, body)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "link.log")); !os.IsNotExist(err) {
		t.Errorf("a link was copied: %v", err)
	}
}
