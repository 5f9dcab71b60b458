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

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/benchpeer"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Peer is the best-known open-source peer, tkestack's
// tke-extend-network-controller, as a System: built from PEER_SRC (or the
// workspace's mirror) into the bench dir at bench time, never part of this
// repository. Its settings are environment variables, not flags, so a
// mode's Flags here are NAME=value pairs given as its environment.
type Peer struct {
	// Settings names the settings to run (benchpeer.Variants); empty means
	// defaults and best.
	Settings []string

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
// values) and at its best settings for this workload, or the settings
// named in p.Settings, all with its Uniform policy, the nearest to
// LeastUsed.
func (p *Peer) Modes() []Mode {
	names := p.Settings
	if len(names) == 0 {
		names = []string{"defaults", "best"}
	}
	variants := benchpeer.Variants()
	var modes []Mode
	for _, n := range names {
		s, ok := variants[n]
		m := Mode{Name: n, Policy: "LeastUsed", Flags: envFlags(s.Env), Unavailable: p.unavailable}
		if !ok {
			m.Unavailable = "no such peer setting (known: " + strings.Join(SortedKeys(variants), ", ") + ")"
		}
		modes = append(modes, m)
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
	if err := RemoveAll(ctx, env.Kube, r.Namespace, benchpeer.BindingGVK(), corev1.SchemeGroupVersion.WithKind("Pod")); err != nil {
		return err
	}
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(benchpeer.PoolGVK())
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

// peerName is how a results file names the peer (its version follows).
const peerName = "tke-extend-network-controller"

// isPeer tells the peer's results from the provider's.
func isPeer(s *SystemResult) bool { return strings.HasPrefix(s.Name, peerName) }

// PeerGoals are issue 10's goals against the peer: at both products'
// defaults (the provider's LeastUsed run, the peer's Helm values) ahead on
// every figure, and at both products' best settings (each one's fastest
// run to all published; the provider's naive mode is not a setting of its
// own but a comparison) at least 3× faster to all published.
func PeerGoals(r *Results) []Goal {
	if len(r.Systems) < 2 || isPeer(r.Systems[0]) {
		return nil
	}
	prov := r.Systems[0]
	var peer *SystemResult
	for _, s := range r.Systems[1:] {
		if isPeer(s) {
			peer = s
		}
	}
	if peer == nil {
		return nil
	}
	for _, run := range peer.Runs {
		if run.Unavailable != "" {
			return []Goal{{Figure: "against the peer", Goal: "measured", Measured: "peer: " + run.Unavailable}}
		}
	}
	var gs []Goal
	pd, vd := findRun(prov, "LeastUsed"), findRun(peer, "defaults")
	// A peer run that did not publish every Pod within the phase's bound
	// still compares: each of its figures can only have grown had it run
	// on (time, p99 with the rest still waiting, calls, CPU), so they are
	// lower bounds, and ours below them is ahead.
	if complete(pd) && vd != nil && vd.Bind != nil && vd.Bind.Done > 0 {
		p, v := pd.Bind, vd.Bind
		bound := ""
		if !complete(vd) {
			bound = "≥ "
		}
		ahead := func(figure, unit string, ours, theirs float64) Goal {
			return Goal{Figure: "at both defaults, against the peer: " + figure, Goal: "lower than the peer's",
				Measured: fmt.Sprintf("%.3g %s vs %s%.3g %s", ours, unit, bound, theirs, unit), Met: verdict(ours < theirs)}
		}
		gs = append(gs,
			ahead("all published", "s", p.Seconds, v.Seconds),
			ahead("Pod IP → published p99", "s", p.P99, v.P99),
			ahead("CLB calls per Pod", "", p.CloudWritesPerPod+p.CloudDescribesPerPod, v.CloudWritesPerPod+v.CloudDescribesPerPod),
			ahead("API server + etcd CPU", "s", p.APIServerCPU+p.EtcdCPU, v.APIServerCPU+v.EtcdCPU),
		)
	} else {
		gs = append(gs, Goal{Figure: "at both defaults, against the peer", Goal: "measured", Measured: "no comparable runs (ours did not publish every Pod, or the peer published none)"})
	}
	pb, vb := fastest(prov, "naive"), fastest(peer, "")
	if pb != nil && vb != nil {
		ratio := vb.Bind.Seconds / pb.Bind.Seconds
		b := pb.Bind
		cpu := b.APIServerCPU + b.EtcdCPU + b.SystemCPU + b.HarnessCPU
		cores := float64(max(r.Machine.Cores, 1))
		gs = append(gs, Goal{Figure: "at both best settings, against the peer: all published", Goal: "≥ 3× faster",
			Measured: fmt.Sprintf("%.1f s (%s) vs %.1f s (%s): %.2f×", pb.Bind.Seconds, pb.Mode, vb.Bind.Seconds, vb.Mode, ratio),
			Met:      verdict(ratio >= 3),
			Cause: fmt.Sprintf("our run used %.1f CPU-seconds (API server %.1f), at least %.1f s on %.0f cores: it is at this "+
				"machine's CPU floor; 3× needed the peer at ≥ %.1f s", cpu, b.APIServerCPU, cpu/cores, cores, 3*b.Seconds)})
	}
	return gs
}

// complete is a run that published every Pod.
func complete(run *RunResult) bool {
	return run != nil && run.Bind != nil && run.Bind.Pods > 0 && run.Bind.Done == run.Bind.Pods
}

// fastest is a system's complete run with the least time to all
// published, skipping the mode named skip.
func fastest(s *SystemResult, skip string) *RunResult {
	var best *RunResult
	for _, run := range s.Runs {
		if run.Mode == skip || !complete(run) {
			continue
		}
		if best == nil || run.Bind.Seconds < best.Bind.Seconds {
			best = run
		}
	}
	return best
}

// PeerMarkdown says how the peer was run, for docs/performance.md.
func PeerMarkdown(r *Results) string {
	var peer *SystemResult
	for _, s := range r.Systems {
		if isPeer(s) {
			peer = s
		}
	}
	if peer == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## The peer\n\n")
	w("The peer is [tkestack/tke-extend-network-controller](https://github.com/tkestack/tke-extend-network-controller)")
	if v := strings.TrimSpace(strings.TrimPrefix(peer.Name, peerName)); v != "" {
		w(" (%s)", v)
	}
	w(", ")
	w("the best-known open-source controller that gives Pods a public address through CLB port mappings. ")
	w("It is built at bench time from `PEER_SRC` (a work tree or git repository; by default the workspace's mirror) into the bench's temp dir ")
	w("and never becomes part of this repository or its binaries; `go run ./hack/peer` does the same build alone. ")
	w("Without its source the bench runs without it and says `peer: not measured — <reason>`.\n\n")
	for _, run := range peer.Runs {
		if run.Unavailable != "" {
			w("This run: %s\n\n", run.Unavailable)
			break
		}
	}
	w("What was changed to run it, and nothing else:\n\n")
	w("- **A stand-in for `agones.dev/agones`**: the Go module proxy refuses that module (every version), and the peer imports only its ")
	w("`pkg/apis/agones/v1` package, for the GameServer kind it patches when Agones is installed (it is not here). The build writes a tiny module of ")
	w("our own with that package (GameServer as object metadata, its list, AddToScheme) and points a `replace` at it in the temp copy's go.mod.\n")
	w("- **The endpoint**: the peer's SDK clients only speak HTTPS to `<service>.tencentcloudapi.com` (its one endpoint setting adds a suffix to that name). ")
	w("The Tencent Cloud SDK's transport honours `HTTPS_PROXY`, so the peer runs with `HTTPS_PROXY` pointing at a front on 127.0.0.1 ")
	w("(`internal/tooling/benchpeer`) and `SSL_CERT_FILE` at the front's throwaway CA. The front accepts the CONNECT, ends TLS with a certificate for ")
	w("`*.tencentcloudapi.com`, and passes clb and vpc calls to the run's emulator with their Host kept, so their signatures are checked as usual. ")
	w("The peer's one other call, cam `GetUserAppId` at start (its account id), the front answers itself; ")
	w("tag `TagResources` (only for load balancers it creates itself, which it never does here) would be answered too, and anything else is refused.\n")
	w("- **Its start-up arguments**: `--region`, `--vpcid`, the credentials and `CLUSTER_ID` (which has no flag) in its environment, ")
	w("`--kubeconfig`, a free port for its health probe, its metrics endpoint off (controller-runtime's authn/authz filter would need a token, ")
	w("so no Go heap figure for it), and a throwaway serving certificate in `$TMPDIR/k8s-webhook-server/serving-certs` for its CLBPortPool webhook server, ")
	w("which nothing calls.\n")
	w("- **What a cluster would do for it**: it binds only Pods on a TKE native or serverless node, so its Pods name a node labelled ")
	w("`node.kubernetes.io/instance-type: eklet`; and it leaves the deletion of its per-Pod CLBPodBinding to the Kubernetes garbage collector, ")
	w("which the local control plane does not run, so during its runs a watch deletes the binding of each deleted Pod (one DELETE per Pod, ")
	w("counted in its API requests, as the real collector's would be). The harness deletes every system's Pods with grace 0, as a kubelet confirms.\n\n")
	w("Its workload is the provider's in all but the annotations and the node: as many Pods, one TCP port 7777 each, asked for with `networking.cloud.tencent.com/enable-clb-port-mapping: \"true\"` ")
	w("and `networking.cloud.tencent.com/clb-port-mapping: 7777 TCP <pool>`, from a CLBPortPool over the same pre-created load balancers and ports ")
	w("(`exsistedLoadBalancerIDs`, `startPort`/`endPort`), `lbPolicy: Uniform` (the nearest to LeastUsed). A Pod is published when the peer has set ")
	w("`networking.cloud.tencent.com/clb-port-mapping-status: Ready` with the result beside it.")
	if _, ours := sameWorkload(r); ours != nil {
		w(" The provider serves these very Pods too, in the next section.")
	}
	w("\n\n")
	w("Its settings are environment variables, not flags (the mode's *flags* in the results are those variables):\n\n")
	w("- **defaults**: its Helm chart's values, which every install gets: 20 workers for the Pod, Node and binding controllers, 10 for the pool ")
	w("controller, 20 calls per second for each rate-limited CLB action. The binary alone would run one worker per controller.\n")
	w("- **best**: 1000 workers for the Pod and CLBPodBinding controllers, one per Pod of the burst (the chart's advice for large fast scale-outs ")
	w("is more workers there; with more Pods in flight its 2 s batches carry more targets), the rates left at the cloud's own 20 per second. ")
	w("Its batch window and its Kubernetes client (controller-runtime's default: no client-side limit) have no setting.\n")
	w("- `-peer-settings` runs others beside or instead of these, to check that best is: `workers-50` and `workers-200` (those workers, rates as best), ")
	w("`no-rate-limit` (best's workers, no client-side rate, so the cloud answers RequestLimitExceeded when it is over).\n\n")
	return b.String()
}
