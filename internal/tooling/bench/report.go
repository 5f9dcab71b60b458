package bench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
)

// A Goal is one figure of issue 10 with its target and whether the run
// met it. Met is nil for a figure with no target (shown for context) or
// one the run did not measure.
type Goal struct {
	Figure   string `json:"figure"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      *bool  `json:"met,omitempty"`
	// Cause says, for a goal not met, which requests or calls are over.
	Cause string `json:"cause,omitempty"`
}

func verdict(ok bool) *bool { return &ok }

// Goals checks the first system (this provider) against its goals.
func Goals(r *Results) []Goal {
	var gs []Goal
	if len(r.Systems) == 0 {
		return nil
	}
	s := r.Systems[0]
	for _, run := range s.Runs {
		if run.Unavailable != "" || run.Bind == nil {
			g := Goal{Figure: run.Mode, Goal: "measured", Measured: orText(run.Unavailable, run.Error)}
			if run.Error != "" {
				g.Met = verdict(false) // a run that failed measured nothing
			}
			gs = append(gs, g)
			continue
		}
		b := run.Bind
		if run.Mode != "LeastUsed" && run.Mode != "InOrder" {
			// The naive mode and extra modes are measured beside the
			// defaults; the goals are the defaults'.
			m := fmt.Sprintf("%.1f s (%d/%d published), %.2f× the baseline, p99 %.2f s, %.3f CLB writes and %.2f API writes per Pod",
				b.Seconds, b.Done, b.Pods, b.RatioToBaseline, b.P99, b.CloudWritesPerPod, b.APIWritesPerPod)
			if ls := findRun(s, "LeastUsed"); ls != nil && ls.Bind != nil && ls.Bind.Seconds > 0 {
				m += fmt.Sprintf("; %.2f× batched LeastUsed's time", b.Seconds/ls.Bind.Seconds)
			}
			gs = append(gs, Goal{Figure: fmt.Sprintf("%s mode %v: all published", run.Mode, run.Flags), Goal: "measured", Measured: m})
			continue
		}
		all := b.Done == b.Pods
		gs = append(gs,
			Goal{Figure: run.Mode + ": all published, ratio to the baseline", Goal: "≤ 2×",
				Measured: fmt.Sprintf("%.1f s / %.1f s = %.2f× (%d/%d published)", b.Seconds, baseSeconds(r), b.RatioToBaseline, b.Done, b.Pods),
				Met:      verdict(all && b.RatioToBaseline > 0 && b.RatioToBaseline <= 2), Cause: timeCause(r, b)},
			Goal{Figure: run.Mode + ": Pod IP → published p99", Goal: "≤ 2 s",
				Measured: fmt.Sprintf("%.2f s (p50 %.2f s)", b.P99, b.P50), Met: verdict(all && b.P99 <= 2),
				Cause: latencyCause(r, b)},
			Goal{Figure: run.Mode + ": Kubernetes API writes per Pod", Goal: "≤ 3",
				Measured: fmt.Sprintf("%.2f", b.APIWritesPerPod), Met: verdict(b.APIWritesPerPod <= 3),
				Cause: writesCause(b.APIRequestsPerPod)},
			Goal{Figure: run.Mode + ": Normal Events per Pod", Goal: "none per Pod (< 0.1)",
				Measured: fmt.Sprintf("%.2f (Warning %.2f)", perPod(b.Events["Normal"], b.Pods), perPod(b.Events["Warning"], b.Pods)),
				Met:      verdict(perPod(b.Events["Normal"], b.Pods) < 0.1)},
		)
		g := Goal{Figure: run.Mode + ": CLB writes per Pod", Goal: "measured",
			Measured: fmt.Sprintf("%.3f %s", b.CloudWritesPerPod, callsText(b.CloudCalls, isWrite))}
		if run.Mode == "LeastUsed" {
			g.Goal, g.Met = "≤ 0.05", verdict(b.CloudWritesPerPod <= 0.05)
			g.Cause = batchCause(r, b, "BatchRegisterTargets", "the Pods arrived")
		}
		gs = append(gs, g,
			Goal{Figure: run.Mode + ": CLB describes per Pod", Goal: "< 0.1 (no call per Pod)",
				Measured: fmt.Sprintf("%.3f", b.CloudDescribesPerPod), Met: verdict(b.CloudDescribesPerPod < 0.1),
				Cause: callsText(b.CloudCalls, func(a string) bool { return !isWrite(a) })},
			Goal{Figure: run.Mode + ": API server + etcd CPU", Goal: "measured",
				Measured: fmt.Sprintf("%.1f s + %.1f s (baseline %.1f s + %.1f s)", b.APIServerCPU, b.EtcdCPU, baseCPU(r).APIServerCPU, baseCPU(r).EtcdCPU)},
		)
		if d := run.Delete; d != nil {
			gs = append(gs,
				Goal{Figure: run.Mode + ": deleting the Pods, CLB describes per Pod", Goal: "< 0.1 (no call per Pod)",
					Measured: fmt.Sprintf("%.3f in %.1f s", d.CloudDescribesPerPod, d.Seconds), Met: verdict(d.Done == d.Pods && d.CloudDescribesPerPod < 0.1),
					Cause: callsText(d.CloudCalls, func(a string) bool { return !isWrite(a) })},
				Goal{Figure: run.Mode + ": deleting the Pods, CLB writes per Pod", Goal: "≤ 0.05",
					Measured: fmt.Sprintf("%.3f", d.CloudWritesPerPod), Met: verdict(d.Done == d.Pods && d.CloudWritesPerPod <= 0.05),
					Cause: batchCause(r, d, "BatchDeregisterTargets", "the Pods went")},
			)
		}
	}
	if st := s.Steady; st != nil {
		gs = append(gs,
			Goal{Figure: fmt.Sprintf("steady state (%.0f s window): CLB writes per hour", st.Seconds), Goal: "0",
				Measured: fmt.Sprintf("%.0f", st.CloudWritesPerHour), Met: verdict(st.CloudWrites == 0), Cause: callsText(st.CloudCalls, isWrite)},
			Goal{Figure: "steady state: Kubernetes API writes per hour", Goal: "near 0 (≤ 60)",
				Measured: fmt.Sprintf("%.0f", st.APIWritesPerHour), Met: verdict(st.APIWritesPerHour <= 60), Cause: writesCause(st.APIRequests)},
			Goal{Figure: "steady state: reconciles of unchanged objects per hour", Goal: "counted",
				Measured: fmt.Sprintf("%.0f %s", st.ReconcilesPerHour, floatsText(st.Reconciles))},
		)
	}
	for _, m := range s.Memory {
		g := Goal{Figure: fmt.Sprintf("memory at %d Pods + %d other managed resources", m.Pods, m.Others), Goal: "measured",
			Measured: memoryText(m)}
		if m.Pods >= 10000 {
			// Only a run where the PodAddresses all exist measures the goal.
			g.Goal = "≤ 150 MiB at 10k PodAddresses"
			if m.PodAddresses >= 10000 {
				g.Met = verdict(m.GoalRSS() <= 150<<20)
				g.Cause = memoryCause(m)
			} else {
				g.Cause = fmt.Sprintf("only %d PodAddresses existed when the memory was read", m.PodAddresses)
			}
		}
		gs = append(gs, g)
	}
	gs = append(gs, PeerGoals(r)...)
	gs = append(gs, TKEPodsGoals(r)...)
	full := r.Settings.Pods >= 1000 && r.Settings.MemoryPods >= 10000
	g := Goal{Figure: "whole run", Goal: "≤ 20 min", Measured: fmt.Sprintf("%.1f min", r.Seconds/60)}
	if full {
		g.Met = verdict(r.Seconds <= 1200)
	}
	return append(gs, g)
}

// timeCause says where a bind phase's time went on this machine: the
// CPU every process of the run used, which bounds the phase's length from
// below, and the API server's share with the requests the system made.
func timeCause(r *Results, b *Phase) string {
	base := baseCPU(r)
	cpu := b.APIServerCPU + b.EtcdCPU + b.SystemCPU + b.HarnessCPU
	cores := max(r.Machine.Cores, 1)
	return fmt.Sprintf("the run is CPU-bound: its processes used %.1f CPU-seconds (API server %.1f, etcd %.1f, provider %.1f, "+
		"harness and emulator %.1f), at least %.1f s on %d cores, where 2× the baseline is %.1f s; the API server used %.1f s "+
		"(baseline %.1f s) serving the Pods and %s per Pod, and creating the Pods took %.1f s (baseline %.1f s)",
		cpu, b.APIServerCPU, b.EtcdCPU, b.SystemCPU, b.HarnessCPU, cpu/float64(cores), cores, 2*base.Seconds,
		b.APIServerCPU, base.APIServerCPU, writesCause(b.APIRequestsPerPod), b.WorkloadSeconds, base.Seconds) + byRequestText(r, b)
}

// byRequestText is the API server's CPU by request kind, when its profile
// was taken.
func byRequestText(r *Results, b *Phase) string {
	if len(b.APIServerCPUByRequest) == 0 {
		return ""
	}
	s := fmt.Sprintf("; its CPU profile over the phase's first %g s: %s", r.Settings.APIServerProfileSeconds, floatsText(b.APIServerCPUByRequest))
	if base := baseCPU(r).APIServerCPUByRequest; len(base) > 0 {
		s += fmt.Sprintf(" (baseline: %s)", floatsText(base))
	}
	return s
}

// latencyCause says what a Pod waits for between its IP and its address:
// its load balancer's next register call and that call's task, then the
// status write and the Pod patch on a busy API server.
func latencyCause(r *Results, b *Phase) string {
	calls, lbs := b.CloudCalls["BatchRegisterTargets"], max(r.Settings.LoadBalancers, 1)
	per := float64(calls) / float64(lbs)
	s := fmt.Sprintf("a Pod waits for its load balancer's next BatchRegisterTargets and that call's task (%s), then for its "+
		"status write and Pod patch on the API server, which used %.1f CPU-seconds in the phase", taskText(r), b.APIServerCPU)
	if per > 0 {
		s += fmt.Sprintf("; %d calls on %d load balancers over %.1f s: one per load balancer every %.1f s", calls, lbs, b.Seconds, b.Seconds/per)
	}
	return s
}

// batchCause says why target changes took more calls than the goal
// allows: LeastUsed spreads the Pods over every load balancer, so each has
// targets to change for the whole phase and gets its own call about once
// per batch wait.
func batchCause(r *Results, b *Phase, action, what string) string {
	calls, lbs := b.CloudCalls[action], max(r.Settings.LoadBalancers, 1)
	return fmt.Sprintf("%d %s on %d load balancers while %s over %.1f s: LeastUsed gives every load balancer targets to change "+
		"for the whole phase, and each gets a call about every %g s while they keep changing (--target-batch-max-wait, which "+
		"bounds what a Pod waits for its call): %.1f calls per load balancer, where ≤ 0.05 per Pod allows %.1f",
		calls, action, lbs, what, b.Seconds, targetMaxWait.Seconds(), float64(calls)/float64(lbs), 0.05*float64(b.Pods)/float64(lbs))
}

// targetMaxWait is how long the provider holds a load balancer's burst of
// target changes at its defaults.
const targetMaxWait = tcapi.DefaultTargetBatchMaxWait

// taskText names the emulator's task time, which a register call waits on.
func taskText(r *Results) string {
	if strings.Contains(r.Settings.Emulator, "1 s tasks") {
		return "1 s in the realistic profile"
	}
	return "the profile's task time"
}

// memoryCause says where the RSS at rest goes: the Go heap, which the
// collector lets grow to twice the data live at its last collection
// (GOGC=100) unless a memory limit applies, and the rest (runtime, stacks,
// the binary's pages).
func memoryCause(m Memory) string {
	if m.RestRSS == 0 || m.RestNextGC == 0 {
		return ""
	}
	return fmt.Sprintf("at rest the Go heap holds %s and the collector's next target is %s: by default it lets the heap grow "+
		"to twice the data live at its last collection (about %s here), and no memory limit applied (--memory-limit follows a "+
		"container's memory limit; this process had none); the other %s of RSS is heap memory held for reuse, the Go runtime, "+
		"stacks and the binary's pages",
		MiB(m.RestHeap), MiB(m.RestNextGC), MiB(m.RestNextGC/2), MiB(max(m.RestRSS-m.RestHeap, 0)))
}

// memoryText is a memory reading on one line: at rest first when there is
// one, as the goal is judged on it.
func memoryText(m Memory) string {
	counts := fmt.Sprintf("(%d PodAddresses, %d published)", m.PodAddresses, m.Bound)
	if m.RestRSS == 0 {
		return fmt.Sprintf("RSS %s, Go heap %s %s", MiB(m.RSS), MiB(m.Heap), counts)
	}
	return fmt.Sprintf("RSS at rest %s, Go heap at rest %s; right after the burst RSS %s (peak %s), Go heap %s %s",
		MiB(m.RestRSS), MiB(m.RestHeap), MiB(m.RSS), MiB(m.PeakRSS), MiB(m.Heap), counts)
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func findRun(s *SystemResult, mode string) *RunResult {
	for _, r := range s.Runs {
		if r.Mode == mode {
			return r
		}
	}
	return nil
}

func baseSeconds(r *Results) float64 { return baseCPU(r).Seconds }

func baseCPU(r *Results) Phase {
	if r.Baseline == nil {
		return Phase{}
	}
	return *r.Baseline
}

func perPod(n, pods int) float64 { return Round(float64(n) / float64(max(pods, 1))) }

// writesCause lists the write requests, the largest first.
func writesCause(by map[string]float64) string {
	w := map[string]float64{}
	for k, v := range by {
		if verb, _, _ := strings.Cut(k, " "); writeVerb(verb) {
			w[k] = v
		}
	}
	return floatsText(w)
}

func floatsText(m map[string]float64) string {
	keys := SortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.3g", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func callsText(m map[string]int, keep func(string) bool) string {
	f := map[string]float64{}
	for k, v := range m {
		if keep(k) {
			f[k] = float64(v)
		}
	}
	return floatsText(f)
}

// Table renders the runs for a terminal.
func Table(r *Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "machine: %s, %d cores, %s, %s\n", r.Machine.CPU, r.Machine.Cores, r.Machine.GoVersion, r.Machine.Date)
	if r.Baseline != nil {
		fmt.Fprintf(&b, "baseline (no system): %d Pods created and given IPs in %.1f s, API server CPU %.1f s, etcd %.1f s\n",
			r.Baseline.Pods, r.Baseline.Seconds, r.Baseline.APIServerCPU, r.Baseline.EtcdCPU)
	}
	for _, s := range r.Systems {
		for _, run := range s.Runs {
			switch {
			case run.Unavailable != "":
				fmt.Fprintf(&b, "%s %s: %s\n", s.Name, run.Mode, run.Unavailable)
			case run.Bind == nil:
				fmt.Fprintf(&b, "%s %s: %s\n", s.Name, run.Mode, run.Error)
			default:
				fmt.Fprintf(&b, "%s %s %s\n", s.Name, run.Mode, describe("bind", run.Bind))
				if run.Delete != nil {
					fmt.Fprintf(&b, "%s %s %s\n", s.Name, run.Mode, describe("delete", run.Delete))
				}
			}
		}
	}
	b.WriteString("\ngoals:\n")
	for _, g := range Goals(r) {
		fmt.Fprintf(&b, "  [%s] %s: %s (goal %s)", metText(g.Met), g.Figure, g.Measured, g.Goal)
		if g.Met != nil && !*g.Met && g.Cause != "" {
			fmt.Fprintf(&b, " — %s", g.Cause)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func metText(m *bool) string {
	switch {
	case m == nil:
		return "—"
	case *m:
		return "met"
	}
	return "not met"
}
