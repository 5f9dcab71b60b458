package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// OtherResources is what a system that manages more than Pod addresses
// implements, so that its memory is measured with n other managed
// resources beside the Pods: it creates them in r.Namespace over
// lbIDs (pre-created load balancers that are not in the pool).
type OtherResources interface {
	CreateOthers(ctx context.Context, env *Env, r Run, lbIDs []string) error
}

// ManagedCounter is what a system that keeps an object per Pod (this
// provider's PodAddress) implements, so that the memory run says how many
// it held when its memory was read.
type ManagedCounter interface {
	Managed(ctx context.Context, env *Env, r Run) (int, error)
}

// RunSystem runs every mode of sys: a fresh cloud and namespace, the
// system's process, the Pods bound then deleted. After the first mode's
// bind it holds steady for steady (if positive) and reads the memory.
func (h *Harness) RunSystem(ctx context.Context, sys System, steady time.Duration) *SystemResult {
	res := &SystemResult{Name: sys.Name()}
	for i, m := range sys.Modes() {
		rr := &RunResult{Mode: m.Name, Policy: m.Policy, Flags: m.Flags, Unavailable: m.Unavailable}
		res.Runs = append(res.Runs, rr)
		if m.Unavailable != "" {
			h.Logf("%s %s: %s", sys.Name(), m.Name, m.Unavailable)
			continue
		}
		var st *Steady
		var mem *Memory
		err := h.runMode(ctx, sys, m, rr, func(r Run, emu *emulator.Emulator, inst Instance) error {
			if i != 0 {
				return nil
			}
			rss, heap := h.memory(ctx, inst)
			mem = &Memory{Pods: h.Pods, PodAddresses: h.Pods, Bound: rr.Bind.Done, RSS: rss, Heap: heap}
			mem.PeakRSS, _ = PeakRSSBytes(inst.PID())
			if mc, ok := sys.(ManagedCounter); ok {
				if n, err := mc.Managed(ctx, h.Env, r); err == nil {
					mem.PodAddresses = n
				}
			}
			h.Logf("  memory with %d Pods published: RSS %s, Go heap %s", rr.Bind.Done, MiB(rss), MiB(heap))
			if steady <= 0 {
				return nil
			}
			h.Logf("  steady state: nothing changes for %s", steady)
			var err error
			if st, err = h.steady(ctx, m.Name, steady, emu, inst); err != nil {
				return err
			}
			// Nothing changed over the window: the provider is at rest.
			mem.RestRSS, mem.RestHeap = h.memory(ctx, inst)
			mem.RestNextGC = h.nextGC(ctx, inst)
			mem.RestSeconds = st.Seconds
			h.Logf("  memory at rest after the window: RSS %s, Go heap %s", MiB(mem.RestRSS), MiB(mem.RestHeap))
			h.Logf("  over %.0f s: %d cloud writes (%.0f/h), %.0f API writes (%.0f/h) %v, reconciles %v (%.0f/h), %.2f CPU s",
				st.Seconds, st.CloudWrites, st.CloudWritesPerHour, st.APIWrites, st.APIWritesPerHour, st.APIRequests, st.Reconciles, st.ReconcilesPerHour, st.SystemCPU)
			return nil
		})
		if err != nil {
			rr.Error = err.Error()
			h.Logf("%s %s: %v", sys.Name(), m.Name, err)
		}
		if st != nil {
			res.Steady = st
		}
		if mem != nil {
			res.Memory = append(res.Memory, *mem)
		}
	}
	return res
}

// runMode is one mode from a fresh cloud to its cleanup; between bind and
// delete it calls hold.
func (h *Harness) runMode(ctx context.Context, sys System, m Mode, rr *RunResult, hold func(Run, *emulator.Emulator, Instance) error) error {
	lbs := max(h.LoadBalancers, (h.Pods+h.PortsPerLB-1)/h.PortsPerLB)
	emu, cloud, err := NewCloud(ctx, lbs, startPort, startPort+h.PortsPerLB-1)
	if err != nil {
		return err
	}
	defer func() { _ = emu.Close() }()
	ns, err := h.namespace(ctx, "bench-"+strings.ToLower(m.Name))
	if err != nil {
		return err
	}
	r := Run{Mode: m, Namespace: ns, Cloud: cloud}
	inst, err := sys.Start(ctx, h.Env, r)
	if err != nil {
		return err
	}
	defer func() {
		inst.Stop(30 * time.Second)
		if err := sys.Cleanup(ctx, h.Env, r); err != nil {
			h.Logf("  cleanup of %s: %v", ns, err)
		}
	}()
	h.Logf("%s %s: %d Pods on %d load balancers (namespace %s, log %s)", sys.Name(), m.Name, h.Pods, lbs, ns, inst.Log())
	prep := time.Now()
	if err := sys.Prepare(ctx, h.Env, r); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	h.Logf("  pool ready in %s", time.Since(prep).Round(time.Millisecond))
	if rr.Bind, err = h.bind(ctx, sys, r, emu, inst); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if h.base != nil && h.base.Seconds > 0 {
		rr.Bind.RatioToBaseline = Round(rr.Bind.Seconds / h.base.Seconds)
	}
	h.Logf("  %s", describe("bind", rr.Bind))
	if err := hold(r, emu, inst); err != nil {
		return err
	}
	if rr.Delete, err = h.remove(ctx, r, emu, inst); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	h.Logf("  %s", describe("delete", rr.Delete))
	return nil
}

// Memory binds pods Pods with others other managed resources beside
// them, in the first mode of sys, and reads the system's memory once all
// are published (or the timeout passed), then again at rest (see rest).
// The run is left in place: it is the last of a bench run.
func (h *Harness) Memory(ctx context.Context, sys System, pods, others int, timeout time.Duration) (*Memory, error) {
	m := sys.Modes()[0]
	m.Flags = append(slices.Clone(m.Flags), h.MemoryFlags...)
	poolLBs := (pods + h.PortsPerLB - 1) / h.PortsPerLB
	o, hasOthers := sys.(OtherResources)
	if !hasOthers {
		others = 0
	}
	emu, cloud, err := NewCloud(ctx, poolLBs+others, startPort, startPort+h.PortsPerLB-1)
	if err != nil {
		return nil, err
	}
	defer func() { _ = emu.Close() }()
	otherIDs := cloud.LoadBalancerIDs[poolLBs:]
	cloud.LoadBalancerIDs = cloud.LoadBalancerIDs[:poolLBs]
	ns, err := h.namespace(ctx, "bench-memory")
	if err != nil {
		return nil, err
	}
	r := Run{Mode: m, Namespace: ns, Cloud: cloud}
	inst, err := sys.Start(ctx, h.Env, r)
	if err != nil {
		return nil, err
	}
	defer inst.Stop(30 * time.Second)
	h.Logf("%s memory: %d Pods on %d load balancers and %d other managed resources (namespace %s, log %s)", sys.Name(), pods, poolLBs, others, ns, inst.Log())
	prep := time.Now()
	if err := sys.Prepare(ctx, h.Env, r); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	h.Logf("  pool ready in %s", time.Since(prep).Round(time.Millisecond))
	if hasOthers && others > 0 {
		if err := o.CreateOthers(ctx, h.Env, r, otherIDs); err != nil {
			return nil, err
		}
		h.Logf("  %d other managed resources created", others)
	}
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	t, err := h.track(tctx, ns, sys.Published)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if _, err := h.createPods(ctx, sys, r, pods); err != nil {
		return nil, err
	}
	h.Logf("  %d Pods created and given IPs in %s; waiting at most %s for them to be published", pods, time.Since(start).Round(time.Millisecond), timeout)
	t.until(ctx, timeout, func() bool { p, _ := t.counts(); return p >= pods })
	bound, _ := t.counts()
	mem := &Memory{Pods: pods, PodAddresses: pods, Bound: bound, Others: others, Seconds: Round(time.Since(start).Seconds())}
	mem.RSS, mem.Heap = h.memory(ctx, inst)
	mem.PeakRSS, _ = PeakRSSBytes(inst.PID())
	h.Logf("  right after the burst: RSS %s (peak %s), Go heap %s; waiting at most %s for rest", MiB(mem.RSS), MiB(mem.PeakRSS), MiB(mem.Heap), restTimeout)
	mem.RestSeconds = h.rest(ctx, inst, restTimeout)
	mem.RestRSS, mem.RestHeap = h.memory(ctx, inst)
	mem.RestNextGC = h.nextGC(ctx, inst)
	h.Logf("  at rest after %.0f s: RSS %s, Go heap %s", mem.RestSeconds, MiB(mem.RestRSS), MiB(mem.RestHeap))
	if h.HeapProfileURL != "" {
		h.logRuntimeMemory(ctx, inst)
		if err := fetchTo(ctx, h.HeapProfileURL, h.HeapProfile); err != nil {
			h.Logf("  heap profile: %v", err)
		} else {
			h.Logf("  heap profile in %s", h.HeapProfile)
		}
	}
	if mc, ok := sys.(ManagedCounter); ok {
		if mem.PodAddresses, err = mc.Managed(ctx, h.Env, r); err != nil {
			return nil, err
		}
	}
	h.Own() // the creates were the harness's
	return mem, nil
}

// restTimeout bounds the wait for a system to come to rest after a burst.
const restTimeout = time.Minute

// restPoll is how often the wait for rest reads the system's RSS and work
// queues; restSamples readings in a row must show the RSS not falling.
const (
	restPoll    = 2 * time.Second
	restSamples = 5
)

// rest waits until inst is at rest, or timeout passed, and returns how
// long it waited: its work queues are empty (workqueue_depth, for a
// system with metrics) and its RSS fell by less than 1 MiB over the last
// restSamples readings. Right after a burst the heap still holds its
// garbage and the queues the last reconciles; a user's provider spends
// its life at rest.
func (h *Harness) rest(ctx context.Context, inst Instance, timeout time.Duration) float64 {
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(restPoll)
	defer tick.Stop()
	var rss []int64
	for {
		r, err := RSSBytes(inst.PID())
		if err != nil {
			break
		}
		rss = append(rss, r)
		idle := true
		if u := inst.MetricsURL(); u != "" {
			if sc, err := ScrapeURL(ctx, u); err == nil {
				idle = sc.Sum("workqueue_depth", nil) == 0
			}
		}
		if n := len(rss); idle && n >= restSamples && rss[n-restSamples]-rss[n-1] < 1<<20 {
			break
		}
		select {
		case <-ctx.Done():
			return Round(time.Since(start).Seconds())
		case <-deadline.C:
			return Round(time.Since(start).Seconds())
		case <-tick.C:
		}
	}
	return Round(time.Since(start).Seconds())
}

// logRuntimeMemory prints, beside a heap profile, where the process's
// memory is: its peak RSS and the Go runtime's own figures.
func (h *Harness) logRuntimeMemory(ctx context.Context, inst Instance) {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", inst.PID()))
	var peak string
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			peak = strings.TrimSpace(rest)
		}
	}
	sc, err := ScrapeURL(ctx, inst.MetricsURL())
	if err != nil {
		h.Logf("  peak RSS %s; metrics: %v", peak, err)
		return
	}
	var b strings.Builder
	for _, m := range []string{"go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
		"go_memstats_heap_released_bytes", "go_memstats_next_gc_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes"} {
		fmt.Fprintf(&b, " %s %s", strings.TrimPrefix(m, "go_memstats_"), MiB(int64(sc.Sum(m, nil))))
	}
	h.Logf("  peak RSS %s;%s", peak, b.String())
}

// Own drops the harness's request counts gathered so far.
func (h *Harness) Own() { h.own.take() }

// describe renders a phase on one line.
func describe(what string, ph *Phase) string {
	s := fmt.Sprintf("%s: %d/%d Pods in %.1f s (workload %.1f s)", what, ph.Done, ph.Pods, ph.Seconds, ph.WorkloadSeconds)
	if ph.P99 > 0 {
		s += fmt.Sprintf(", IP → published p50 %.2f s p99 %.2f s", ph.P50, ph.P99)
	}
	if ph.RatioToBaseline > 0 {
		s += fmt.Sprintf(", %.2f× baseline", ph.RatioToBaseline)
	}
	s += fmt.Sprintf("; cloud %d writes (%.3f/Pod), %.3f describes/Pod %v refused %v; API %.2f writes/Pod %v; events %v; CPU apiserver %.1f s etcd %.1f s system %.1f s",
		ph.CloudWrites, ph.CloudWritesPerPod, ph.CloudDescribesPerPod, ph.CloudCalls, ph.CloudErrors, ph.APIWritesPerPod, ph.APIRequestsPerPod, ph.Events, ph.APIServerCPU, ph.EtcdCPU, ph.SystemCPU)
	if ph.SystemRSS > 0 {
		s += fmt.Sprintf(", RSS %s heap %s", MiB(ph.SystemRSS), MiB(ph.SystemHeap))
	}
	return s
}
