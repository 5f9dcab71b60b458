package bench

import (
	"fmt"
	"path"
	"strings"
)

// Markdown renders docs/performance.md from a run: how it was measured,
// every goal beside its figure, every figure per run and the plots
// (file names under plotDir, relative to the page).
func Markdown(r *Results, resultsFile, plotDir string, plots []string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Performance\n\n")
	command := r.Settings.Command
	if command == "" {
		command = "make bench" // results from before the command was kept came from it
	}
	w("<!-- Written by `%s` from %s: do not edit; re-run it. -->\n\n", command, path.Base(resultsFile))
	w("Every figure on this page is from one run of `%s`, ", command)
	w("on %s, %d cores, %s, %s, which took %.1f minutes. ", r.Machine.CPU, r.Machine.Cores, r.Machine.GoVersion, r.Machine.Date, r.Seconds/60)
	w("The raw results are in [%s](%s).\n\n", path.Base(resultsFile), resultsFile)
	if r.Machine.Note != "" {
		w("**The machine was not idle during this run**: %s. Its times and CPU figures are those of a shared machine.\n\n", r.Machine.Note)
	}
	w("## How it is measured\n\n")
	w("- Everything runs on the one machine: kube-apiserver and etcd (the local control plane of `internal/tooling/testenv`), ")
	w("the emulator, the system under test and the harness that plays the workload.\n")
	w("- The provider runs as its own process with its **default flags**: %s.\n", r.Settings.ProviderArguments)
	w("- Each run gets a fresh emulator, profile %s, with %d load balancers created before the provider starts, ", r.Settings.Emulator, r.Settings.LoadBalancers)
	w("and a PortPool of %d ports on each (ports %d–%d).\n", r.Settings.PortsPerLB, startPort, startPort+r.Settings.PortsPerLB-1)
	w("- The workload: %d Pods, each asking for one TCP address, created by %d workers; ", r.Settings.Pods, r.Settings.Concurrency)
	w("each is then set Running with a Pod IP, as a kubelet would. The **baseline** is the same Pods with no provider running.\n")
	w("- *All published* is from the first Pod created until the last Pod's annotations carry its address and `status: Ready`, ")
	w("seen through a watch. The latency of a Pod is from its IP being set to its address being published.\n")
	w("- Kubernetes API requests are the API server's own `apiserver_request_total`, before and after, less the harness's own requests; ")
	w("watches are left out (the API server counts one when it ends), and so are the control plane's requests of itself (its identity lease, its endpoints, admission's LimitRange lookups), which go on with no system running. CPU seconds of kube-apiserver, etcd, the system and the bench process (the harness and the emulator) come from `/proc`, ")
	w("the provider's Go heap from its metrics endpoint (`go_memstats_heap_alloc_bytes`) and its RSS from `/proc`. ")
	w("Where the API server's CPU goes is read from its own CPU profile (`/debug/pprof/profile`), taken from the start of each bind phase.\n")
	w("- CLB calls are the emulator's counters by action; *writes* are every action but `Describe*`/`Inquiry*`.\n")
	w("- Deleting: the Pods are deleted and the phase ends when all are gone and the cloud holds no target.\n")
	if r.Settings.SteadySeconds > 0 {
		w("- Steady state: after the first mode's Pods are published, nothing changes for %.0f s; the counts are extrapolated per hour.\n", r.Settings.SteadySeconds)
	}
	if r.Settings.MemoryPods > 0 {
		w("- Memory: a separate run with %d Pods and %d other managed resources (Observe-only LoadBalancers) beside them.\n", r.Settings.MemoryPods, r.Settings.MemoryOthers)
	}
	w("- Memory is read twice. *Right after the burst*: as the last Pod is published, with the burst's garbage still in the heap; ")
	w("*peak* is the highest RSS the process had until then (`VmHWM`). *At rest*: once the provider's work queues are empty ")
	w("(`workqueue_depth`) and its RSS fell by less than 1 MiB over %d readings %s apart (at most %s later; ", restSamples, restPoll, restTimeout)
	w("in the first mode, after the steady window). The memory goal is judged at rest: a provider spends its life there. ")
	w("Results from before the reading at rest show the reading after the burst only.\n")
	w("\nRe-run: `make bench` (the full run); `go run ./cmd/bench -pods 100 -steady 30s` is a smoke run; ")
	w("`go run ./cmd/bench -render bench/results.json` renders this page again. `-pods 5000` scales the runs; ")
	w("`-mode name=flags` measures the provider with other flags beside its defaults. ")
	w("`-only memory -memory-pods 10000 -out '' -docs ''` runs the memory run alone, and `-memory-profile heap.pb.gz` saves the provider's heap profile at its end (read with `go tool pprof`). ")
	w("Another product is measured on the same workload by implementing `internal/tooling/bench.System` and naming it in `-systems`.\n\n")

	w("%s", PeerMarkdown(r))
	w("%s", TKEPodsMarkdown(r))
	w("## Goals\n\n| figure | goal | measured | met |\n|---|---|---|---|\n")
	for _, g := range Goals(r) {
		m := metText(g.Met)
		if g.Met != nil && !*g.Met && g.Cause != "" {
			m += ": " + g.Cause
		}
		w("| %s | %s | %s | %s |\n", cell(g.Figure), cell(g.Goal), cell(g.Measured), cell(m))
	}

	w("\n## Runs\n\n")
	w("| system | mode | Pods | all published | ratio to baseline | p50 / p99 | CLB writes / Pod | CLB describes / Pod | API writes / Pod | apiserver + etcd CPU | provider CPU | RSS / heap |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	if bl := r.Baseline; bl != nil {
		w("| (none) | baseline | %d | %.1f s | 1 | | | | | %.1f s + %.1f s | | |\n", bl.Pods, bl.Seconds, bl.APIServerCPU, bl.EtcdCPU)
	}
	for _, s := range r.Systems {
		for _, run := range s.Runs {
			if run.Bind == nil {
				w("| %s | %s | | %s | | | | | | | | |\n", s.Name, run.Mode, cell(orText(run.Unavailable, run.Error)))
				continue
			}
			row(w, s.Name, run.Mode, run.Bind)
			if run.Delete != nil {
				row(w, s.Name, run.Mode+", deleting", run.Delete)
			}
		}
	}
	for _, s := range r.Systems {
		w("\n### %s: Kubernetes API requests per Pod\n\n", s.Name)
		w("By verb and resource, from `apiserver_request_total`.\n\n| mode | requests per Pod |\n|---|---|\n")
		for _, run := range s.Runs {
			if run.Bind != nil {
				w("| %s | %s |\n", run.Mode, cell(floatsText(run.Bind.APIRequestsPerPod)))
			}
			if run.Delete != nil {
				w("| %s, deleting | %s |\n", run.Mode, cell(floatsText(run.Delete.APIRequestsPerPod)))
			}
		}
		if hasByRequest(s) {
			w("\n### %s: the API server's CPU by request kind\n\n", s.Name)
			w("CPU seconds from the API server's own CPU profile over the first %g s of each bind phase (`-apiserver-profile-time`), ", r.Settings.APIServerProfileSeconds)
			w("by the request handler on each sample's stack (`internal/tooling/bench/apiprofile.go`); the profiles are kept with the run's logs.\n\n| mode | CPU seconds by request kind |\n|---|---|\n")
			if bl := r.Baseline; bl != nil && len(bl.APIServerCPUByRequest) > 0 {
				w("| baseline (no system) | %s |\n", cell(floatsText(bl.APIServerCPUByRequest)))
			}
			for _, run := range s.Runs {
				if run.Bind != nil && len(run.Bind.APIServerCPUByRequest) > 0 {
					w("| %s | %s |\n", run.Mode, cell(floatsText(run.Bind.APIServerCPUByRequest)))
				}
			}
		}
		w("\n### %s: CLB calls by action\n\nAll answered calls, refused ones included (listed apart too).\n\n| mode | calls | refused | Events (by type) |\n|---|---|---|---|\n", s.Name)
		for _, run := range s.Runs {
			if run.Bind != nil {
				w("| %s | %s | %s | %s |\n", run.Mode, cell(intsText(run.Bind.CloudCalls)), cell(intsText(run.Bind.CloudErrors)), cell(intsText(run.Bind.Events)))
			}
			if run.Delete != nil {
				w("| %s, deleting | %s | %s | |\n", run.Mode, cell(intsText(run.Delete.CloudCalls)), cell(intsText(run.Delete.CloudErrors)))
			}
		}
		if st := s.Steady; st != nil {
			w("\n### %s: steady state\n\n", s.Name)
			w("%.0f s with nothing changing after the %s Pods were published (extrapolated per hour):\n\n", st.Seconds, st.Mode)
			w("| figure | in the window | per hour |\n|---|---|---|\n")
			w("| CLB writes | %d | %.0f |\n", st.CloudWrites, st.CloudWritesPerHour)
			w("| CLB calls by action | %s | |\n", cell(callsText(st.CloudCalls, func(string) bool { return true })))
			w("| Kubernetes API writes | %.0f | %.0f |\n", st.APIWrites, st.APIWritesPerHour)
			w("| Kubernetes API requests | %s | |\n", cell(floatsText(st.APIRequests)))
			w("| the control plane's own requests (left out) | %s | |\n", cell(floatsText(st.ControlPlaneRequests)))
			w("| reconciles (controller_runtime_reconcile_total) | %s | %.0f |\n", cell(floatsText(st.Reconciles)), st.ReconcilesPerHour)
			w("| provider CPU | %.2f s | |\n", st.SystemCPU)
		}
		if len(s.Memory) > 0 {
			w("\n### %s: memory\n\n| Pods | PodAddresses | published | other managed resources | RSS at rest | Go heap at rest | RSS after the burst | peak RSS | Go heap after the burst |\n|---|---|---|---|---|---|---|---|---|\n", s.Name)
			for _, m := range s.Memory {
				w("| %d | %d | %d | %d | %s | %s | %s | %s | %s |\n", m.Pods, m.PodAddresses, m.Bound, m.Others,
					orBlank(m.RestRSS), orBlank(m.RestHeap), MiB(m.RSS), orBlank(m.PeakRSS), MiB(m.Heap))
			}
		}
	}
	if len(plots) > 0 {
		w("\n## Plots\n\n")
		for _, p := range plots {
			w("![%s](%s)\n\n", strings.TrimSuffix(p, ".png"), path.Join(plotDir, p))
		}
	}
	return b.String()
}

func row(w func(string, ...any), sys, mode string, ph *Phase) {
	lat, ratio, rss := "", "", ""
	if ph.P99 > 0 {
		lat = fmt.Sprintf("%.2f s / %.2f s", ph.P50, ph.P99)
	}
	if ph.RatioToBaseline > 0 {
		ratio = fmt.Sprintf("%.2f×", ph.RatioToBaseline)
	}
	if ph.SystemRSS > 0 {
		rss = MiB(ph.SystemRSS) + " / " + MiB(ph.SystemHeap)
	}
	done := fmt.Sprintf("%.1f s", ph.Seconds)
	if ph.Done < ph.Pods {
		done = fmt.Sprintf("%d/%d after %.1f s", ph.Done, ph.Pods, ph.Seconds)
	}
	w("| %s | %s | %d | %s | %s | %s | %.3f | %.3f | %.2f | %.1f s + %.1f s | %.1f s | %s |\n",
		sys, mode, ph.Pods, done, ratio, lat, ph.CloudWritesPerPod, ph.CloudDescribesPerPod, ph.APIWritesPerPod, ph.APIServerCPU, ph.EtcdCPU, ph.SystemCPU, rss)
}

// orBlank renders bytes, or nothing for a figure the run did not read.
func orBlank(b int64) string {
	if b == 0 {
		return ""
	}
	return MiB(b)
}

func intsText(m map[string]int) string {
	return callsText(m, func(string) bool { return true })
}

// cell keeps a table cell on one line.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func hasByRequest(s *SystemResult) bool {
	for _, run := range s.Runs {
		if run.Bind != nil && len(run.Bind.APIServerCPUByRequest) > 0 {
			return true
		}
	}
	return false
}
