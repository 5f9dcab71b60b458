package bench

import (
	"encoding/json"
	"os"
)

// Results is everything one `go run ./cmd/bench` measured; it is written
// to bench/results.json and rendered into docs/performance.md.
type Results struct {
	Machine  Machine  `json:"machine"`
	Settings Settings `json:"settings"`
	// Baseline is the workload with no system running.
	Baseline *Phase          `json:"baseline,omitempty"`
	Systems  []*SystemResult `json:"systems"`
	// Seconds is how long the whole run took.
	Seconds float64 `json:"seconds"`
}

// Settings are the run's parameters.
type Settings struct {
	// Command is how the run was started (go run ./cmd/bench and its
	// arguments).
	Command           string  `json:"command,omitempty"`
	Pods              int     `json:"pods"`
	LoadBalancers     int     `json:"loadBalancers"`
	PortsPerLB        int     `json:"portsPerLoadBalancer"`
	Concurrency       int     `json:"concurrency"`
	Emulator          string  `json:"emulator"`
	SteadySeconds     float64 `json:"steadySeconds"`
	MemoryPods        int     `json:"memoryPods,omitempty"`
	MemoryOthers      int     `json:"memoryOtherManagedResources,omitempty"`
	ProviderArguments string  `json:"providerArguments"`
	// APIServerProfileSeconds is the length of the API server's CPU
	// profile from each bind phase's start; 0 when none was taken.
	APIServerProfileSeconds float64 `json:"apiServerProfileSeconds,omitempty"`
}

// SystemResult holds one system's runs.
type SystemResult struct {
	Name   string       `json:"name"`
	Runs   []*RunResult `json:"runs"`
	Steady *Steady      `json:"steady,omitempty"`
	Memory []Memory     `json:"memory,omitempty"`
}

// RunResult is one mode: the Pods bound, then deleted.
type RunResult struct {
	Mode        string   `json:"mode"`
	Policy      string   `json:"policy,omitempty"`
	Flags       []string `json:"flags,omitempty"`
	Unavailable string   `json:"unavailable,omitempty"`
	Error       string   `json:"error,omitempty"`
	Bind        *Phase   `json:"bind,omitempty"`
	Delete      *Phase   `json:"delete,omitempty"`
}

// Phase is one burst of the workload (creating the Pods and waiting until
// all are published, or deleting them and waiting until the cloud holds no
// target) and what it cost.
type Phase struct {
	Pods int `json:"pods"`
	// Seconds is from the first request of the workload until the last
	// Pod was published (bind), created and given its IP (baseline), or
	// gone with its cloud target (delete).
	Seconds float64 `json:"seconds"`
	// WorkloadSeconds is how long creating (or deleting) the Pods and
	// setting their IPs took the harness, the API server's share.
	WorkloadSeconds float64 `json:"workloadSeconds"`
	// Done is how many Pods reached the phase's end within the timeout.
	Done int `json:"done"`
	// RatioToBaseline is Seconds over the baseline's.
	RatioToBaseline float64 `json:"ratioToBaseline,omitempty"`
	// P50 and P99 of the seconds from the Pod having its IP to its
	// address being published on it.
	P50 float64 `json:"p50Seconds,omitempty"`
	P99 float64 `json:"p99Seconds,omitempty"`
	// Latencies are every Pod's, in milliseconds, for the CDF plot.
	Latencies []int `json:"latenciesMs,omitempty"`

	// CloudCalls are the emulator's answered calls by action.
	CloudCalls map[string]int `json:"cloudCalls,omitempty"`
	// CloudErrors are the refused calls among them by "Action Code".
	CloudErrors       map[string]int `json:"cloudErrors,omitempty"`
	CloudWrites       int            `json:"cloudWrites"`
	CloudWritesPerPod float64        `json:"cloudWritesPerPod"`
	// CloudDescribesPerPod counts the Describe* calls.
	CloudDescribesPerPod float64 `json:"cloudDescribesPerPod"`
	// CallsPerSecond are the cloud calls answered in each second of the
	// phase, and WritesPerSecond the write calls.
	CallsPerSecond  []int `json:"callsPerSecond,omitempty"`
	WritesPerSecond []int `json:"writesPerSecond,omitempty"`

	// APIRequests are the system's Kubernetes API requests by "VERB
	// resource", from apiserver_request_total with the harness's own
	// requests taken off; APIWritesPerPod the writes among them per Pod.
	APIRequests       map[string]float64 `json:"apiRequests,omitempty"`
	APIRequestsPerPod map[string]float64 `json:"apiRequestsPerPod,omitempty"`
	APIWritesPerPod   float64            `json:"apiWritesPerPod"`
	// ControlPlaneRequests are the control plane's requests of itself
	// meanwhile, left out of APIRequests.
	ControlPlaneRequests map[string]float64 `json:"controlPlaneRequests,omitempty"`
	// Events are the Events the system created per type (Normal,
	// Warning), read from the namespace after the phase.
	Events map[string]int `json:"events,omitempty"`

	// CPU seconds over the phase, and the system's memory at its end.
	APIServerCPU float64 `json:"apiServerCpuSeconds"`
	EtcdCPU      float64 `json:"etcdCpuSeconds"`
	SystemCPU    float64 `json:"systemCpuSeconds,omitempty"`
	// HarnessCPU is the bench process's: the harness playing the
	// workload and the emulator, which runs inside it.
	HarnessCPU float64 `json:"harnessCpuSeconds,omitempty"`
	// APIServerCPUByRequest is the API server's CPU seconds by request
	// kind over the first seconds of the phase (Settings.APIServerProfile
	// Seconds), from its CPU profile.
	APIServerCPUByRequest map[string]float64 `json:"apiServerCpuByRequest,omitempty"`
	SystemRSS             int64              `json:"systemRssBytes,omitempty"`
	SystemHeap            int64              `json:"systemHeapBytes,omitempty"`
}

// Steady is a window with nothing changing after the Pods were published.
type Steady struct {
	Mode    string  `json:"mode"`
	Seconds float64 `json:"seconds"`
	// CloudCalls by action, CloudWrites among them.
	CloudCalls  map[string]int     `json:"cloudCalls,omitempty"`
	CloudWrites int                `json:"cloudWrites"`
	APIRequests map[string]float64 `json:"apiRequests,omitempty"`
	APIWrites   float64            `json:"apiWrites"`
	// ControlPlaneRequests are the control plane's own, left out.
	ControlPlaneRequests map[string]float64 `json:"controlPlaneRequests,omitempty"`
	// Reconciles are controller_runtime_reconcile_total's increase by
	// controller: reconciles of objects that did not change.
	Reconciles map[string]float64 `json:"reconciles,omitempty"`
	// PerHour extrapolates the window's counts to an hour.
	CloudWritesPerHour float64 `json:"cloudWritesPerHour"`
	APIWritesPerHour   float64 `json:"apiWritesPerHour"`
	ReconcilesPerHour  float64 `json:"reconcilesPerHour"`
	SystemCPU          float64 `json:"systemCpuSeconds"`
}

// Memory is the system's memory with a number of objects to manage.
type Memory struct {
	// Pods created; PodAddresses the system held (a system with no
	// object per Pod reports Pods).
	Pods         int `json:"pods"`
	PodAddresses int `json:"podAddresses"`
	Bound        int `json:"bound"`
	Others       int `json:"otherManagedResources"`
	// RSS and Heap are read right after the last Pod was published, with
	// the burst's garbage still in the heap; PeakRSS is the highest RSS
	// the process had until then (VmHWM).
	RSS     int64 `json:"rssBytes"`
	Heap    int64 `json:"heapBytes"`
	PeakRSS int64 `json:"peakRssBytes,omitempty"`
	// RestRSS and RestHeap are read at rest: once the provider's work
	// queues are empty and its RSS stopped falling (RestSeconds after
	// RSS was read). Results written before they existed lack them.
	RestRSS     int64   `json:"restRssBytes,omitempty"`
	RestHeap    int64   `json:"restHeapBytes,omitempty"`
	RestSeconds float64 `json:"restSeconds,omitempty"`
	// RestNextGC is the Go collector's heap target at rest
	// (go_memstats_next_gc_bytes): by default twice the data live at the
	// last collection.
	RestNextGC int64 `json:"restNextGcBytes,omitempty"`
	// Seconds is how long the system took to get there (from the first Pod
	// created).
	Seconds float64 `json:"seconds,omitempty"`
}

// GoalRSS is the RSS the memory goal is judged on: at rest, or after the
// burst in results that have no reading at rest.
func (m Memory) GoalRSS() int64 {
	if m.RestRSS > 0 {
		return m.RestRSS
	}
	return m.RSS
}

// Write stores r as indented JSON.
func (r *Results) Write(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o600)
}

// ReadResults reads a results file back, e.g. to render the docs again.
func ReadResults(path string) (*Results, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: a path the user gave.
	if err != nil {
		return nil, err
	}
	r := &Results{}
	return r, json.Unmarshal(raw, r)
}
