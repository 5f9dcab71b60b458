package bench

import (
	"strings"
	"testing"
)

func peerResults(provLeast, provNaive, peerDefaults, peerBest float64) *Results {
	phase := func(s float64) *Phase {
		return &Phase{Pods: 10, Done: 10, Seconds: s, P99: s / 2, CloudWritesPerPod: s / 100, APIServerCPU: s / 10}
	}
	return &Results{Systems: []*SystemResult{
		{Name: "provider-tencentcloud-network", Runs: []*RunResult{
			{Mode: "LeastUsed", Bind: phase(provLeast)}, {Mode: "naive", Bind: phase(provNaive)}}},
		{Name: "tke-extend-network-controller v2.5.2", Runs: []*RunResult{
			{Mode: "defaults", Bind: phase(peerDefaults)}, {Mode: "best", Bind: phase(peerBest)}}},
	}}
}

func TestPeerGoals(t *testing.T) {
	met := func(gs []Goal, prefix string) []bool {
		var out []bool
		for _, g := range gs {
			if strings.HasPrefix(g.Figure, prefix) && g.Met != nil {
				out = append(out, *g.Met)
			}
		}
		return out
	}
	// Ahead at the defaults, 3× at best: the naive mode, faster here,
	// is not the provider's best setting.
	gs := PeerGoals(peerResults(10, 1, 50, 30))
	if got := met(gs, "at both defaults"); len(got) != 4 || !got[0] || !got[1] || !got[2] || !got[3] {
		t.Errorf("defaults goals = %v, want 4 met", got)
	}
	if got := met(gs, "at both best"); len(got) != 1 || !got[0] {
		t.Errorf("best goal = %v, want met (30 s / 10 s)", got)
	}
	// 2.5× at best is not 3×; behind at the defaults on every figure.
	gs = PeerGoals(peerResults(20, 1, 15, 50))
	if got := met(gs, "at both best"); len(got) != 1 || got[0] {
		t.Errorf("best goal = %v, want not met (50 s / 20 s)", got)
	}
	if got := met(gs, "at both defaults"); len(got) != 4 || got[0] || got[3] {
		t.Errorf("defaults goals = %v, want not met", got)
	}
	// A peer run cut off by the phase's bound is judged on its figures so
	// far, marked as lower bounds; ours unfinished is not judged.
	r := peerResults(10, 1, 50, 30)
	r.Systems[1].Runs[0].Bind.Done = 8
	gs = PeerGoals(r)
	if got := met(gs, "at both defaults"); len(got) != 4 || !got[0] || !got[3] {
		t.Errorf("defaults goals with the peer cut off = %v, want 4 met", got)
	}
	for _, g := range gs {
		if strings.HasPrefix(g.Figure, "at both defaults") && !strings.Contains(g.Measured, "≥") {
			t.Errorf("%s: %q does not mark the peer's figure as a lower bound", g.Figure, g.Measured)
		}
	}
	r.Systems[0].Runs[0].Bind.Done = 9
	if got := met(PeerGoals(r), "at both defaults"); len(got) != 0 {
		t.Errorf("defaults goals with our run unfinished = %v, want none judged", got)
	}
	// A peer that could not be built is reported, not judged.
	r = peerResults(10, 1, 50, 30)
	for _, run := range r.Systems[1].Runs {
		run.Bind, run.Unavailable = nil, "not measured — no peer source"
	}
	gs = PeerGoals(r)
	if len(gs) != 1 || gs[0].Met != nil || !strings.Contains(gs[0].Measured, "not measured") {
		t.Errorf("goals without the peer = %+v", gs)
	}
	if md := PeerMarkdown(r); !strings.Contains(md, "not measured — no peer source") {
		t.Errorf("the peer section does not say why it was not measured")
	}
}
