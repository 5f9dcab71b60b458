package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// DefaultDir holds everything a node makes on disk: its configuration,
// containerd's images and state, the kubelet's folder, logs. A node killed
// mid-run is found and removed through it by the next Start.
const DefaultDir = "/var/lib/ptn-node"

// lockFile keeps two nodes (the demo and a test, say) from running at once:
// they would share the fixed device names, ranges and ports.
const lockFile = "/run/ptn-node.lock"

// Options say what the node runs against.
type Options struct {
	// Env is the local control plane the node joins, started with the
	// option ControlPlane returns.
	Env *testenv.Env
	// Dir replaces DefaultDir.
	Dir string
	// Wait bounds each step of Start; 0 means 2 minutes.
	Wait time.Duration
	// Lock, if set, is the machine's node lock, already held by the
	// caller (to read the machine's state before and after the node), who
	// releases it; otherwise Start takes the lock and Stop releases it.
	Lock *Lock
}

// A Lock is the machine-wide lock of the node: two nodes (the demo and a
// test, say) would share the fixed device names, ranges and ports.
type Lock struct{ f *os.File }

// AcquireLock waits up to wait for the node lock.
func AcquireLock(ctx context.Context, wait time.Duration) (*Lock, error) {
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	err = testenv.Eventually(ctx, wait, func() error {
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	})
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another node holds %s: %w", lockFile, err)
	}
	return &Lock{f: f}, nil
}

// Release lets the next node start.
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// A Node is a running node. Stop it when done.
type Node struct {
	opts      Options
	dir       string
	kube      client.Client
	lock      *Lock
	procs     []*testenv.Process // in start order
	registry  *http.Server
	startedAt time.Time
	// Timings are how long each step of Start took, in order.
	Timings []Timing
}

// A Timing is one step of Start and how long it took.
type Timing struct {
	Step string
	Took time.Duration
}

// ControlPlane returns the option that sets the local control plane up for
// a node (testenv.ForNode), its certificates written into dir.
func ControlPlane(dir string) (testenv.Option, error) {
	certs, err := testenv.NewNodeCerts(dir, IP(), ServiceCIDR().Addr().Next())
	if err != nil {
		return nil, err
	}
	return testenv.ForNode(certs), nil
}

// Supported says why this machine cannot run a node, or nil.
func Supported() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the real node needs Linux (containerd, runc, network namespaces), not %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("the real node needs root: it starts containerd, makes a bridge, routes and iptables rules")
	}
	return nil
}

// Assets installs what the node needs (cluster/local/install-node.sh) and
// returns the folder holding the Kubernetes binaries.
func Assets() (string, error) {
	if err := Supported(); err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(testenv.RepoRoot(), "cluster", "local", "install-node.sh"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cannot install the node's binaries: %w", err)
	}
	return strings.TrimSpace(out.String()), nil
}

// Start sets up the network, starts containerd and the Kubernetes
// components, and returns when the node is Ready, schedulable and
// kube-proxy has synced. Whatever a killed earlier node left is removed
// first.
func Start(ctx context.Context, o Options) (_ *Node, err error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	if o.Wait == 0 {
		o.Wait = 2 * time.Minute
	}
	n := &Node{opts: o, dir: o.Dir, kube: o.Env.Client, startedAt: time.Now()}
	step := func(name string, fn func() error) error {
		t := time.Now()
		err := fn()
		n.Timings = append(n.Timings, Timing{name, time.Since(t)})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	var assets string
	for _, s := range []struct {
		name string
		fn   func() error
	}{
		{"binaries", func() (err error) { assets, err = Assets(); return err }},
		{"lock", func() (err error) {
			if n.lock = o.Lock; n.lock == nil {
				n.lock, err = AcquireLock(ctx, o.Wait)
			}
			return err
		}},
		{"sweep", func() error { return Sweep(o.Dir) }},
		{"network", func() error { return n.prepare() }},
		{"registry", func() error { return n.startRegistry(ctx) }},
		{"containerd", func() error { return n.startContainerd(ctx) }},
		{"kubernetes", func() error { return n.startKubernetes(assets) }},
		{"ready", func() error { return n.waitReady(ctx) }},
	} {
		if err := step(s.name, s.fn); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// prepare makes the node's folder, saves what Stop restores, and sets up
// the network.
func (n *Node) prepare() error {
	for _, d := range []string{"logs", "pod-logs", "kubelet", "runc", "cni/ipam"} {
		if err := os.MkdirAll(n.path(d), 0o700); err != nil {
			return err
		}
	}
	if err := snapshotRules(n.dir); err != nil {
		return err
	}
	if err := snapshotSysctls(n.dir); err != nil {
		return err
	}
	if err := n.writeConfigs(); err != nil {
		return err
	}
	return setUpNetwork()
}

func (n *Node) start(name, bin string, args ...string) (*testenv.Process, error) {
	p, err := testenv.StartProcess(n.path("logs"), name, bin, componentEnv(), args...)
	if err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	n.procs = append(n.procs, p)
	return p, nil
}

func (n *Node) startContainerd(ctx context.Context) error {
	p, err := n.start("containerd", "containerd", "--config", n.path("containerd", "config.toml"))
	if err != nil {
		return err
	}
	return testenv.Eventually(ctx, n.opts.Wait, func() error {
		if p.Exited() {
			return fmt.Errorf("containerd exited; see %s", p.Log)
		}
		c, err := dialCRI(ctx, n.socket())
		if err != nil {
			return err
		}
		defer c.close()
		return c.ready(ctx)
	})
}

func (n *Node) startKubernetes(assets string) error {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", n.controllerManagerArgs()},
		{"kube-scheduler", n.schedulerArgs()},
		{"kube-proxy", n.proxyArgs()},
		{"kubelet", n.kubeletArgs()},
	} {
		if _, err := n.start(c.name, filepath.Join(assets, c.name), c.args...); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits for the node to be Ready with no NoSchedule taint (the
// node lifecycle controller removes not-ready's), for the default
// ServiceAccount (the controller manager runs) and kube-proxy's first sync.
func (n *Node) waitReady(ctx context.Context) error {
	return testenv.Eventually(ctx, n.opts.Wait, func() error {
		for _, p := range n.procs {
			if p.Exited() {
				return fmt.Errorf("a component exited; see %s", p.Log)
			}
		}
		var node corev1.Node
		if err := n.kube.Get(ctx, client.ObjectKey{Name: Name}, &node); err != nil {
			return err
		}
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			return errors.New("the node is not Ready")
		}
		for _, t := range node.Spec.Taints {
			if t.Effect == corev1.TaintEffectNoSchedule {
				return fmt.Errorf("the node is tainted %s", t.Key)
			}
		}
		var sa corev1.ServiceAccount
		if err := n.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &sa); err != nil {
			return fmt.Errorf("the controller manager has not made the default ServiceAccount: %w", err)
		}
		resp, err := http.Get("http://127.0.0.1:10256/healthz")
		if err != nil {
			return fmt.Errorf("kube-proxy: %w", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kube-proxy has not synced: %s", resp.Status)
		}
		return nil
	})
}

// Logs is the folder of the components' logs.
func (n *Node) Logs() string { return n.path("logs") }

// PodLogs is the kubelet's folder of the containers' logs, one folder per
// Pod (namespace_name_uid) while the Pod exists.
func (n *Node) PodLogs() string { return n.path("pod-logs") }

// Stop stops the kubelet, removes every Pod sandbox through the container
// runtime (CNI takes each Pod's network down), stops the other components
// and removes what the node made. It deletes the Node object when the API
// server still answers.
func (n *Node) Stop() error {
	var errs []error
	// The kubelet first, so it does not restart what is being removed.
	for i := len(n.procs) - 1; i >= 0; i-- {
		if strings.HasPrefix(filepath.Base(n.procs[i].Log), "kubelet-") {
			n.procs[i].Stop(30 * time.Second)
		}
	}
	if len(n.procs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		errs = append(errs, removeSandboxes(ctx, n.socket()))
		cancel()
	}
	for i := len(n.procs) - 1; i >= 0; i-- {
		n.procs[i].Stop(30 * time.Second)
	}
	if n.kube != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := n.kube.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: Name}})
		cancel()
		if err != nil && !kerrors.IsNotFound(err) && !errors.Is(err, context.DeadlineExceeded) {
			errs = append(errs, err)
		}
	}
	if n.registry != nil {
		errs = append(errs, n.registry.Close())
	}
	errs = append(errs, Sweep(n.dir))
	if n.lock != n.opts.Lock {
		n.lock.Release() // the caller's lock is the caller's to release
	}
	return errors.Join(errs...)
}
