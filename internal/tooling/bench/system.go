// Package bench is the harness behind `make bench` (go run ./cmd/bench): it
// runs a system that gives each Pod a public address — this provider, or a
// peer — as its own process against the local control plane and the
// emulated cloud, with one workload for all, and measures it.
//
// A system plugs in through System; the harness owns the workload (the
// Pods, their IPs, their deletion), the cloud (a fresh emulator with
// pre-created load balancers per run) and every measurement, so that two
// systems are compared on exactly the same terms.
package bench

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Env is what a system runs against, shared by all its runs.
type Env struct {
	Kube   client.Client
	Config *rest.Config
	// KubeConfig is the path of an admin kubeconfig file.
	KubeConfig string
	// Dir is a scratch directory for binaries and logs.
	Dir string
}

// Cloud is the emulated cloud of one run: a fresh emulator whose load
// balancers exist before the system starts.
type Cloud struct {
	// Endpoint is the emulator's host:port (plain HTTP).
	Endpoint                    string
	SecretID, SecretKey, Region string
	// LoadBalancerIDs are the pre-created load balancers of the pool.
	LoadBalancerIDs []string
	// StartPort and EndPort bound the ports of each load balancer the
	// pool may hand out (EndPort-StartPort+1 Pods per load balancer).
	StartPort, EndPort int
}

// A Mode is one way to run a system: its allocation policy and the extra
// flags of its process. A mode the system cannot run (a flag its binary
// lacks) says why in Unavailable and is reported, not run.
type Mode struct {
	Name string
	// Policy is the pool's allocation policy: LeastUsed or InOrder.
	Policy string
	// Flags are added to the process's defaults (which the harness never
	// changes otherwise).
	Flags       []string
	Unavailable string
}

// A Run is one mode of a system in its own namespace and cloud.
type Run struct {
	Mode
	Namespace string
	Cloud     Cloud
}

// System is a product under test.
type System interface {
	// Name names the system in results and plots.
	Name() string
	// Build prepares what every run needs, once: a binary built, CRDs
	// installed.
	Build(ctx context.Context, env *Env) error
	// Modes are the runs of the system, in order; the first is the one the
	// steady-state window and the memory figures use.
	Modes() []Mode
	// Start runs the system's process for r with its default flags plus
	// r.Flags, and returns once it is ready.
	Start(ctx context.Context, env *Env, r Run) (Instance, error)
	// Prepare creates the system's pool in r.Namespace over r.Cloud's load
	// balancers (credentials included) and waits until it can bind Pods.
	Prepare(ctx context.Context, env *Env, r Run) error
	// Pod returns Pod i of the workload (named by the harness): one
	// container port 7777/TCP asking for one public address from the pool.
	Pod(r Run, name string) *corev1.Pod
	// Published says whether p has been told its public address.
	Published(p *corev1.Pod) bool
	// Cleanup removes what Prepare made once the process has stopped, so
	// that later runs on the same API server do not see it.
	Cleanup(ctx context.Context, env *Env, r Run) error
}

// Instance is a system's running process.
type Instance interface {
	// PID is the process id (CPU and RSS are read from /proc).
	PID() int
	// MetricsURL is the process's Prometheus endpoint, or "" if it has none.
	MetricsURL() string
	// Log is the file holding the process's output.
	Log() string
	// Stop ends the process (SIGTERM, then SIGKILL after grace).
	Stop(grace time.Duration)
}
