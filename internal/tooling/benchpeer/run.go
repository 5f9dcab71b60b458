package benchpeer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Settings is one configuration of the peer: its knobs are environment
// variables (controller workers, per-action cloud call rates) and none is
// a flag.
type Settings struct {
	Name string
	Env  map[string]string
}

// rateLimitEnv are the peer's per-action cloud call rates (calls per
// second, burst 1); unset means no limit.
func rateLimitEnv() []string {
	return []string{
		"API_RATELIMIT_DESCRIBE_LOAD_BALANCERS", "API_RATELIMIT_CREATE_LISTENER",
		"API_RATELIMIT_DESCRIBE_LISTENERS", "API_RATELIMIT_DELETE_LOAD_BALANCER_LISTENERS",
		"API_RATELIMIT_BATCH_REGISTER_TARGETS", "API_RATELIMIT_DESCRIBE_TARGETS",
		"API_RATELIMIT_BATCH_DEREGISTER_TARGETS", "API_RATELIMIT_DESCRIBE_TASK_STATUS",
	}
}

// workers sets the controllers' workers; the Node and CLBNodeBinding
// controllers, idle in this workload, keep the chart's 20.
func workers(pod, podBinding, pool int) map[string]string {
	return map[string]string{
		"WORKER_POD_CONTROLLER":              strconv.Itoa(pod),
		"WORKER_CLB_POD_BINDING_CONTROLLER":  strconv.Itoa(podBinding),
		"WORKER_NODE_CONTROLLER":             "20",
		"WORKER_CLB_NODE_BINDING_CONTROLLER": "20",
		"WORKER_CLB_PORT_POOL_CONTROLLER":    strconv.Itoa(pool),
	}
}

// Defaults are what a user of the peer gets: its Helm chart's values
// (v2.5.2: 20 workers for the Pod, Node and binding controllers, 10 for
// the pool controller, 20 calls per second for each rate-limited action).
// The binary alone would run 1 worker per controller, which no install
// uses.
func Defaults() Settings {
	env := workers(20, 20, 10)
	for _, k := range rateLimitEnv() {
		env[k] = "20"
	}
	return Settings{Name: "defaults", Env: env}
}

// Best is the peer's best setting for this workload among those tried
// (Variants, 1000 Pods): a worker per Pod of the burst for the Pod and
// CLBPodBinding controllers (its chart's advice for large, fast
// scale-outs is more workers there; with more Pods in flight its 2 s
// batches carry more targets), with the cloud rates at the cloud's own
// limit (20 per second per action): without them it is slower, retrying
// RequestLimitExceeded. Its batch window and its Kubernetes client
// (controller-runtime's default: no client-side limit) have no setting.
func Best() Settings {
	env := workers(1000, 1000, 20)
	for _, k := range rateLimitEnv() {
		env[k] = "20"
	}
	return Settings{Name: "best", Env: env}
}

// Variants are the settings the benchmark can run, by name: defaults and
// best by default, the others to check that best is: fewer or more
// workers, and no client-side rate limit (the cloud's limit then answers
// RequestLimitExceeded).
func Variants() map[string]Settings {
	v := map[string]Settings{}
	add := func(s Settings) { v[s.Name] = s }
	add(Defaults())
	add(Best())
	limited := func(name string, pod, binding int) Settings {
		env := workers(pod, binding, 20)
		for _, k := range rateLimitEnv() {
			env[k] = "20"
		}
		return Settings{Name: name, Env: env}
	}
	add(limited("workers-50", 50, 50))
	add(limited("workers-200", 200, 200))
	add(Settings{Name: "no-rate-limit", Env: workers(1000, 1000, 20)})
	return v
}

// Cloud says where the peer finds the cloud: the emulator's endpoint
// (plain HTTP), reached through a Front that Start opens.
type Cloud struct {
	Endpoint  string
	Region    string
	VpcID     string
	SecretID  string
	SecretKey string
}

// Process is a running peer with its front.
type Process struct {
	cmd   *exec.Cmd
	done  chan struct{}
	front *Front
	log   string
	// stopGC ends CollectGarbage, if Collect started it.
	stopGC context.CancelFunc
}

// Collect runs CollectGarbage for ns until the peer stops.
func (p *Process) Collect(kube client.WithWatch, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	p.stopGC = cancel
	go CollectGarbage(ctx, kube, ns)
}

// Start opens a front for cloud and runs the peer binary bin against the
// cluster in kubeconfig (a file) with the environment of s, its files
// under dir, and waits until its manager is ready.
func Start(ctx context.Context, dir, bin, kubeconfig string, cloud Cloud, s Settings) (*Process, error) {
	// The peer registers its CLBPortPool validating webhook with its
	// manager, whose server needs a serving certificate in
	// $TMPDIR/k8s-webhook-server/serving-certs (and listens on :9443);
	// nothing calls it here.
	tmp := filepath.Join(dir, "tmp")
	if _, err := testenv.ServingCert(filepath.Join(tmp, "k8s-webhook-server", "serving-certs")); err != nil {
		return nil, err
	}
	probe, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	front, err := StartFront(dir, cloud.Endpoint)
	if err != nil {
		return nil, err
	}
	log, err := os.CreateTemp(dir, "peer-"+s.Name+"-*.log")
	if err != nil {
		_ = front.Close()
		return nil, err
	}
	// Its metrics endpoint asks for a bearer token checked by the API
	// server (controller-runtime's authn/authz filter): left off.
	cmd := exec.Command(bin, //nolint:gosec // G204: the binary Build made.
		"--kubeconfig", kubeconfig,
		"--region", cloud.Region, "--vpcid", cloud.VpcID,
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0")
	env := []string{
		"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp,
		"HTTPS_PROXY=" + front.ProxyURL, "NO_PROXY=127.0.0.1,localhost",
		"SSL_CERT_FILE=" + front.CAFile,
		"SECRET_ID=" + cloud.SecretID, "SECRET_KEY=" + cloud.SecretKey,
		// The cluster id has no flag, only its environment variable.
		"CLUSTER_ID=cls-bench",
	}
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		_ = front.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{}), front: front, log: log.Name()}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	err = testenv.Eventually(ctx, time.Minute, func() error {
		if p.exited() {
			return errors.New("the peer exited: " + p.tail())
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probe+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		p.Stop(5 * time.Second)
		return nil, err
	}
	return p, nil
}

// PID is the peer's process id, for CPU and memory readings.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// MetricsURL is empty: the peer's endpoint needs a token (see Start).
func (p *Process) MetricsURL() string { return "" }

// Log is the file with the peer's output.
func (p *Process) Log() string { return p.log }

// FrontCalls are the cam and tag calls the front answered itself.
func (p *Process) FrontCalls() map[string]int { return p.front.LocalCalls() }

// Stop ends the peer (SIGTERM, then SIGKILL after grace) and its front.
func (p *Process) Stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.front.Close()
	if p.stopGC != nil {
		p.stopGC()
	}
}

func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *Process) tail() string {
	b, _ := os.ReadFile(p.log)
	return testenv.LastLines(string(b), 5)
}
