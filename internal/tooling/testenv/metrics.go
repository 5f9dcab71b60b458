package testenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// APIServerMetrics reads the API server's /metrics (Prometheus text) with
// cfg's credentials, which must be allowed to (an admin's are): its
// apiserver_request_total counts every request by verb and resource, a
// benchmark's way to count what a controller asked of it.
func APIServerMetrics(ctx context.Context, cfg *rest.Config) ([]byte, error) {
	return APIServerGet(ctx, cfg, "/metrics")
}

// APIServerGet reads one of the API server's non-resource paths (/metrics,
// /debug/pprof/...) with cfg's credentials.
func APIServerGet(ctx context.Context, cfg *rest.Config, path string) ([]byte, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("API server %s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// ControlPlanePIDs finds the kube-apiserver and etcd that this process
// started (Start runs them as its children), so that their CPU time can
// be read from /proc.
func ControlPlanePIDs() (apiserver, etcd int, err error) {
	dirs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, 0, err
	}
	self := os.Getpid()
	for _, d := range dirs {
		raw, err := os.ReadFile(d) //nolint:gosec // G304: /proc paths.
		if err != nil {
			continue // the process ended meanwhile
		}
		comm, ppid, ok := commAndParent(string(raw))
		if !ok || ppid != self {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		switch comm {
		case "kube-apiserver":
			apiserver = pid
		case "etcd":
			etcd = pid
		}
	}
	if apiserver == 0 || etcd == 0 {
		return apiserver, etcd, fmt.Errorf("kube-apiserver (pid %d) or etcd (pid %d) not found among this process's children", apiserver, etcd)
	}
	return apiserver, etcd, nil
}

// commAndParent reads the name and parent pid of /proc/<pid>/stat; the
// name is in parentheses and may itself hold spaces or parentheses.
func commAndParent(stat string) (string, int, bool) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(stat[end+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return stat[open+1 : end], ppid, err == nil
}
