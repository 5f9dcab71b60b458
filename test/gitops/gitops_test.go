package gitops

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpcluster"
)

const games = "games"

// brokenPool is a PortPool whose only load balancer does not exist: the
// provider cannot make it work (Synced=False), in a wave of its own, the
// last, so that the sync of the others does not wait on it.
const brokenPool = `apiVersion: clb.tencentcloud.m.crossplane.io/v1alpha1
kind: PortPool
metadata:
  name: broken
  namespace: games
  annotations:
    argocd.argoproj.io/sync-wave: "4"
    argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true
spec:
  forProvider:
    loadBalancerIds: [lb-0000dead]
    startPort: 7200
    endPort: 7201
    protocols: [TCP]
`

// TestGitOps is a platform team's story with Argo CD, step by step: each
// step needs the ones before it, and each is asserted from the
// Application's status as Argo CD computes it. The first sync, the failing
// pools and the pool pruned while held are asserted twice: with our
// argocd-cm snippet and with Argo CD's built-in checks alone (argocd-cm
// rewritten in between, which the running controller reloads).
func TestGitOps(t *testing.T) {
	ctx := context.Background()
	dir := logDir(t, "gitops")
	began := time.Now()
	var err error
	if cluster, err = deployed.Start(ctx, deployed.Options{Dir: dir, Version: version, GitOps: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	kube = cluster.Kube
	if gameImage, err = cluster.PushGameServer(ctx); err != nil {
		t.Fatal(err)
	}
	if snippet.settings, err = argocd.Snippet(); err != nil {
		t.Fatal(err)
	}
	health = snippet
	startArgoCD(t, dir, cluster.Env.KubeConfig, snippet.settings)
	t.Logf("the node, Crossplane and Argo CD are up in %s", time.Since(began).Round(time.Second))
	for _, tm := range cluster.Timings {
		t.Logf("  %-60s %s", tm.Step, tm.Took.Round(time.Millisecond))
	}
	for _, s := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"first sync: the packages, then the config, then the pools, then the game servers", firstSync},
		{"every game server Pod has its address and answers on it", podsAddressed},
		{"a change in Git (replicas, a pool's ports) reaches the cloud", gitChange},
		{"drift in the cluster: OutOfSync, then self-heal repairs it", drift},
		{"a managed resource failing in the cloud, a CLBPortPool that cannot be made: Degraded with the provider's message", failing},
		{"pruning a pool with a Pod bound waits for the Pod, then the pool is gone", pruneBoundPool},
		{"deleting the Application leaves the cloud empty", deleteApplication},
	} {
		if !t.Run(s.name, s.fn) {
			return
		}
	}
}

var (
	// head is the commit Argo CD should be at.
	head string
	// replicas of the game server StatefulSet, and the lobby pool's last port.
	replicas = 2
	lobbyEnd = 7103
)

func firstSync(t *testing.T) {
	ctx := context.Background()
	began := time.Now()
	// The credentials are not in Git: the platform team creates the
	// Secret once, as examples/providerconfig/secret.yaml.
	if _, err := testenv.Apply(ctx, kube, testenv.RepoRoot()+"/examples/providerconfig/secret.yaml"); err != nil {
		t.Fatal(err)
	}
	head = push(t, "the platform", tree(t, nil, nil))
	createApplication(t)
	s := waitApp(t, "the Application Synced and Healthy", syncedHealthy(head))
	t.Logf("first sync: Synced and Healthy in %s after %d retries: %s", time.Since(began).Round(time.Second), s.Retries, s)
	for _, want := range []struct{ kind, name string }{
		{"Configuration", "configuration-tencentcloud-network"}, {"ClusterProviderConfig", "default"},
		{"PodPublicAddress", "gameserver"}, {"LoadBalancer", "lobby"}, {"PortPool", "lobby"}, {"StatefulSet", "gameserver"},
	} {
		if _, ok := s.Resource(want.kind, want.name); !ok {
			t.Errorf("the Application does not list %s %s", want.kind, want.name)
		}
	}
	// The waves in order: each applied once the one before was Healthy.
	order := []struct {
		what string
		at   metav1.Time
	}{
		{"Configuration (wave 0)", created(t, "pkg.crossplane.io/v1", "Configuration", "", "configuration-tencentcloud-network")},
		{"ClusterProviderConfig (wave 1)", created(t, "tencentcloud.crossplane.io/v1alpha1", "ClusterProviderConfig", "", "default")},
		{"PodPublicAddress (wave 2)", created(t, "workload.tencentcloud.crossplane.io/v1alpha1", "PodPublicAddress", games, "gameserver")},
		{"StatefulSet (wave 3)", created(t, "apps/v1", "StatefulSet", games, "gameserver")},
	}
	for i := 1; i < len(order); i++ {
		if !order[i-1].at.Before(&order[i].at) {
			t.Errorf("%s created at %s, not before %s at %s", order[i-1].what, order[i-1].at, order[i].what, order[i].at)
		}
	}
	for _, o := range order {
		t.Logf("  %-32s created %s", o.what, o.at.Format(time.TimeOnly))
	}
	if err := witnessed(s); err != nil {
		t.Error(err)
	}
	seenByArgoCD(t, "first-sync")
	// The same, assessed by Argo CD's built-in checks alone: argocd-cm
	// without a health key of ours. An ImageConfig has no status, which
	// the built-in check for *.crossplane.io reads as Healthy.
	useHealth(t, builtIn, "every resource Synced and Healthy", func(s argocd.AppStatus) error {
		for _, name := range []string{"tencentcloud-network", "provider-tencentcloud-network-runtime"} {
			if r, ok := s.Resource("ImageConfig", name); !ok || r.Health != "Healthy" {
				return fmt.Errorf("ImageConfig %s not listed Healthy: %s", name, r)
			}
		}
		return syncedHealthy(head)(s)
	})
	seenByArgoCD(t, "first-sync")
}

func podsAddressed(t *testing.T) {
	for i := range replicas {
		name := fmt.Sprintf("gameserver-%d", i)
		b := bound(t, name)
		if want := fmt.Sprintf(":%d", 7000+i); !strings.HasSuffix(b.Address, want) {
			t.Errorf("%s bound at %s, want port %s (Ordinal)", name, b.Address, want)
		}
		tcp, udp, err := deployed.RoundTrip(context.Background(), b.Address, name, wait)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s at %s: TCP %s, UDP %s", name, b.Address, tcp, udp)
	}
}

// bound waits for the PodAddress of Pod name to be Bound and returns its
// one binding.
func bound(t *testing.T, name string) networkv1alpha1.PortBinding {
	t.Helper()
	var b networkv1alpha1.PortBinding
	eventually(t, name+" bound", func() error {
		pa := &networkv1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: games, Name: name}, pa); err != nil {
			return err
		}
		if pa.Status.State != networkv1alpha1.StateBound || len(pa.Status.Bindings) == 0 || pa.Status.Bindings[0].Address == "" {
			return fmt.Errorf("PodAddress %s: %s %s", name, pa.Status.State, pa.Status.Message)
		}
		b = pa.Status.Bindings[0]
		return nil
	})
	return b
}

// lobbyListeners counts the cloud's listeners on the lobby pool's ports.
func lobbyListeners() int {
	n := 0
	for _, lb := range cluster.Cloud.Inventory().LoadBalancers {
		for _, l := range lb.Listeners {
			if l.Port >= 7100 && l.Port < 7200 {
				n++
			}
		}
	}
	return n
}

// gitEdits are the edits of gitops/ the steps have made so far.
func gitEdits() map[string]func(string) string {
	return map[string]func(string) string{
		"statefulset.yaml": func(s string) string {
			return strings.Replace(s, "replicas: 2", fmt.Sprintf("replicas: %d", replicas), 1)
		},
		"lobby.yaml": func(s string) string {
			return strings.Replace(s, "endPort: 7103", fmt.Sprintf("endPort: %d", lobbyEnd), 1)
		},
	}
}

func gitChange(t *testing.T) {
	if n := lobbyListeners(); n != 4 {
		t.Fatalf("%d lobby listeners in the cloud before the change, want 4 (7100-7103)", n)
	}
	began := time.Now()
	replicas, lobbyEnd = 3, 7105
	head = push(t, "a third game server; the lobby pool up to port 7105", tree(t, gitEdits(), nil))
	waitApp(t, "the Application Synced and Healthy at the change", syncedHealthy(head))
	b := bound(t, "gameserver-2")
	if _, _, err := deployed.RoundTrip(context.Background(), b.Address, "gameserver-2", wait); err != nil {
		t.Fatal(err)
	}
	eventually(t, "6 lobby listeners in the cloud", func() error {
		if n := lobbyListeners(); n != 6 {
			return fmt.Errorf("%d lobby listeners", n)
		}
		return nil
	})
	t.Logf("the change reached the cloud in %s: gameserver-2 at %s, 6 lobby listeners", time.Since(began).Round(time.Second), b.Address)
}

// selfHeal turns the Application's self-heal on or off.
func selfHeal(t *testing.T, on bool) {
	t.Helper()
	a := application()
	patch := fmt.Sprintf(`{"spec":{"syncPolicy":{"automated":{"selfHeal":%t}}}}`, on)
	if err := kube.Patch(context.Background(), a, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func drift(t *testing.T) {
	ctx := context.Background()
	// Self-heal off first, so that the drift stays long enough to be seen.
	selfHeal(t, false)
	sts := &appsv1.StatefulSet{}
	eventually(t, "scale the game servers in the cluster", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: games, Name: "gameserver"}, sts); err != nil {
			return err
		}
		sts.Spec.Replicas = ptr.To[int32](int32(replicas) + 1)
		return kube.Update(ctx, sts)
	})
	began := time.Now()
	waitApp(t, "the Application OutOfSync on the StatefulSet", func(s argocd.AppStatus) error {
		r, _ := s.Resource("StatefulSet", "gameserver")
		if s.Sync != "OutOfSync" || r.Sync != "OutOfSync" {
			return fmt.Errorf("not OutOfSync")
		}
		for _, o := range s.Resources {
			if o != r && o.Sync != "Synced" {
				return fmt.Errorf("%s is not Synced", o)
			}
		}
		return nil
	})
	t.Logf("drift seen in %s", time.Since(began).Round(time.Second))
	began = time.Now()
	selfHeal(t, true)
	waitApp(t, "self-heal: Synced and Healthy", syncedHealthy(head))
	eventually(t, "the game servers as Git says, and their PodAddresses", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: games, Name: "gameserver"}, sts); err != nil {
			return err
		}
		var l networkv1alpha1.PodAddressList
		if err := kube.List(ctx, &l, client.InNamespace(games)); err != nil {
			return err
		}
		if *sts.Spec.Replicas != int32(replicas) || len(l.Items) != replicas {
			return fmt.Errorf("%d replicas, %d PodAddresses", *sts.Spec.Replicas, len(l.Items))
		}
		return nil
	})
	t.Logf("self-healed in %s", time.Since(began).Round(time.Second))
}

// brokenCLBPortPool is tke-extend's CLBPortPool that cannot be made into
// a PortPool (a protocol listeners cannot have): the provider says so in
// its status (state Pending, reason Failed), which only our argocd-cm key
// for its group reads.
const brokenCLBPortPool = `apiVersion: networking.cloud.tencent.com/v1alpha1
kind: CLBPortPool
metadata:
  name: broken-tke
  annotations:
    argocd.argoproj.io/sync-wave: "4"
    network.tencentcloud.crossplane.io/pool-protocols: TCP,SCTP
spec:
  startPort: 30000
  exsistedLoadBalancerIDs: [lb-0000dead]
`

// failing is assessed under both health settings: Argo CD's built-in
// checks first (argocd-cm holds them since firstSync), then our snippet.
func failing(t *testing.T) {
	began := time.Now()
	head = push(t, "a pool on a load balancer that does not exist; a CLBPortPool that cannot be made",
		tree(t, gitEdits(), map[string]string{"broken.yaml": brokenPool, "broken-tke.yaml": brokenCLBPortPool}))
	tkeMessage := clbPortPoolFailed(t, "broken-tke")
	// Argo CD has no check for networking.cloud.tencent.com: the
	// CLBPortPool has no health, and does not count in the Application's.
	s := waitApp(t, "the Application Degraded by the broken pool", func(s argocd.AppStatus) error {
		if err := witnessed(s); err != nil {
			return err
		}
		return degradedBy(s, func(r argocd.ResourceStatus) error {
			if r.Health != "" {
				return fmt.Errorf("%s: want no health (no built-in check for its group)", r)
			}
			return nil
		})
	})
	r, _ := s.Resource("PortPool", "broken")
	c, _ := s.Resource("CLBPortPool", "broken-tke")
	t.Logf("Degraded under %s in %s: %s; %s, its status %q", health.name, time.Since(began).Round(time.Second), r, c, tkeMessage)
	seenByArgoCD(t, "failing")
	useHealth(t, snippet, "the Application Degraded by both pools", func(s argocd.AppStatus) error {
		return degradedBy(s, func(r argocd.ResourceStatus) error {
			if r.Health != "Degraded" || r.HealthMessage != tkeMessage {
				return fmt.Errorf("%s: want Degraded (%s)", r, tkeMessage)
			}
			return nil
		})
	})
	seenByArgoCD(t, "failing")
	head = push(t, "the broken pools removed", tree(t, gitEdits(), nil))
	waitApp(t, "pruned: Synced and Healthy again", func(s argocd.AppStatus) error {
		for _, r := range [][2]string{{"PortPool", "broken"}, {"CLBPortPool", "broken-tke"}} {
			if _, ok := s.Resource(r[0], r[1]); ok {
				return fmt.Errorf("%s %s still listed", r[0], r[1])
			}
		}
		return syncedHealthy(head)(s)
	})
}

// degradedBy accepts the Application Synced at head and Degraded, the
// PortPool broken Degraded with the provider's message, the CLBPortPool
// broken-tke as tke says, and every other resource Healthy.
func degradedBy(s argocd.AppStatus, tke func(argocd.ResourceStatus) error) error {
	const want = "no load balancer of the pool can take bindings"
	r, ok := s.Resource("PortPool", "broken")
	if s.Sync != "Synced" || s.Revision != head || s.Health != "Degraded" || !ok || r.Health != "Degraded" || !strings.Contains(r.HealthMessage, want) {
		return fmt.Errorf("not Degraded by PortPool broken with %q", want)
	}
	c, ok := s.Resource("CLBPortPool", "broken-tke")
	if !ok {
		return fmt.Errorf("CLBPortPool broken-tke not listed")
	}
	if err := tke(c); err != nil {
		return err
	}
	for _, o := range s.Resources {
		if o != r && o != c && o.Health != "" && o.Health != "Healthy" {
			return fmt.Errorf("%s is not Healthy", o)
		}
	}
	return nil
}

// clbPortPoolFailed waits for the CLBPortPool name's status to say it
// failed (state Pending, reason Failed) and returns its message.
func clbPortPoolFailed(t *testing.T, name string) string {
	t.Helper()
	var msg string
	eventually(t, "CLBPortPool "+name+" Failed", func() error {
		cpp := &tkev1alpha1.CLBPortPool{}
		if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, cpp); err != nil {
			return err
		}
		if cpp.Status.Reason != tkev1alpha1.ReasonFailed || cpp.Status.Message == nil {
			return fmt.Errorf("CLBPortPool %s: %+v", name, cpp.Status)
		}
		msg = *cpp.Status.Message
		return nil
	})
	return msg
}

func pruneBoundPool(t *testing.T) {
	ctx := context.Background()
	// A Pod not in Git names the lobby pool in its own annotation.
	sts := deployed.GameStatefulSet(games, "gameserver", gameImage, 1)
	holdout := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: games, Name: "lobby-holdout", Labels: map[string]string{"app": "lobby"},
		Annotations: map[string]string{podannotation.AnnotationPorts: fmt.Sprintf("%d/TCP lobby", deployed.GamePort)},
	}}
	holdout.Spec = *sts.Spec.Template.Spec.DeepCopy()
	if err := kube.Create(ctx, holdout); err != nil {
		t.Fatal(err)
	}
	b := bound(t, holdout.Name)
	if name, err := deployed.Ask(ctx, "tcp", b.Address, wait); err != nil || name != holdout.Name {
		t.Fatalf("the holdout's address %s answered by %q (%v)", b.Address, name, err)
	}
	began := time.Now()
	edits := gitEdits()
	edits["lobby.yaml"] = func(string) string { return "" }
	head = push(t, "the lobby pool removed", tree(t, edits, nil))
	progressing := func(s argocd.AppStatus) error {
		if err := witnessed(s); err != nil {
			return err
		}
		r, ok := s.Resource("PortPool", "lobby")
		if !ok || r.Health != "Progressing" {
			return fmt.Errorf("PortPool lobby not listed Progressing")
		}
		return nil
	}
	s := waitApp(t, "the lobby pool being pruned, Progressing while the Pod holds it", progressing)
	r, _ := s.Resource("PortPool", "lobby")
	t.Logf("while the Pod holds it, under %s: %s; Application health %s", health.name, r, s.Health)
	seenByArgoCD(t, "pruned-while-held")
	// The same under Argo CD's built-in checks (argocd-cm holds our
	// snippet since failing); they stay until the end.
	useHealth(t, builtIn, "the lobby pool Progressing while the Pod holds it", progressing)
	seenByArgoCD(t, "pruned-while-held")
	pool := &clbv1alpha1.PortPool{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: games, Name: "lobby"}, pool); err != nil || pool.GetDeletionTimestamp() == nil {
		t.Fatalf("the lobby pool: %v, deleting %t", err, err == nil && pool.GetDeletionTimestamp() != nil)
	}
	if name, err := deployed.Ask(ctx, "tcp", b.Address, wait); err != nil || name != holdout.Name {
		t.Fatalf("while the pool is pruned, the holdout's address %s answered by %q (%v)", b.Address, name, err)
	}
	if err := kube.Delete(ctx, holdout); err != nil {
		t.Fatal(err)
	}
	waitApp(t, "the lobby pool gone: Synced and Healthy", func(s argocd.AppStatus) error {
		for _, k := range []string{"PortPool", "LoadBalancer"} {
			if _, ok := s.Resource(k, "lobby"); ok {
				return fmt.Errorf("%s lobby still listed", k)
			}
		}
		return syncedHealthy(head)(s)
	})
	eventually(t, "no lobby listener nor load balancer in the cloud", func() error {
		if n := lobbyListeners(); n != 0 {
			return fmt.Errorf("%d lobby listeners", n)
		}
		if n := len(cluster.Cloud.Inventory().LoadBalancers); n != 1 {
			return fmt.Errorf("%d load balancers, want the game servers' one", n)
		}
		return nil
	})
	t.Logf("pruned in %s after the Pod held it", time.Since(began).Round(time.Second))
}

func deleteApplication(t *testing.T) {
	ctx := context.Background()
	began := time.Now()
	if err := kube.Delete(ctx, application()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Application gone", func() error {
		s, err := status(ctx)
		if kerrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there: %s", s)
	})
	inv := cluster.Cloud.Inventory()
	if len(inv.LoadBalancers) != 0 || inv.RunningTasks != 0 {
		t.Errorf("%d load balancers (%d listeners) and %d running tasks left in the cloud", len(inv.LoadBalancers), inv.Listeners(), inv.RunningTasks)
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: games}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: xpcluster.Namespace, Name: "tencentcloud-creds"}},
	} {
		err := kube.Get(ctx, client.ObjectKeyFromObject(o), o)
		if _, isSecret := o.(*corev1.Secret); isSecret != (err == nil) {
			t.Errorf("%T %s: %v (the Secret, not Argo CD's, stays; the rest goes)", o, o.GetName(), err)
		}
	}
	t.Logf("Application deleted, the last wave first, the cloud empty, in %s", time.Since(began).Round(time.Second))
}
