package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// profileAPIServer starts a CPU profile of the API server (its
// /debug/pprof/profile, on by default and open to the admin user) when
// APIServerProfileTime is set, and returns the function that waits for it,
// writes it to <APIServerProfileDir>/<name>.pprof and returns the API
// server's CPU seconds by request kind. The API server fixes a profile's
// length when it starts (a request that leaves early gets nothing), so each
// covers APIServerProfileTime from the phase's start.
func (h *Harness) profileAPIServer(ctx context.Context, name string) (end func() map[string]float64) {
	if h.APIServerProfileTime <= 0 {
		return func() map[string]float64 { return nil }
	}
	path := filepath.Join(h.APIServerProfileDir, regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(name, "_")+".pprof")
	type result struct {
		raw []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		raw, err := h.fetchProfile(ctx)
		done <- result{raw, err}
	}()
	return func() map[string]float64 {
		res := <-done
		if res.err == nil {
			res.err = os.WriteFile(path, res.raw, 0o600)
		}
		var by map[string]float64
		if res.err == nil {
			by, res.err = CPUByRequest(res.raw)
		}
		if res.err != nil {
			h.Logf("  API server profile %s: %v", name, res.err)
			return nil
		}
		h.Logf("  API server CPU profile in %s: %s", path, floatsText(by))
		return by
	}
}

func (h *Harness) fetchProfile(ctx context.Context) ([]byte, error) {
	return testenv.APIServerGet(ctx, h.Env.Config, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(int(h.APIServerProfileTime.Seconds()), 1)))
}

// requestKinds name what the API server was doing by the functions on a
// sample's stack; of those that match, the one listed first wins: a
// request's handler over the HTTP layer around it, custom resources'
// handlers over the built-in ones they wrap, watches over the lists that
// start them. Stacks do not name the resource: here the built-in kinds
// written are Pods (and a few Events and Leases), the custom ones
// PodAddresses and PortPools.
func requestKinds() []requestKind {
	return []requestKind{
		{"(*WatchServer)", "WATCH (events sent)"},
		{"crdHandler).serveStatus.UpdateResource", "PUT custom resources/status"},
		{"crdHandler).serveStatus.PatchResource", "PATCH custom resources/status"},
		{"crdHandler).serveResource.CreateResource", "POST custom resources"},
		{"crdHandler).serveResource.UpdateResource", "PUT custom resources"},
		{"crdHandler).serveResource.PatchResource", "PATCH custom resources"},
		{"crdHandler).serveResource.DeleteResource", "DELETE custom resources"},
		{"crdHandler).serveResource.ListResource", "LIST custom resources"},
		{"crdHandler).serveResource.GetResource", "GET custom resources"},
		{"handlers.CreateResource", "POST built-in kinds"},
		{"handlers.UpdateResource", "PUT built-in kinds"},
		{"handlers.PatchResource", "PATCH built-in kinds"},
		{"handlers.(*patcher)", "PATCH built-in kinds"},
		{"handlers.DeleteResource", "DELETE built-in kinds"},
		{"handlers.ListResource", "LIST built-in kinds"},
		{"handlers.GetResource", "GET built-in kinds"},
		{"storage/etcd3.(*watchChan)", "decoding etcd's events (one per write)"},
		{"pkg/authentication/", "authentication (client certificates here)"},
		{"runtime.gcBgMarkWorker", "garbage collection"},
		{"storage/cacher", "watch cache"},
		{"net/http", "HTTP, TLS and request filters"},
		{"crypto/tls", "HTTP, TLS and request filters"},
	}
}

type requestKind struct{ fn, kind string }

// CPUByRequest reads a CPU profile of the API server and sums its CPU
// seconds by request kind (requestKinds; "other" for the rest).
func CPUByRequest(raw []byte) (map[string]float64, error) {
	p, err := profile.Parse(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("not a CPU profile: %v", p.SampleType)
	}
	by, kinds := map[string]float64{}, requestKinds()
	for _, s := range p.Sample {
		by[kindOf(kinds, s)] += float64(s.Value[idx]) / 1e9
	}
	for k, v := range by {
		by[k] = Round(v)
	}
	return by, nil
}

func kindOf(kinds []requestKind, s *profile.Sample) string {
	best := len(kinds)
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			for i, rk := range kinds[:best] {
				if strings.Contains(line.Function.Name, rk.fn) {
					best = i
					break
				}
			}
		}
	}
	if best == len(kinds) {
		return "other"
	}
	return kinds[best].kind
}
