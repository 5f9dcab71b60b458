// Package sdk checks that Tencent Cloud SDKs other than the Go one can use
// the emulator, configured as docs/emulator.md tells users to.
package sdk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// nodeModules installs test/sdk/node's locked packages once per lockfile into
// the project's cache (outside the work tree, so a clean clone reuses it) and
// returns the node_modules folder.
func nodeModules(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the Node.js SDK test needs it (%v)", tool, err)
		}
	}
	src := filepath.Join(testenv.RepoRoot(), "test", "sdk", "node")
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache := os.Getenv("PTN_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(base, "provider-tencentcloud-network")
	}
	dir := filepath.Join(cache, "sdk-node", hex.EncodeToString(h.Sum(nil))[:16])
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "tencentcloud-sdk-nodejs", "package.json")); err == nil {
		return modules
	}

	// Install into a fresh folder and rename it into place, so an
	// interrupted install never looks complete.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
	}
	t.Logf("installed the Node.js SDK into %s in %s", dir, time.Since(start).Round(time.Millisecond))
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, fs.ErrExist) {
		// A concurrent run may have won the race; its copy is as good.
		if _, statErr := os.Stat(modules); statErr != nil {
			t.Fatalf("move the install into place: %v", err)
		}
	}
	return modules
}

// scopes records the credential scope of every signed request.
type scopes struct {
	mu   sync.Mutex
	seen []string
}

func (s *scopes) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, rest, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
			cred, _, _ := strings.Cut(rest, ",")
			if _, scope, ok := strings.Cut(cred, "/"); ok {
				s.mu.Lock()
				s.seen = append(s.seen, scope)
				s.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	})
}

// The Node.js SDK signs with the first label of its endpoint as the service
// ("127" for 127.0.0.1:port), not clb; the emulator accepts that as the
// cloud does for its own host, and serves the calls.
func TestNodeSDK(t *testing.T) {
	modules := nodeModules(t)
	e, err := emulator.New(emulator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &scopes{}
	srv := httptest.NewServer(rec.wrap(e))
	t.Cleanup(func() {
		srv.Close()
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	endpoint := strings.TrimPrefix(srv.URL, "http://")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(testenv.RepoRoot(), "test", "sdk", "node", "clb.js"))
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+modules,
		"EMU_ENDPOINT="+endpoint,
		"EMU_SECRET_ID="+emulator.DefaultSecretID,
		"EMU_SECRET_KEY="+emulator.DefaultSecretKey,
		"EMU_REGION="+emulator.DefaultRegion,
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node clb.js: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var got struct {
		Created    []string
		TotalCount int
		Described  []struct {
			ID, Name, Type string
			Vips           []string
		}
		WrongKey string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	t.Logf("node clb.js: %s", bytes.TrimSpace(out))

	inv := e.Inventory()
	if len(got.Created) != 1 || len(inv.LoadBalancers) != 1 || inv.LoadBalancers[0].ID != got.Created[0] {
		t.Fatalf("CreateLoadBalancer answered %v; the emulator holds %+v", got.Created, inv.LoadBalancers)
	}
	lb := inv.LoadBalancers[0]
	if got.TotalCount != 1 || len(got.Described) != 1 {
		t.Fatalf("DescribeLoadBalancers: TotalCount %d, %d load balancers; want 1", got.TotalCount, len(got.Described))
	}
	if d := got.Described[0]; d.ID != lb.ID || d.Name != "node-sdk" || d.Type != "OPEN" ||
		len(d.Vips) != 1 || d.Vips[0] != lb.VIP {
		t.Fatalf("DescribeLoadBalancers = %+v, want id %s name node-sdk type OPEN vip %s", d, lb.ID, lb.VIP)
	}
	if got.WrongKey != "AuthFailure.SignatureFailure" {
		t.Fatalf("a wrong secret key gave %q, want AuthFailure.SignatureFailure", got.WrongKey)
	}

	// The calls went through the host-derived scope this change is about.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seen) < 3 {
		t.Fatalf("saw %d signed requests, want at least 3", len(rec.seen))
	}
	for _, scope := range rec.seen {
		if !strings.HasSuffix(scope, "/127/tc3_request") {
			t.Fatalf("the SDK signed scope %q, want <date>/127/tc3_request", scope)
		}
	}
}
