package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// A Sample is one line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// A Scrape is every sample of one read of a metrics endpoint.
type Scrape []Sample

// ParseText reads the Prometheus text exposition format. Comments and
// timestamps are skipped; a malformed line is an error, since a figure
// silently missing would read as zero.
func ParseText(r io.Reader) (Scrape, error) {
	var out Scrape
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseLine(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return s, fmt.Errorf("no value")
	}
	s.Name, line = line[:i], line[i:]
	if line[0] == '{' {
		rest, err := parseLabels(line[1:], s.Labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) == 0 || len(fields) > 2 {
		return s, fmt.Errorf("want a value and an optional timestamp")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, err
	}
	s.Value = v
	return s, nil
}

// parseLabels reads name="value" pairs up to the closing brace, with the
// format's escapes (\\, \", \n), and returns what follows the brace.
func parseLabels(in string, into map[string]string) (string, error) {
	for {
		in = strings.TrimLeft(in, " \t,")
		if in == "" {
			return "", fmt.Errorf("unterminated labels")
		}
		if in[0] == '}' {
			return in[1:], nil
		}
		eq := strings.IndexByte(in, '=')
		if eq <= 0 || len(in) < eq+2 || in[eq+1] != '"' {
			return "", fmt.Errorf("malformed label")
		}
		name := strings.TrimSpace(in[:eq])
		in = in[eq+2:]
		var b strings.Builder
		closed := false
		for j := 0; j < len(in); j++ {
			c := in[j]
			if c == '\\' && j+1 < len(in) {
				j++
				switch in[j] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(in[j])
				}
				continue
			}
			if c == '"' {
				in, closed = in[j+1:], true
				break
			}
			b.WriteByte(c)
		}
		if !closed {
			return "", fmt.Errorf("unterminated label value")
		}
		into[name] = b.String()
	}
}

// Sum adds the samples named name whose labels include all of match.
func (s Scrape) Sum(name string, match map[string]string) float64 {
	t := 0.0
	for _, x := range s {
		if x.Name == name && matches(x.Labels, match) {
			t += x.Value
		}
	}
	return t
}

// SumBy adds the samples named name grouped by the values of keys, joined
// by a space ("POST pods").
func (s Scrape) SumBy(name string, keys ...string) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s {
		if x.Name != name {
			continue
		}
		vals := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = x.Labels[k]
		}
		out[strings.Join(vals, " ")] += x.Value
	}
	return out
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Delta is after minus before per key, zero differences left out (a
// counter reset by a restart would show as negative, and is kept).
func Delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// Round keeps three decimals, so that results read well.
func Round(v float64) float64 { return math.Round(v*1000) / 1000 }

// writeVerbs are the verbs of apiserver_request_total that change state.
func writeVerb(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY", "CREATE", "UPDATE":
		return true
	}
	return false
}

// APIRequests groups apiserver_request_total by "VERB resource[/subresource]".
func APIRequests(s Scrape) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s {
		if x.Name != "apiserver_request_total" {
			continue
		}
		// A non-resource request (/metrics, /healthz) has no resource:
		// its key is "VERB ".
		res := x.Labels["resource"]
		if sub := x.Labels["subresource"]; sub != "" && res != "" {
			res += "/" + sub
		}
		out[x.Labels["verb"]+" "+res] += x.Value
	}
	return out
}

// Writes adds the requests of by (keys "VERB resource") whose verb writes.
func Writes(by map[string]float64) float64 {
	t := 0.0
	for k, v := range by {
		verb, _, _ := strings.Cut(k, " ")
		if writeVerb(verb) {
			t += v
		}
	}
	return t
}

// SortedKeys returns the keys of m in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ScrapeURL reads a plain HTTP metrics endpoint.
func ScrapeURL(ctx context.Context, url string) (Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return ParseText(resp.Body)
}

// fetchTo saves the body of url in path (a profile, as served).
func fetchTo(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path) //nolint:gosec // G304: a path the bench's user gave.
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// ScrapeAPIServer reads and parses the API server's own /metrics.
func ScrapeAPIServer(ctx context.Context, cfg *rest.Config) (Scrape, error) {
	raw, err := testenv.APIServerMetrics(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return ParseText(bytes.NewReader(raw))
}
