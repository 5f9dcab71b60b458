package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/client-go/rest"
)

// profileAPIServer starts a CPU profile of the API server (its
// /debug/pprof/profile, on by default and open to the admin user) when
// APIServerProfileDir is set, and returns the function that ends it and
// writes it to <dir>/<name>.pprof. The API server fixes a profile's length
// when it starts (a request that leaves early gets nothing), so each covers
// APIServerProfileTime from the phase's start and end waits for it.
func (h *Harness) profileAPIServer(ctx context.Context, name string) (end func()) {
	if h.APIServerProfileDir == "" {
		return func() {}
	}
	path := filepath.Join(h.APIServerProfileDir, regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(name, "_")+".pprof")
	done := make(chan error, 1)
	go func() { done <- h.fetchProfile(ctx, path) }()
	return func() {
		if err := <-done; err != nil {
			h.Logf("  API server profile %s: %v", name, err)
			return
		}
		h.Logf("  API server CPU profile in %s", path)
	}
}

func (h *Harness) fetchProfile(ctx context.Context, path string) error {
	hc, err := rest.HTTPClientFor(h.Env.Config)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(h.Env.Config.Host, "/"), max(int(h.APIServerProfileTime.Seconds()), 1))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}
