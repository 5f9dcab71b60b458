package bench

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TKEPodsName is how results name TKEPods.
const TKEPodsName = "provider-tencentcloud-network on tke-extend Pods"

// TKEPods is this provider serving the peer's own workload, so that the
// two are compared on the very same Pods: each Pod is the peer's
// (Peer.Pod: tke-extend's enable-clb-port-mapping and clb-port-mapping
// annotations naming the peer's pool, on the peer's node), and it is
// published by the peer's own test (Peer.Published: tke-extend's status
// annotation Ready with its result), which the provider writes for Pods
// that ask in tke-extend's syntax.
//
// The pool differs in kind only: the bench's API server serves the peer's
// own CLBPortPool CRD (Peer.Build installs it; ours has the same name), so
// the provider is given directly what its CLBPortPool controller makes of
// one: a PortPool of the peer's pool name in podannotation.TKEPoolNamespace,
// over the same load balancers and ports, open to every namespace.
type TKEPods struct {
	prov Provider
	peer Peer
}

// Name implements System.
func (t *TKEPods) Name() string { return TKEPodsName }

// Build builds the provider (its Pod's annotations need no peer source).
func (t *TKEPods) Build(ctx context.Context, env *Env) error { return t.prov.Build(ctx, env) }

// Modes implements System: the provider's defaults with LeastUsed, which
// the peer's Uniform runs are set beside.
func (t *TKEPods) Modes() []Mode {
	return []Mode{{Name: clbv1alpha1.PolicyLeastUsed, Policy: clbv1alpha1.PolicyLeastUsed}}
}

// Start runs the provider as Provider does.
func (t *TKEPods) Start(ctx context.Context, env *Env, r Run) (Instance, error) {
	return t.prov.Start(ctx, env, r)
}

// tkePool is the PortPool the peer's Pods of r name: the peer's pool name
// in the tke-extend pool namespace, open to every namespace.
func tkePool(r Run) *clbv1alpha1.PortPool {
	pp := portPool(r, podannotation.TKEPoolNamespace, poolFor(r))
	pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	return pp
}

// Prepare creates the ProviderConfig and the PortPool in the tke-extend
// pool namespace, first removing what a run whose cleanup failed left
// there, and waits until the pool can bind.
func (t *TKEPods) Prepare(ctx context.Context, env *Env, r Run) error {
	if err := t.cleanPoolNamespace(ctx, env); err != nil {
		return err
	}
	return preparePool(ctx, env, r, tkePool(r))
}

// Pod is the peer's Pod, as it is.
func (t *TKEPods) Pod(r Run, name string) *corev1.Pod { return t.peer.Pod(r, name) }

// Published is the peer's test.
func (t *TKEPods) Published(pod *corev1.Pod) bool { return t.peer.Published(pod) }

// Cleanup removes the run's PodAddresses and the pool namespace's
// objects, finalizers removed: the provider has stopped.
func (t *TKEPods) Cleanup(ctx context.Context, env *Env, r Run) error {
	if err := RemoveAll(ctx, env.Kube, r.Namespace, networkv1alpha1.PodAddressGroupVersionKind); err != nil {
		return err
	}
	return t.cleanPoolNamespace(ctx, env)
}

func (t *TKEPods) cleanPoolNamespace(ctx context.Context, env *Env) error {
	return RemoveAll(ctx, env.Kube, podannotation.TKEPoolNamespace, providerKinds()...)
}

// Managed counts the run's PodAddresses.
func (t *TKEPods) Managed(ctx context.Context, env *Env, r Run) (int, error) {
	return t.prov.Managed(ctx, env, r)
}

// isTKEPods tells TKEPods' results from the others.
func isTKEPods(s *SystemResult) bool { return s.Name == TKEPodsName }

// sameWorkload finds the peer's results and ours on its Pods; either may
// be nil.
func sameWorkload(r *Results) (peer, ours *SystemResult) {
	for _, s := range r.Systems {
		switch {
		case isPeer(s):
			peer = s
		case isTKEPods(s):
			ours = s
		}
	}
	return peer, ours
}

// TKEPodsGoals set our run on the peer's Pods beside the peer's runs:
// figures with no target of their own (issue 10's goals are judged on the
// provider's own runs), the time to all published as a ratio.
func TKEPodsGoals(r *Results) []Goal {
	peer, ours := sameWorkload(r)
	if ours == nil {
		return nil
	}
	run := findRun(ours, clbv1alpha1.PolicyLeastUsed)
	if !complete(run) {
		m := "not every Pod published"
		if run != nil {
			m = orText(orText(run.Unavailable, run.Error), m)
		}
		return []Goal{{Figure: "same tke-extend-annotated workload", Goal: "measured", Measured: m}}
	}
	if peer == nil {
		return []Goal{{Figure: "same tke-extend-annotated workload", Goal: "measured",
			Measured: fmt.Sprintf("ours %.1f s to all published; the peer was not run", run.Bind.Seconds)}}
	}
	var gs []Goal
	for _, pr := range peer.Runs {
		g := Goal{Figure: "same tke-extend-annotated workload: all published, ours (LeastUsed) vs the peer's " + pr.Mode, Goal: "measured"}
		switch {
		case pr.Bind == nil || pr.Bind.Done == 0:
			g.Measured = fmt.Sprintf("%.1f s vs not measured (%s)", run.Bind.Seconds, orText(orText(pr.Unavailable, pr.Error), "no Pod published"))
		case !complete(pr):
			g.Measured = fmt.Sprintf("%.1f s vs ≥ %.1f s (%d/%d published)", run.Bind.Seconds, pr.Bind.Seconds, pr.Bind.Done, pr.Bind.Pods)
		default:
			g.Measured = fmt.Sprintf("%.1f s vs %.1f s: %.2f× faster; p99 %.2f s vs %.2f s", run.Bind.Seconds, pr.Bind.Seconds,
				pr.Bind.Seconds/run.Bind.Seconds, run.Bind.P99, pr.Bind.P99)
		}
		gs = append(gs, g)
	}
	return gs
}

// TKEPodsMarkdown is docs/performance.md's section on the same
// tke-extend-annotated workload: the peer's runs and ours on its Pods,
// with ours on our own annotations for reference.
func TKEPodsMarkdown(r *Results) string {
	peer, ours := sameWorkload(r)
	if ours == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## The same tke-extend-annotated workload: the peer and us\n\n")
	w("Here both systems serve the very same Pods. The run *%s* gives the provider the peer's Pods unchanged ", TKEPodsName)
	w("(`Peer.Pod` in `internal/tooling/bench`): `networking.cloud.tencent.com/enable-clb-port-mapping: \"true\"` and ")
	w("`networking.cloud.tencent.com/clb-port-mapping: 7777 TCP <pool>`, on the peer's node. ")
	w("A Pod counts as published by the peer's own test: `networking.cloud.tencent.com/clb-port-mapping-status: Ready` ")
	w("with `networking.cloud.tencent.com/clb-port-mapping-result` beside it, which the provider writes for Pods that ask in tke-extend's syntax. ")
	w("The pool differs in kind only: the bench's API server serves the peer's own CLBPortPool CRD (installed for the peer's runs; ours has the same name), ")
	w("so the provider is given directly what its CLBPortPool controller makes of one: a PortPool of the pool's name in namespace `%s`, ", podannotation.TKEPoolNamespace)
	w("with `consumers` All (a CLBPortPool is cluster scoped), over the same pre-created load balancers and ports as the peer's CLBPortPool, ")
	w("TCP listeners only, its allocation policy LeastUsed against the peer's Uniform. ")
	w("The provider runs at its defaults, as in its own runs.\n\n")
	w("| system | Pods annotated | mode | all published | p50 / p99 | CLB writes / Pod | CLB describes / Pod | API writes / Pod | apiserver + etcd CPU | system CPU | deleting: all gone |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|\n")
	line := func(sys, syntax string, run *RunResult) {
		if run.Bind == nil {
			w("| %s | %s | %s | %s | | | | | | | |\n", sys, syntax, run.Mode, cell(orText(orText(run.Unavailable, run.Error), "not measured")))
			return
		}
		ph := run.Bind
		done := fmt.Sprintf("%.1f s", ph.Seconds)
		if ph.Done < ph.Pods {
			done = fmt.Sprintf("%d/%d after %.1f s", ph.Done, ph.Pods, ph.Seconds)
		}
		del := ""
		if d := run.Delete; d != nil {
			del = fmt.Sprintf("%.1f s", d.Seconds)
			if d.Done < d.Pods {
				del = fmt.Sprintf("%d/%d after %.1f s", d.Done, d.Pods, d.Seconds)
			}
		}
		w("| %s | %s | %s | %s | %.2f s / %.2f s | %.3f | %.3f | %.2f | %.1f s + %.1f s | %.1f s | %s |\n", sys, syntax, run.Mode, done,
			ph.P50, ph.P99, ph.CloudWritesPerPod, ph.CloudDescribesPerPod, ph.APIWritesPerPod, ph.APIServerCPU, ph.EtcdCPU, ph.SystemCPU, del)
	}
	if peer != nil {
		for _, run := range peer.Runs {
			line(peer.Name, "tke-extend's", run)
		}
	} else {
		w("| %s | tke-extend's | | not run (not in `-systems`) | | | | | | | |\n", peerName)
	}
	for _, run := range ours.Runs {
		line("provider-tencentcloud-network", "tke-extend's (the peer's Pods)", run)
	}
	if len(r.Systems) > 0 && !isPeer(r.Systems[0]) && !isTKEPods(r.Systems[0]) {
		if run := findRun(r.Systems[0], clbv1alpha1.PolicyLeastUsed); run != nil {
			line(r.Systems[0].Name, "its own (for reference)", run)
		}
	}
	w("\n")
	for _, g := range TKEPodsGoals(r) {
		w("- %s: %s.\n", g.Figure, g.Measured)
	}
	w("\n")
	return b.String()
}
