package bench

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"
)

// TestCPUByRequest: samples are summed under the innermost request
// handler on their stacks, custom resources apart from built-in kinds,
// watches apart from the lists that start them.
func TestCPUByRequest(t *testing.T) {
	fn := map[string]*profile.Function{}
	loc := func(names ...string) []*profile.Location { // the leaf first
		var out []*profile.Location
		for _, n := range names {
			if fn[n] == nil {
				fn[n] = &profile.Function{ID: uint64(len(fn) + 1), Name: n}
			}
			out = append(out, &profile.Location{ID: uint64(len(fn)*100 + len(out) + 1), Line: []profile.Line{{Function: fn[n]}}})
		}
		return out
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		Sample: []*profile.Sample{
			{Value: []int64{1, 300_000_000}, Location: loc("runtime.mallocgc",
				"k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler).serveStatus.UpdateResource.func2.4",
				"k8s.io/apiserver/pkg/endpoints/handlers.UpdateResource.func1")},
			{Value: []int64{1, 200_000_000}, Location: loc("encoding/json.Marshal",
				"k8s.io/apiserver/pkg/endpoints/handlers.PatchResource.func1")},
			{Value: []int64{1, 100_000_000}, Location: loc("k8s.io/apiserver/pkg/endpoints/handlers.(*WatchServer).HandleHTTP",
				"k8s.io/apiserver/pkg/endpoints/handlers.ListResource.func1")},
			{Value: []int64{1, 50_000_000}, Location: loc("runtime.scanobject", "runtime.gcBgMarkWorker")},
			{Value: []int64{1, 50_000_000}, Location: loc("syscall.Syscall6")},
		},
	}
	// Give every location and function the unique ids the encoder wants.
	seen := map[*profile.Location]bool{}
	for _, s := range p.Sample {
		for _, l := range s.Location {
			if !seen[l] {
				seen[l] = true
				l.ID = uint64(len(p.Location) + 1)
				p.Location = append(p.Location, l)
			}
		}
	}
	for _, f := range fn {
		p.Function = append(p.Function, f)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := CPUByRequest(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"PUT custom resources/status": 0.3, "PATCH built-in kinds": 0.2, "WATCH (events sent)": 0.1,
		"garbage collection": 0.05, "other": 0.05}
	if len(got) != len(want) {
		t.Fatalf("CPUByRequest = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("CPUByRequest[%q] = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if _, err := CPUByRequest([]byte("not a profile")); err == nil {
		t.Error("CPUByRequest accepted something that is not a profile")
	}
}
