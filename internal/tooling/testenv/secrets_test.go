package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretScanFindsSecretsAtEveryLevel(t *testing.T) {
	s := NewSecretScan(SessionSecretKey, SessionToken)
	s.Logger().Info("clean line", "region", "ap-guangzhou")
	if _, err := s.Result(); err != nil {
		t.Fatalf("a clean line is a leak: %v", err)
	}
	// Debug lines too: the suites log at error level only, the scan sees all.
	s.Logger().V(1).Info("request", "token", SessionToken)
	s.CrossplaneLogger().Debug("signing", "key", "xx"+SessionSecretKey+"yy")
	summary, err := s.Result()
	if err == nil {
		t.Fatalf("no leak found: %s", summary)
	}
	if !strings.Contains(summary, "3 log lines") || !strings.Contains(summary, "2 leaks") {
		t.Errorf("summary %q: want 3 lines and 2 leaks", summary)
	}
	if strings.Contains(err.Error(), SessionToken) || strings.Contains(err.Error(), SessionSecretKey) || !strings.Contains(err.Error(), "<SECRET>") {
		t.Errorf("the failure must name the leak without the secret: %v", err)
	}
}

func TestSecretScanFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "provider.log")
	if err := os.WriteFile(path, []byte("ok\nAuthorization: TC3 ... "+SessionToken+"\nok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewSecretScan(SessionToken)
	if err := s.ScanFile(path); err != nil {
		t.Fatal(err)
	}
	if summary, err := s.Result(); err == nil || !strings.Contains(summary, "3 log lines") {
		t.Errorf("got %q, %v; want 3 lines and a leak", summary, err)
	}
}
