// Command bench measures the systems that give Pods public addresses —
// this provider, run as its own process with its default flags — on one
// workload against the local control plane and the emulator's realistic
// profile, and writes bench/results.json and docs/performance.md (with
// its plots). `make bench` runs it; docs/performance.md says what it
// measures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/bench"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// systems are the products the harness can run, by -systems name.
func systems() map[string]func(o options) bench.System {
	return map[string]func(o options) bench.System{
		"provider": func(o options) bench.System { return &bench.Provider{Extra: o.extra} },
		// The peer is built from PEER_SRC (or the workspace's mirror) at
		// bench time; without it its modes are reported as not measured.
		"peer": func(o options) bench.System {
			p := &bench.Peer{}
			if o.peerSettings != "" {
				p.Settings = strings.Split(o.peerSettings, ",")
			}
			return p
		},
		// The provider on the peer's own Pods (tke-extend's annotations),
		// compared with the peer on the same workload.
		"tke-pods": func(options) bench.System { return &bench.TKEPods{} },
	}
}

type options struct {
	pods, concurrency, lbs, portsPerLB int
	steady, timeout                    time.Duration
	memoryPods, memoryOthers           int
	memoryTimeout                      time.Duration
	memoryProfile                      string
	apiserverProfile                   string
	apiserverProfileTime               time.Duration
	only                               string
	systems                            string
	peerSettings                       string
	out, docs, plots                   string
	render                             string
	note                               string
	extra                              modes
}

// modes is the repeatable -mode flag: name=flags, run with LeastUsed.
type modes []bench.Mode

func (m *modes) String() string { return fmt.Sprint(*m) }

// Set takes name[:Policy]=flags: the pool's allocation policy is
// LeastUsed unless named.
func (m *modes) Set(v string) error {
	name, flags, ok := strings.Cut(v, "=")
	name, policy, _ := strings.Cut(name, ":")
	if !ok || name == "" {
		return fmt.Errorf("want name[:Policy]=--flag=value ..., got %q", v)
	}
	switch policy {
	case "":
		policy = clbv1alpha1.PolicyLeastUsed
	case clbv1alpha1.PolicyLeastUsed, clbv1alpha1.PolicyInOrder:
	default:
		return fmt.Errorf("mode %s: policy %q: want %s or %s", name, policy, clbv1alpha1.PolicyLeastUsed, clbv1alpha1.PolicyInOrder)
	}
	*m = append(*m, bench.Mode{Name: name, Policy: policy, Flags: strings.Fields(flags)})
	return nil
}

func main() {
	var o options
	flag.IntVar(&o.pods, "pods", 1000, "Pods per run.")
	flag.IntVar(&o.concurrency, "concurrency", 16, "Workers creating and deleting Pods.")
	flag.IntVar(&o.lbs, "lbs", 20, "Pre-created load balancers of each run's pool (more if -pods needs them).")
	flag.IntVar(&o.portsPerLB, "ports-per-lb", 50, "Ports per load balancer (the listener quota is 50).")
	flag.DurationVar(&o.steady, "steady", 10*time.Minute, "Steady-state window after the first mode's Pods are published; 0 skips it.")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "Bound on each wait for a phase to end.")
	flag.IntVar(&o.memoryPods, "memory-pods", 0, "Pods of the memory run (e.g. 10000); 0 skips it.")
	flag.IntVar(&o.memoryOthers, "memory-others", 1000, "Other managed resources beside the memory run's Pods.")
	flag.DurationVar(&o.memoryTimeout, "memory-timeout", 8*time.Minute, "Bound on the wait for the memory run's Pods to be published.")
	flag.StringVar(&o.memoryProfile, "memory-profile", "", "Save the provider's heap profile at the end of the memory run in this file (the provider then also serves --pprof-bind-address on a free loopback port); empty skips it.")
	flag.DurationVar(&o.apiserverProfileTime, "apiserver-profile-time", 10*time.Second, "Length of the API server's CPU profile from the start of each bind phase and of the baseline, read into its CPU by request kind; 0 takes none.")
	flag.StringVar(&o.apiserverProfile, "apiserver-profile", "", "Keep the API server's CPU profiles in this directory (one file per system and mode; default: the run's scratch directory).")
	flag.StringVar(&o.only, "only", "", "Run only this part: memory (the memory run, no baseline, modes or steady window; pair it with -out '' -docs '').")
	flag.StringVar(&o.systems, "systems", "provider,peer,tke-pods", "Systems to run, comma-separated (known: "+strings.Join(bench.SortedKeys(systems()), ", ")+").")
	flag.StringVar(&o.peerSettings, "peer-settings", "", "The peer's settings to run, comma-separated (default defaults,best; others: workers-50, workers-200, no-rate-limit).")
	flag.StringVar(&o.out, "out", "bench/results.json", "Results file; empty skips it.")
	flag.StringVar(&o.docs, "docs", "docs/performance.md", "Markdown report; empty skips it (and the plots).")
	flag.StringVar(&o.plots, "plots", "docs/performance", "Directory of the PNG plots.")
	flag.StringVar(&o.render, "render", "", "Only render -docs and -plots from this results file.")
	flag.StringVar(&o.note, "note", "", "What else the machine was doing during the run, when it was not idle; kept in the results and said on the page. With -render it is written into that results file too.")
	flag.Var(&o.extra, "mode", "An extra provider mode, name[:Policy]=flags (e.g. 'rate100=--max-reconcile-rate=100', 'fast:InOrder=--target-batch-window=50ms'), run after the built-in ones (LeastUsed unless named); repeatable.")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	root := testenv.RepoRoot()
	if o.only != "" && (o.only != "memory" || o.memoryPods <= 0) {
		return fmt.Errorf("-only: only memory is known, and it needs -memory-pods; got %q", o.only)
	}
	if o.render != "" {
		res, err := bench.ReadResults(o.render)
		if err != nil {
			return err
		}
		if o.note != "" {
			res.Machine.Note = o.note
			if err := res.Write(o.render); err != nil {
				return err
			}
		}
		return report(o, root, res)
	}
	var syss []bench.System
	for _, name := range strings.Split(o.systems, ",") {
		mk, ok := systems()[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("unknown system %q", name)
		}
		syss = append(syss, mk(o))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Printf("[%6.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	machine := bench.ThisMachine()
	machine.Note = o.note
	res := &bench.Results{Machine: machine, Settings: bench.Settings{
		Command: commandLine(os.Args[1:]),
		Pods:    o.pods, LoadBalancers: max(o.lbs, (o.pods+o.portsPerLB-1)/o.portsPerLB), PortsPerLB: o.portsPerLB, Concurrency: o.concurrency,
		Emulator: bench.EmulatorProfile, SteadySeconds: o.steady.Seconds(), MemoryPods: o.memoryPods, MemoryOthers: o.memoryOthers,
		APIServerProfileSeconds: o.apiserverProfileTime.Seconds(),
		ProviderArguments:       "every flag at its default but --kubeconfig, --metrics-bind-address and --health-probe-bind-address (free loopback ports) and --metrics-secure=false (metrics over plain HTTP on loopback, which the harness scrapes without a token)",
	}}
	logf("machine: %s, %d cores, %s; %d Pods per run, steady window %s, memory run %d Pods", res.Machine.CPU, res.Machine.Cores, res.Machine.GoVersion, o.pods, o.steady, o.memoryPods)

	logf("starting the local control plane")
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	dir, err := os.MkdirTemp("", "bench-")
	if err != nil {
		return err
	}
	logf("logs and binaries in %s", dir)
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env.KubeConfig, 0o600); err != nil {
		return err
	}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	h := &bench.Harness{
		Env:   &bench.Env{Kube: env.Client, Config: env.Config, KubeConfig: kc, Dir: dir},
		Watch: wc, Pods: o.pods, Concurrency: o.concurrency, LoadBalancers: o.lbs, PortsPerLB: o.portsPerLB,
		Timeout: o.timeout, Logf: logf,
	}
	if err := h.Init(); err != nil {
		return err
	}
	h.APIServerProfileDir, h.APIServerProfileTime = dir, o.apiserverProfileTime
	if o.apiserverProfile != "" {
		h.APIServerProfileDir = abs(root, o.apiserverProfile)
		if err := os.MkdirAll(h.APIServerProfileDir, 0o750); err != nil {
			return err
		}
	}
	if o.memoryProfile != "" {
		addr, err := testenv.FreeAddr()
		if err != nil {
			return err
		}
		h.MemoryFlags = []string{"--pprof-bind-address=" + addr}
		h.HeapProfileURL, h.HeapProfile = "http://"+addr+"/debug/pprof/heap?gc=1", abs(root, o.memoryProfile)
	}
	for _, s := range syss {
		logf("building %s", s.Name())
		if err := s.Build(ctx, h.Env); err != nil {
			return err
		}
	}
	if o.only == "memory" {
		// The memory run is the first system's; it needs no baseline.
		res.Systems = append(res.Systems, &bench.SystemResult{Name: syss[0].Name()})
		syss = syss[:1]
	} else {
		logf("baseline: %d Pods created and given IPs with no system running", o.pods)
		if res.Baseline, err = h.Baseline(ctx, syss[0]); err != nil {
			return err
		}
		logf("  baseline: %.1f s; API server CPU %.1f s, etcd %.1f s", res.Baseline.Seconds, res.Baseline.APIServerCPU, res.Baseline.EtcdCPU)
	}
	for i, s := range syss {
		if o.only != "" {
			break
		}
		// The steady window and the memory run are the first system's
		// goals; the others are compared on bind and delete.
		st := o.steady
		if i > 0 {
			st = 0
		}
		res.Systems = append(res.Systems, h.RunSystem(ctx, s, st))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if o.memoryPods > 0 {
		for i, s := range syss[:1] {
			mem, err := h.Memory(ctx, s, o.memoryPods, o.memoryOthers, o.memoryTimeout)
			if err != nil {
				logf("%s memory run: %v", s.Name(), err)
				continue
			}
			logf("  %d of %d Pods published after %.0f s (%d PodAddresses) with %d other managed resources: at rest RSS %s, Go heap %s; right after the burst RSS %s (peak %s), Go heap %s",
				mem.Bound, mem.Pods, mem.Seconds, mem.PodAddresses, mem.Others, bench.MiB(mem.RestRSS), bench.MiB(mem.RestHeap),
				bench.MiB(mem.RSS), bench.MiB(mem.PeakRSS), bench.MiB(mem.Heap))
			res.Systems[i].Memory = append(res.Systems[i].Memory, *mem)
		}
	}
	res.Seconds = bench.Round(time.Since(began).Seconds())
	fmt.Println()
	fmt.Print(bench.Table(res))
	return report(o, root, res)
}

// report writes the results file, the Markdown report and the plots.
func report(o options, root string, res *bench.Results) error {
	if o.out != "" && o.render == "" {
		if err := os.MkdirAll(filepath.Dir(abs(root, o.out)), 0o750); err != nil {
			return err
		}
		if err := res.Write(abs(root, o.out)); err != nil {
			return err
		}
		fmt.Println("wrote", o.out)
	}
	if o.docs == "" {
		return nil
	}
	plots := abs(root, o.plots)
	if err := os.MkdirAll(plots, 0o750); err != nil {
		return err
	}
	names, err := bench.Plots(res, plots)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(abs(root, o.docs)), plots)
	if err != nil {
		return err
	}
	results := o.out
	if o.render != "" {
		results = o.render
	}
	resultsRel, err := filepath.Rel(filepath.Dir(abs(root, o.docs)), abs(root, results))
	if err != nil {
		return err
	}
	md := bench.Markdown(res, filepath.ToSlash(resultsRel), rel, names)
	if err := os.MkdirAll(filepath.Dir(abs(root, o.docs)), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(abs(root, o.docs), []byte(md), 0o600); err != nil {
		return err
	}
	fmt.Println("wrote", o.docs, "and", len(names), "plots in", o.plots)
	return nil
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// commandLine is how this run was started, for the report: the go run
// form, each argument quoted when the shell would need it.
func commandLine(args []string) string {
	parts := []string{"go run ./cmd/bench"}
	for _, a := range args {
		if strings.ContainsAny(a, " '\"$*?") || a == "" {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
