package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/benchpeer"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

// Peer is the best-known open-source peer, tkestack's
// tke-extend-network-controller, as a System: built from PEER_SRC (or the
// workspace's mirror) into the bench dir at bench time, never part of this
// repository. Its settings are environment variables, not flags, so a
// mode's Flags here are NAME=value pairs given as its environment.
type Peer struct {
	bin, dir, version string
	// unavailable says why the peer cannot run; every mode carries it.
	unavailable string
}

// Name implements System.
func (p *Peer) Name() string {
	if p.version == "" {
		return "tke-extend-network-controller"
	}
	return "tke-extend-network-controller " + p.version
}

// Build builds the peer and installs its CRDs and node. A peer that cannot
// be built is not an error of the benchmark: its modes say why and the
// provider's figures stand alone.
func (p *Peer) Build(ctx context.Context, env *Env) error {
	if err := p.build(ctx, env); err != nil {
		p.unavailable = "not measured — " + err.Error()
		fmt.Println("peer: " + p.unavailable)
	}
	return nil
}

func (p *Peer) build(ctx context.Context, env *Env) error {
	src, err := benchpeer.Source()
	if err != nil {
		return err
	}
	p.dir = filepath.Join(env.Dir, "peer")
	if err := os.MkdirAll(p.dir, 0o750); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(p.dir, "build.log"))
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	if p.bin, err = benchpeer.Build(ctx, src, p.dir, log); err != nil {
		return fmt.Errorf("%w (build log %s)", err, log.Name())
	}
	p.version = benchpeer.Version(p.dir)
	return benchpeer.Install(ctx, env.Kube, p.dir)
}

// Modes implements System: the peer at its defaults (its Helm chart's
// values) and at its best settings for this workload, both with its
// Uniform policy, the nearest to LeastUsed.
func (p *Peer) Modes() []Mode {
	var modes []Mode
	for _, s := range []benchpeer.Settings{benchpeer.Defaults(), benchpeer.Best()} {
		modes = append(modes, Mode{Name: s.Name, Policy: "LeastUsed", Flags: envFlags(s.Env), Unavailable: p.unavailable})
	}
	return modes
}

// envFlags renders settings as sorted NAME=value pairs.
func envFlags(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Start runs the peer with r.Flags as its environment, its cloud calls
// sent to the run's emulator through benchpeer's front.
func (p *Peer) Start(ctx context.Context, env *Env, r Run) (Instance, error) {
	s := benchpeer.Settings{Name: r.Name, Env: map[string]string{}}
	for _, f := range r.Flags {
		k, v, _ := strings.Cut(f, "=")
		s.Env[k] = v
	}
	cloud := benchpeer.Cloud{Endpoint: r.Cloud.Endpoint, Region: r.Cloud.Region, VpcID: "vpc-bench",
		SecretID: r.Cloud.SecretID, SecretKey: r.Cloud.SecretKey}
	proc, err := benchpeer.Start(ctx, p.dir, p.bin, env.KubeConfig, cloud, s)
	if err != nil {
		return nil, err
	}
	// The garbage collector's part, which the peer's delete path needs.
	wc, err := client.NewWithWatch(env.Config, client.Options{})
	if err != nil {
		proc.Stop(5 * time.Second)
		return nil, err
	}
	proc.Collect(wc, r.Namespace)
	return proc, nil
}

// poolFor names the run's CLBPortPool (cluster scoped) after its namespace.
func poolFor(r Run) string { return "peer-" + r.Namespace }

// Prepare creates the run's CLBPortPool over the pre-created load
// balancers and waits until the peer has every one Running.
func (p *Peer) Prepare(ctx context.Context, env *Env, r Run) error {
	pool := benchpeer.Pool(poolFor(r), r.Cloud.LoadBalancerIDs, r.Cloud.StartPort, r.Cloud.EndPort, benchpeer.PolicyFor(r.Policy))
	if err := env.Kube.Create(ctx, pool); err != nil {
		return err
	}
	return testenv.Eventually(ctx, 5*time.Minute, func() error {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if !benchpeer.PoolActive(pool) {
			return fmt.Errorf("pool %s not Active", pool.GetName())
		}
		lbs, _, _ := unstructured.NestedSlice(pool.Object, "status", "loadbalancerStatuses")
		running := 0
		for _, l := range lbs {
			if m, ok := l.(map[string]any); ok && m["state"] == "Running" {
				running++
			}
		}
		if running != len(r.Cloud.LoadBalancerIDs) {
			return fmt.Errorf("pool %s: %d of %d load balancers Running", pool.GetName(), running, len(r.Cloud.LoadBalancerIDs))
		}
		return nil
	})
}

// Pod asks the peer for one TCP mapping of 7777 from the run's pool, on
// the serverless node it requires.
func (p *Peer) Pod(r Run, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name, Annotations: benchpeer.PodAnnotations(7777, poolFor(r))},
		Spec: corev1.PodSpec{NodeName: benchpeer.NodeName, Containers: []corev1.Container{{Name: "server", Image: "example/server",
			Ports: []corev1.ContainerPort{{ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}}}},
	}
}

// Published is the peer's word to the Pod: its status annotation Ready
// with the result beside it.
func (p *Peer) Published(pod *corev1.Pod) bool { return benchpeer.Published(pod) }

// Cleanup removes the run's bindings, Pods and pool, finalizers removed:
// the peer has stopped and the run's cloud is gone with it.
func (p *Peer) Cleanup(ctx context.Context, env *Env, r Run) error {
	if err := RemoveAll(ctx, env.Kube, r.Namespace, benchpeer.BindingGVK, corev1.SchemeGroupVersion.WithKind("Pod")); err != nil {
		return err
	}
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(benchpeer.PoolGVK)
	pool.SetName(poolFor(r))
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
	if err := env.Kube.Patch(ctx, pool, patch); err != nil && !kerrors.IsNotFound(err) {
		return err
	}
	if err := env.Kube.Delete(ctx, pool); err != nil && !kerrors.IsNotFound(err) {
		return err
	}
	return nil
}
