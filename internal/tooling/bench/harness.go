package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Harness runs the workload for every system on one control plane.
type Harness struct {
	Env   *Env
	Watch client.WithWatch
	// Pods per run, created by Concurrency workers.
	Pods, Concurrency int
	// LoadBalancers of each run's pool and the ports of each.
	LoadBalancers, PortsPerLB int
	// Timeout bounds each wait for a phase to end.
	Timeout time.Duration
	Logf    func(format string, args ...any)
	// MemoryFlags are added to the memory run's process flags, and
	// HeapProfileURL, if set, is fetched into HeapProfile once its memory
	// is read: a profile of the system at that scale.
	MemoryFlags                 []string
	HeapProfileURL, HeapProfile string
	// APIServerProfileTime, if set, is the length of a CPU profile of the
	// API server taken from the start of each bind phase (and of the
	// baseline's creates), kept in APIServerProfileDir.
	APIServerProfileDir  string
	APIServerProfileTime time.Duration

	own                   ownRequests
	base                  *Phase // the baseline, once measured
	apiserverPID, etcdPID int
}

// startPort is the first port of every pool.
const startPort = 40000

// Init finds the control plane's processes.
func (h *Harness) Init() error {
	var err error
	h.apiserverPID, h.etcdPID, err = testenv.ControlPlanePIDs()
	return err
}

// A snapshot is every counter at one moment.
type snapshot struct {
	at             time.Time
	api            map[string]float64
	own            map[string]float64
	apiCPU, etcCPU float64
	sysCPU, ownCPU float64
	calls, errs    map[string]int
	sysMetrics     Scrape
}

func (h *Harness) snap(ctx context.Context, emu *emulator.Emulator, inst Instance) (snapshot, error) {
	s := snapshot{at: time.Now(), own: h.own.take()}
	sc, err := ScrapeAPIServer(ctx, h.Env.Config)
	if err != nil {
		return s, err
	}
	s.api = APIRequests(sc)
	if s.apiCPU, err = CPUSeconds(h.apiserverPID); err != nil {
		return s, err
	}
	if s.etcCPU, err = CPUSeconds(h.etcdPID); err != nil {
		return s, err
	}
	if s.ownCPU, err = CPUSeconds(os.Getpid()); err != nil {
		return s, err
	}
	if emu != nil {
		s.calls, s.errs = callTotals(emu), callErrors(emu)
	}
	if inst != nil {
		if s.sysCPU, err = CPUSeconds(inst.PID()); err != nil {
			return s, err
		}
		if u := inst.MetricsURL(); u != "" {
			if s.sysMetrics, err = ScrapeURL(ctx, u); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// controlPlaneOwn are requests the control plane makes of itself with no
// system running: kube-apiserver renews its identity lease and checks its
// own endpoints every 10 s, and admission looks up LimitRanges. They are
// reported apart. (A system that elects a leader renews a lease too: this
// provider does not by default.)
func controlPlaneOwn(key string) bool {
	switch key {
	case "GET leases", "PUT leases", "GET endpoints", "GET endpointslices", "LIST limitranges":
		return true
	}
	return false
}

// apiDelta is the system's API requests between two snapshots: the API
// server's counts minus the harness's own requests (those made after
// before was taken, handed over in after.own), minus the control plane's
// own (returned apart) and minus the non-resource requests (the harness's
// /metrics scrapes among them). WATCHes are left out: the API server
// counts a watch when it ends, not in the phase that opened it.
func apiDelta(before, after snapshot) (system, controlPlane map[string]float64) {
	d := Delta(before.api, after.api)
	for k, v := range after.own {
		d[k] -= v
	}
	controlPlane = map[string]float64{}
	for k, v := range d {
		switch {
		case controlPlaneOwn(k):
			controlPlane[k] = v
			delete(d, k)
		case strings.HasSuffix(k, " ") || strings.HasPrefix(k, "WATCH ") || v == 0:
			delete(d, k)
		}
	}
	return d, controlPlane
}

func callDelta(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for a, n := range after {
		if d := n - before[a]; d != 0 {
			out[a] = d
		}
	}
	return out
}

// sampler counts the cloud's calls and writes per second while it runs.
type sampler struct {
	stop          chan struct{}
	done          chan struct{}
	mu            sync.Mutex
	calls, writes []int
	lastC, lastW  int
}

func startSampler(emu *emulator.Emulator) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	totals := func() (c, w int) {
		for a, n := range callTotals(emu) {
			c += n
			if isWrite(a) {
				w += n
			}
		}
		return c, w
	}
	s.lastC, s.lastW = totals()
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			c, w := totals()
			s.mu.Lock()
			s.calls, s.writes = append(s.calls, c-s.lastC), append(s.writes, w-s.lastW)
			s.lastC, s.lastW = c, w
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *sampler) end() (calls, writes []int) {
	close(s.stop)
	<-s.done
	return s.calls, s.writes
}

// fill completes a phase's cost figures from two snapshots.
func (h *Harness) fill(ph *Phase, before, after snapshot) {
	n := float64(max(ph.Pods, 1))
	ph.APIRequests, ph.ControlPlaneRequests = apiDelta(before, after)
	ph.APIRequestsPerPod = map[string]float64{}
	for k, v := range ph.APIRequests {
		ph.APIRequestsPerPod[k] = Round(v / n)
	}
	ph.APIWritesPerPod = Round(Writes(ph.APIRequests) / n)
	ph.APIServerCPU = Round(after.apiCPU - before.apiCPU)
	ph.EtcdCPU = Round(after.etcCPU - before.etcCPU)
	ph.HarnessCPU = Round(after.ownCPU - before.ownCPU)
	if after.calls != nil {
		ph.CloudCalls = callDelta(before.calls, after.calls)
		ph.CloudErrors = callDelta(before.errs, after.errs)
		describes := 0
		for a, c := range ph.CloudCalls {
			if isWrite(a) {
				ph.CloudWrites += c
			} else if strings.HasPrefix(a, "Describe") {
				describes += c
			}
		}
		ph.CloudWritesPerPod = Round(float64(ph.CloudWrites) / n)
		ph.CloudDescribesPerPod = Round(float64(describes) / n)
	}
	if after.sysCPU > 0 {
		ph.SystemCPU = Round(after.sysCPU - before.sysCPU)
	}
	ph.SystemHeap = int64(after.sysMetrics.Sum("go_memstats_heap_alloc_bytes", nil))
}

// events counts the namespace's Events by type.
func (h *Harness) events(ctx context.Context, ns string) map[string]int {
	l := &corev1.EventList{}
	if err := h.Env.Kube.List(ctx, l, client.InNamespace(ns)); err != nil {
		return nil
	}
	out := map[string]int{}
	for _, e := range l.Items {
		out[e.Type] += int(max(e.Count, 1))
	}
	return out
}

// namespace creates a new namespace for one run.
func (h *Harness) namespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := h.Env.Kube.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// Baseline creates the workload's Pods with no system running and times
// it; the Pods are deleted afterwards (unmeasured).
func (h *Harness) Baseline(ctx context.Context, sys System) (*Phase, error) {
	ns, err := h.namespace(ctx, "bench-baseline")
	if err != nil {
		return nil, err
	}
	r := Run{Namespace: ns}
	before, err := h.snap(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	prof := h.profileAPIServer(ctx, "baseline")
	start := time.Now()
	ipAt, err := h.createPods(ctx, sys, r, h.Pods)
	if err != nil {
		prof()
		return nil, err
	}
	ph := &Phase{Pods: h.Pods, Done: len(ipAt)}
	ph.Seconds = Round(time.Since(start).Seconds())
	ph.WorkloadSeconds = ph.Seconds
	after, err := h.snap(ctx, nil, nil)
	ph.APIServerCPUByRequest = prof()
	if err != nil {
		return nil, err
	}
	// Here the "system" is the API server alone: keep only what it did
	// on its own (its leases), the harness's requests are taken off.
	h.fill(ph, before, after)
	if err := h.deletePods(ctx, ns, h.Pods); err != nil {
		return nil, err
	}
	h.own.take()
	h.base = ph
	return ph, nil
}

// bind creates the Pods and waits until all are published.
func (h *Harness) bind(ctx context.Context, sys System, r Run, emu *emulator.Emulator, inst Instance) (*Phase, error) {
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	t, err := h.track(tctx, r.Namespace, sys.Published)
	if err != nil {
		return nil, err
	}
	before, err := h.snap(ctx, emu, inst)
	if err != nil {
		return nil, err
	}
	smp := startSampler(emu)
	prof := h.profileAPIServer(ctx, sys.Name()+"-"+r.Name)
	start := time.Now()
	ipAt, err := h.createPods(ctx, sys, r, h.Pods)
	if err != nil {
		prof()
		smp.end()
		return nil, err
	}
	ph := &Phase{Pods: h.Pods, WorkloadSeconds: Round(time.Since(start).Seconds())}
	t.until(ctx, h.Timeout, func() bool { p, _ := t.counts(); return p >= h.Pods })
	t.mu.Lock()
	published := maps.Clone(t.published)
	t.mu.Unlock()
	last := start
	var lat []float64
	for name, at := range published {
		last = later(last, at)
		if ip, ok := ipAt[name]; ok {
			lat = append(lat, max(at.Sub(ip).Seconds(), 0))
		}
	}
	ph.Done = len(published)
	ph.Seconds = Round(last.Sub(start).Seconds())
	if ph.Done < h.Pods {
		ph.Seconds = Round(time.Since(start).Seconds()) // the timeout, as a lower bound
	}
	ph.CallsPerSecond, ph.WritesPerSecond = smp.end()
	after, err := h.snap(ctx, emu, inst)
	if err != nil {
		return nil, err
	}
	h.fill(ph, before, after)
	sort.Float64s(lat)
	ph.P50, ph.P99 = Round(Percentile(lat, 50)), Round(Percentile(lat, 99))
	for _, l := range lat {
		ph.Latencies = append(ph.Latencies, int(l*1000))
	}
	ph.Events = h.events(ctx, r.Namespace)
	h.own.take() // the Events list
	ph.APIServerCPUByRequest = prof()
	if inst != nil {
		if rss, err := RSSBytes(inst.PID()); err == nil {
			ph.SystemRSS = rss
		}
	}
	return ph, nil
}

// remove deletes the Pods and waits until all are gone and the cloud holds
// no target.
func (h *Harness) remove(ctx context.Context, r Run, emu *emulator.Emulator, inst Instance) (*Phase, error) {
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	t, err := h.track(tctx, r.Namespace, nil)
	if err != nil {
		return nil, err
	}
	before, err := h.snap(ctx, emu, inst)
	if err != nil {
		return nil, err
	}
	smp := startSampler(emu)
	start := time.Now()
	if err := h.deletePods(ctx, r.Namespace, h.Pods); err != nil {
		smp.end()
		return nil, err
	}
	ph := &Phase{Pods: h.Pods, WorkloadSeconds: Round(time.Since(start).Seconds())}
	t.until(ctx, h.Timeout, func() bool { _, g := t.counts(); return g >= h.Pods && targets(emu) == 0 })
	_, ph.Done = t.counts()
	ph.Seconds = Round(time.Since(start).Seconds())
	ph.CallsPerSecond, ph.WritesPerSecond = smp.end()
	after, err := h.snap(ctx, emu, inst)
	if err != nil {
		return nil, err
	}
	h.fill(ph, before, after)
	if left := targets(emu); left > 0 {
		h.Logf("  %d targets still in the cloud after %s", left, h.Timeout)
	}
	return ph, nil
}

// steady waits window with nothing changing and counts what the system
// did meanwhile.
func (h *Harness) steady(ctx context.Context, mode string, window time.Duration, emu *emulator.Emulator, inst Instance) (*Steady, error) {
	before, err := h.snap(ctx, emu, inst)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(window):
	}
	after, err := h.snap(ctx, emu, inst)
	if err != nil {
		return nil, err
	}
	st := &Steady{Mode: mode, Seconds: Round(after.at.Sub(before.at).Seconds())}
	st.CloudCalls = callDelta(before.calls, after.calls)
	for a, n := range st.CloudCalls {
		if isWrite(a) {
			st.CloudWrites += n
		}
	}
	st.APIRequests, st.ControlPlaneRequests = apiDelta(before, after)
	st.APIWrites = Writes(st.APIRequests)
	st.Reconciles = Delta(before.sysMetrics.SumBy("controller_runtime_reconcile_total", "controller"), after.sysMetrics.SumBy("controller_runtime_reconcile_total", "controller"))
	rec := 0.0
	for _, v := range st.Reconciles {
		rec += v
	}
	perHour := 3600 / max(st.Seconds, 1)
	st.CloudWritesPerHour = Round(float64(st.CloudWrites) * perHour)
	st.APIWritesPerHour = Round(st.APIWrites * perHour)
	st.ReconcilesPerHour = Round(rec * perHour)
	st.SystemCPU = Round(after.sysCPU - before.sysCPU)
	return st, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// memory reads a system's RSS (from /proc) and Go heap (from its metrics).
func (h *Harness) memory(ctx context.Context, inst Instance) (rss, heap int64) {
	rss, _ = RSSBytes(inst.PID())
	if u := inst.MetricsURL(); u != "" {
		if sc, err := ScrapeURL(ctx, u); err == nil {
			heap = int64(sc.Sum("go_memstats_heap_alloc_bytes", nil))
		}
	}
	return rss, heap
}

// nextGC is the system's Go heap target (0 if it does not say).
func (h *Harness) nextGC(ctx context.Context, inst Instance) int64 {
	if u := inst.MetricsURL(); u != "" {
		if sc, err := ScrapeURL(ctx, u); err == nil {
			return int64(sc.Sum("go_memstats_next_gc_bytes", nil))
		}
	}
	return 0
}

// MiB renders bytes for people.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
