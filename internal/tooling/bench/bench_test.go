package bench

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// An excerpt of kube-apiserver's /metrics.
const apiserverText = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1000
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 1000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="network.tencentcloud.m.crossplane.io",resource="podaddresses",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 2500
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 3 1700000000000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 7
go_memstats_heap_alloc_bytes 1.2345e+07
weird{path="a\"b,c}\\d",x="y"} +Inf
`

func TestParseText(t *testing.T) {
	s, err := ParseText(strings.NewReader(apiserverText))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 8 {
		t.Fatalf("got %d samples, want 8", len(s))
	}
	if got := s.Sum("go_memstats_heap_alloc_bytes", nil); got != 12345000 {
		t.Errorf("heap = %v", got)
	}
	if got := s.Sum("apiserver_request_total", map[string]string{"resource": "pods", "verb": "POST"}); got != 1002 {
		t.Errorf("POST pods = %v, want 1002 (all codes)", got)
	}
	// Escaped quotes, commas and braces stay inside a label value.
	if w := s[len(s)-1]; w.Labels["path"] != `a"b,c}\d` || w.Labels["x"] != "y" {
		t.Errorf("labels of the escaped line: %q", w.Labels)
	}
	by := s.SumBy("apiserver_request_total", "verb", "subresource")
	if by["PUT status"] != 3500 {
		t.Errorf("SumBy: %v", by)
	}
	want := map[string]float64{"POST pods": 1002, "PUT pods/status": 1000, "PUT podaddresses/status": 2500, "WATCH pods": 3, "GET ": 7}
	if got := APIRequests(s); !reflect.DeepEqual(got, want) {
		t.Errorf("APIRequests = %v, want %v", got, want)
	}
	if got := Writes(want); got != 4502 {
		t.Errorf("Writes = %v, want 4502", got)
	}
}

func TestParseTextErrors(t *testing.T) {
	for _, in := range []string{
		"no_value\n",
		`m{a="b"` + "\n",
		`m{a="b} 1` + "\n",
		`m{a=b} 1` + "\n",
		"m not-a-number\n",
		"m 1 2 3\n",
	} {
		if _, err := ParseText(strings.NewReader(in)); err == nil {
			t.Errorf("ParseText(%q) did not fail", in)
		}
	}
}

func TestAPIDelta(t *testing.T) {
	before := snapshot{api: map[string]float64{"POST pods": 10, "PUT leases": 5, "WATCH pods": 1}}
	after := snapshot{
		api: map[string]float64{"POST pods": 1010, "PUT pods/status": 1000, "POST podaddresses": 1000, "PUT leases": 6, "WATCH pods": 4, "GET ": 3},
		own: map[string]float64{"POST pods": 1000, "PUT pods/status": 1000},
	}
	sys, cp := apiDelta(before, after)
	if want := map[string]float64{"POST podaddresses": 1000}; !reflect.DeepEqual(sys, want) {
		t.Errorf("system requests = %v, want %v", sys, want)
	}
	if want := map[string]float64{"PUT leases": 1}; !reflect.DeepEqual(cp, want) {
		t.Errorf("control plane requests = %v, want %v", cp, want)
	}
}

func TestPercentile(t *testing.T) {
	var v []float64
	for i := 100; i >= 1; i-- {
		v = append(v, float64(i))
	}
	for _, c := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {0, 1}, {1, 1}} {
		if got := Percentile(v, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if v[0] != 100 {
		t.Error("Percentile sorted its input in place")
	}
	if got := Percentile([]float64{3}, 99); got != 3 {
		t.Errorf("p99 of one value = %v", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none = %v", got)
	}
}

func TestProcParsing(t *testing.T) {
	// A command name with spaces and a parenthesis must not shift fields.
	stat := "4242 (kube apiserver) R 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 12 0 100 200000000 5000 18446744073709551615"
	cpu, err := parseStatCPU(stat)
	if err != nil || cpu != 3.25 {
		t.Errorf("parseStatCPU = %v, %v; want 3.25", cpu, err)
	}
	rss, err := parseVmRSS("Name:\tprovider\nVmPeak:\t 9 kB\nVmRSS:\t   61440 kB\n")
	if err != nil || rss != 61440*1024 {
		t.Errorf("parseVmRSS = %v, %v", rss, err)
	}
	if peak, err := parseStatus("VmHWM:\t  102400 kB\nVmRSS:\t   61440 kB\n", "VmHWM"); peak != 100<<20 || err != nil {
		t.Errorf("parseStatus VmHWM = %v, %v", peak, err)
	}
	if _, err := parseVmRSS("Name: x\n"); err == nil {
		t.Error("no VmRSS did not fail")
	}
}

func sampleResults() *Results {
	bind := &Phase{Pods: 1000, Done: 1000, Seconds: 6, RatioToBaseline: 1.5, P50: 0.5, P99: 1.9, Latencies: []int{100, 500, 1900},
		CloudCalls: map[string]int{"BatchRegisterTargets": 40, "DescribeTaskStatus": 20}, CloudWrites: 40, CloudWritesPerPod: 0.04, CloudDescribesPerPod: 0.02,
		APIRequestsPerPod: map[string]float64{"POST podaddresses": 1, "PUT podaddresses/status": 1, "PATCH pods": 1, "POST events": 0.5},
		APIWritesPerPod:   3.5, Events: map[string]int{"Normal": 3}, CallsPerSecond: []int{10, 20}}
	return &Results{
		Machine:  Machine{CPU: "test CPU", Cores: 2},
		Settings: Settings{Pods: 1000, MemoryPods: 10000},
		Baseline: &Phase{Pods: 1000, Done: 1000, Seconds: 4},
		Systems: []*SystemResult{{Name: "provider", Runs: []*RunResult{
			{Mode: "LeastUsed", Bind: bind, Delete: &Phase{Pods: 1000, Done: 1000, Seconds: 5, CloudDescribesPerPod: 1.2, CloudCalls: map[string]int{"DescribeListeners": 1200}}},
			{Mode: "naive", Unavailable: "not available"},
		}, Memory: []Memory{{Pods: 10000, PodAddresses: 10000, Bound: 10000, Others: 1000, RSS: 200 << 20},
			{Pods: 10000, PodAddresses: 600, Others: 1000, RSS: 100 << 20},
			// Above the goal after the burst, under it at rest: met.
			{Pods: 10000, PodAddresses: 10000, Bound: 10000, Others: 1000, RSS: 200 << 20, PeakRSS: 210 << 20, RestRSS: 140 << 20}}}},
		Seconds: 1000,
	}
}

func TestGoals(t *testing.T) {
	met := map[string]string{}
	var memory []string
	for _, g := range Goals(sampleResults()) {
		met[g.Figure] = metText(g.Met) + " " + g.Cause
		if strings.HasPrefix(g.Figure, "memory") {
			memory = append(memory, metText(g.Met)+" "+g.Cause)
		}
	}
	// A memory read before all PodAddresses existed does not decide the goal.
	// A reading at rest decides the goal when there is one.
	if want := []string{"not met ", "— only 600 PodAddresses existed when the memory was read", "met "}; !slices.Equal(memory, want) {
		t.Errorf("memory goals: %q, want %q", memory, want)
	}
	for fig, want := range map[string]string{
		"LeastUsed: all published, ratio to the baseline":     "met",
		"LeastUsed: Pod IP → published p99":                   "met",
		"LeastUsed: Kubernetes API writes per Pod":            "not met PATCH pods 1, POST podaddresses 1, PUT podaddresses/status 1, POST events 0.5",
		"LeastUsed: CLB writes per Pod":                       "met",
		"LeastUsed: deleting the Pods, CLB describes per Pod": "not met DescribeListeners 1.2e+03",
		"whole run": "met",
		"naive":     "—",
	} {
		if got := strings.TrimSpace(met[fig]); !strings.HasPrefix(got, want) && got != want {
			t.Errorf("%s: %q, want %q", fig, got, want)
		}
	}
}

func TestResultsRoundTripAndRender(t *testing.T) {
	r := sampleResults()
	path := filepath.Join(t.TempDir(), "results.json")
	if err := r.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(back)
	if string(a) != string(b) {
		t.Errorf("results changed through the file:\n%s\n%s", a, b)
	}
	md := Markdown(back, "../bench/results.json", "performance", []string{"bind-latency-cdf.png"})
	for _, want := range []string{
		"| LeastUsed: Pod IP → published p99 | ≤ 2 s | 1.90 s (p50 0.50 s) | met |",
		"| provider | naive | | not available |",
		"![bind-latency-cdf](performance/bind-latency-cdf.png)",
		"test CPU, 2 cores",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q", want)
		}
	}
	names, err := Plots(back, t.TempDir())
	if err != nil || len(names) != 3 {
		t.Errorf("Plots = %v, %v", names, err)
	}
}
