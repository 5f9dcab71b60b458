package nat

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// e2eWait bounds every poll of TestEndToEnd: two processes and an
// emulator on a shared machine.
const e2eWait = 2 * time.Minute

// TestEndToEnd is issue 16's acceptance, with real processes: the provider
// binary, given only the management cluster's kubeconfig (as its
// ServiceAccount with examples/provider/rbac), serves a PortPool over
// an emulator load balancer whose data plane forwards for real; the agent
// binary, run with the example Deployment's flags, a bootstrap token made
// as docs/nat-clusters.md says and exactly agent-rbac.yaml in the workload
// cluster, mirrors three StatefulSet Pods whose "Pod IPs" are loopback
// addresses with an echo server on them. The Pods are told their addresses
// and a TCP round trip through each address reaches its Pod's process. A
// killed agent: the cluster is disconnected, the addresses keep working
// for the grace period and are released after it; the agent restarted
// serves the Pods again; Pods deleted lose their targets. Throughout, the
// workload API server sees no request for anything of the provider's.
// That one cluster's agent cannot read another's objects is
// TestClustersCannotSeeEachOther's.
func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	const (
		ns, name, podNS = "cluster-e2e", "e2e", "e2e-games"
		grace           = 30 * time.Second
		pods            = 3
		containerPort   = 7777
	)
	pauseProvider(t)
	dir := t.TempDir()
	providerBin, err := testenv.BuildProvider(dir)
	if err != nil {
		t.Fatal(err)
	}
	agentBin, err := testenv.BuildAgent(dir)
	if err != nil {
		t.Fatal(err)
	}

	// The cloud, with a data plane: a VIP:port forwards to its targets.
	plane := dataplane.New(t.Logf)
	t.Cleanup(func() { _ = plane.Close() })
	emu := e2eCloud(t, func(c *emulator.Config) {
		c.DataPlane = dataplane.ForEmulator(plane)
		c.VIPBase = "127.76.0.1"
	})

	// Everything the workload API server serves from here on is counted.
	workBefore, err := testenv.ScrapeAPIRequests(ctx, workload.Config)
	if err != nil {
		t.Fatal(err)
	}

	// The provider binary, with the hub's kubeconfig as its ServiceAccount
	// and nothing else: it has no credentials for the workload cluster.
	prov := testenv.RunProvider(t, providerKubeconfig(t), providerBin, "management", "--poll", "5s")
	if err := prov.Ready(ctx, e2eWait); err != nil {
		t.Fatal(err)
	}
	onlyHub(t, prov.PID())
	releaseAll(t, ns, podNS)

	newCluster(t, ns, name, grace)
	e2ePool(t, ns)

	// The workload cluster: a StatefulSet's Pods asking for a pool port,
	// each with a process on its (loopback) Pod IP. No StatefulSet
	// controller runs here; the test creates its Pods as it would.
	ensureNamespace(t, workKube, podNS)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: "room"}}
	sts.Spec.Replicas = ptr.To[int32](pods)
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "room"}}
	sts.Spec.Template.Labels = map[string]string{"app": "room"}
	sts.Spec.Template.Spec.Containers = []corev1.Container{{Name: "server", Image: "example/server"}}
	if err := workKube.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	ips := make([]string, pods)
	for i := range pods {
		ips[i] = fmt.Sprintf("127.77.0.%d", i+1)
		name := fmt.Sprintf("room-%d", i)
		testenv.StartEcho(t, name, net.JoinHostPort(ips[i], fmt.Sprint(containerPort)))
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: podNS, Name: name, Labels: map[string]string{"app": "room"},
			Annotations:     map[string]string{podannotation.AnnotationPorts: fmt.Sprintf("%d pool", containerPort)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true)}},
		}}
		p.Spec.Containers = []corev1.Container{{Name: "server", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: containerPort, Protocol: corev1.ProtocolTCP}}}}
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}}
		if err := workKube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	wantTargets := make([]string, pods)
	for i, ip := range ips {
		wantTargets[i] = net.JoinHostPort(ip, fmt.Sprint(containerPort))
	}

	// The agent, registered with a bootstrap token.
	agent := e2eAgent(t, dir, agentBin, hub.Config.Host, ns, name)
	agent.start(t)
	waitCluster(t, ns, name, "connected", func(wc *v1alpha1.WorkloadCluster) bool { return wc.Status.Connected })

	// The kubelet's part: each Pod gets its IP. Time to its address.
	start := time.Now()
	for i, ip := range ips {
		setRunning(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: fmt.Sprintf("room-%d", i)}}, ip, false)
	}
	addrs, bound := served(t, ns, podNS, pods)
	t.Logf("Pod IP to address on the workload Pod: %s for %d Pods (agent → hub → provider → cloud → hub → agent)", time.Since(start).Round(time.Millisecond), pods)
	targetsAre(t, emu, "the Pods' targets", wantTargets)
	roundTrips(t, addrs)
	waitCluster(t, ns, name, "serving its Pods", func(wc *v1alpha1.WorkloadCluster) bool {
		return wc.Status.Connected && wc.Status.Pods == pods && wc.Status.PodsServed == pods
	})

	// The agent is killed: disconnected, but addresses kept for the grace.
	agent.proc.Kill()
	killed := time.Now()
	wc := &v1alpha1.WorkloadCluster{}
	poll(t, "the cluster disconnected", func() error {
		if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, wc); err != nil {
			return err
		}
		if c := wc.Status.GetCondition(xpv2.TypeReady); wc.Status.Connected || c.Reason != v1alpha1.ReasonAgentDisconnected {
			return fmt.Errorf("connected %t, Ready %s/%s", wc.Status.Connected, c.Status, c.Reason)
		}
		return nil
	})
	releaseAt := wc.Status.LastHeartbeat.Add(grace)
	t.Logf("agent killed: disconnected after %s; addresses kept until %s after its last heartbeat", time.Since(killed).Round(time.Millisecond), grace)
	if got := remotePodsOf(t, ns, podNS); len(got) != pods {
		t.Errorf("RemotePods %v within the grace period, want all %d kept", got, pods)
	}
	targetsAre(t, emu, "the targets within the grace period", wantTargets)
	roundTrips(t, addrs)
	if time.Now().After(releaseAt) {
		t.Errorf("the checks within the grace period ended after it (%s); the machine is too slow for this grace", releaseAt)
	}

	// After the grace period: RemotePods deleted, addresses released.
	waitRemotePodsWithin(t, ns, podNS, e2eWait)
	if now := time.Now(); now.Before(releaseAt.Add(-time.Second)) {
		t.Errorf("RemotePods released at %s, before the grace period ended (%s)", now, releaseAt)
	}
	targetsAre(t, emu, "no targets after the grace period", nil)
	t.Logf("released %s after the last heartbeat (grace %s)", time.Since(wc.Status.LastHeartbeat.Time).Round(time.Millisecond), grace)

	// The agent restarts with the token it kept: the Pods are served again,
	// by new PodAddresses (the released ones may not be gone yet).
	agent.start(t)
	before := addrs
	addrs, _ = served(t, ns, podNS, pods, bound...)
	t.Logf("addresses before the release %v, after the agent came back %v", before, addrs)
	targetsAre(t, emu, "the Pods' targets after the agent came back", wantTargets)
	roundTrips(t, addrs)

	// The Pods are deleted: their targets go.
	for i := range pods {
		if err := workKube.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: fmt.Sprintf("room-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	waitRemotePodsWithin(t, ns, podNS, e2eWait)
	targetsAre(t, emu, "no targets once the Pods are deleted", nil)
	poll(t, "the PodAddresses gone", func() error {
		l := &v1alpha1.PodAddressList{}
		if err := hubKube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return fmt.Errorf("%d PodAddresses left", len(l.Items))
		}
		return nil
	})

	noProviderRequests(t, workBefore)
}

// e2ePool creates, in hub namespace ns, a LoadBalancer and the PortPool
// "pool" (ports 47000-47009) on it, and waits for its listeners.
func e2ePool(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	lb := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lb"}}
	lb.Spec.ForProvider.Type = ptr.To("OPEN")
	if err := hubKube.Create(ctx, lb); err != nil {
		t.Fatal(err)
	}
	pp := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"}}
	pp.Spec.ForProvider.StartPort, pp.Spec.ForProvider.EndPort = 47000, 47009
	pp.Spec.ForProvider.LoadBalancerIDRefs = []xpv2.NamespacedReference{{Name: lb.Name}}
	if err := hubKube.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	poll(t, "the pool's listeners on its load balancer", func() error {
		if err := hubKube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		lbs := pp.Status.AtProvider.LoadBalancers
		if len(lbs) != 1 || lbs[0].State != clbv1alpha1.PoolLBReady || lbs[0].ListenersReady != lbs[0].ListenersWanted {
			return fmt.Errorf("load balancers %+v", lbs)
		}
		return nil
	})
}

// releaseAll, registered once the provider is ready (so run before it
// stops and before the emulator closes, cleanups running last first, and
// after the agents stop), deletes what the test made: the Pods and
// StatefulSets of podNS, and in hub namespace ns the WorkloadCluster (which
// releases its RemotePods), the PortPools and the LoadBalancers; and waits
// until the provider let them all go. Left behind by a failed test they
// follow ClusterProviderConfig "default" to the next test's emulator: the
// next provider makes the load balancer again there and registers the old
// Pods' targets among that test's own.
func releaseAll(t *testing.T, ns, podNS string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		for _, o := range []client.Object{&corev1.Pod{}, &appsv1.StatefulSet{}} {
			if err := workKube.DeleteAllOf(ctx, o, client.InNamespace(podNS)); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		for _, o := range []client.Object{&v1alpha1.WorkloadCluster{}, &clbv1alpha1.PortPool{}, &clbv1alpha1.LoadBalancer{}} {
			if err := hubKube.DeleteAllOf(ctx, o, client.InNamespace(ns)); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		lists := map[string]client.ObjectList{
			"Pods": &corev1.PodList{}, "StatefulSets": &appsv1.StatefulSetList{},
			"WorkloadClusters": &v1alpha1.WorkloadClusterList{}, "RemotePods": &v1alpha1.RemotePodList{}, "PodAddresses": &v1alpha1.PodAddressList{},
			"PortPools": &clbv1alpha1.PortPoolList{}, "LoadBalancers": &clbv1alpha1.LoadBalancerList{},
		}
		if err := testenv.Eventually(ctx, e2eWait, func() error {
			for kind, l := range lists {
				kube, in := hubKube, ns
				if kind == "Pods" || kind == "StatefulSets" {
					kube, in = workKube, podNS
				}
				if err := kube.List(ctx, l, client.InNamespace(in)); err != nil {
					return err
				}
				if n := meta.LenList(l); n > 0 {
					return fmt.Errorf("%d %s left in %s", n, kind, in)
				}
			}
			return nil
		}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

func poll(t *testing.T, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), e2eWait, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// e2eCloud starts an emulator whose provider may do what README's CAM
// policy allows, and points ClusterProviderConfig "default" of the hub at
// it (examples/providerconfig).
func e2eCloud(t *testing.T, mod func(*emulator.Config)) *emulator.Emulator {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), "examples", "providerconfig")
	cfg, err := emulatortest.WithPolicyFile(emulator.DefaultConfig(), filepath.Join(dir, "cam-policy.json"),
		emulator.Credential{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey})
	if err != nil {
		t.Fatal(err)
	}
	cfg.TaskDuration = 20 * time.Millisecond
	mod(&cfg)
	emu, endpoint, err := emulator.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r := emulatortest.Refused(emu, emulator.DefaultSecretID); len(r) > 0 {
			t.Errorf("the CAM policy README documents refused calls of the provider: %v", r)
		}
		_ = emu.Close()
	})
	for _, f := range []string{"secret.yaml", "clusterproviderconfig.yaml"} {
		objs, err := testenv.Apply(context.Background(), hubKube, filepath.Join(dir, f), testenv.WithEndpoint(endpoint), testenv.ServingAll)
		if err != nil {
			t.Fatal(err)
		}
		// Apply leaves an existing object alone: a config of an earlier
		// test in this control plane still names that test's emulator.
		for _, o := range objs {
			if o.GetKind() != "ClusterProviderConfig" {
				continue
			}
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(o.GroupVersionKind())
			if err := hubKube.Get(context.Background(), client.ObjectKeyFromObject(o), cur); err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(cur.Object, endpoint, "spec", "endpoint", "host"); err != nil {
				t.Fatal(err)
			}
			if err := hubKube.Update(context.Background(), cur); err != nil {
				t.Fatal(err)
			}
		}
	}
	return emu
}

// providerKubeconfig is the hub's kubeconfig acting as the provider's
// ServiceAccount (impersonated by the admin's certificate): the one
// kubeconfig the provider process gets.
func providerKubeconfig(t *testing.T) []byte {
	t.Helper()
	kc, err := clientcmd.Load(hub.KubeConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = providerCfg.Impersonate.UserName
	}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// onlyHub checks, from /proc, that the provider process knows of no API
// server but the hub: its --kubeconfig names only the hub's server, no
// flag or environment variable mentions the workload's, and KUBECONFIG is
// not set (the flag wins over it, but it could name a second file).
func onlyHub(t *testing.T, pid int) {
	t.Helper()
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	workHost := hostOf(t, workload.Config.Host)
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	var kubeconfigs []string
	for i, a := range args {
		if strings.Contains(a, workHost) {
			t.Errorf("the provider's argument %q names the workload API server %s", a, workHost)
		}
		if a == "--kubeconfig" && i+1 < len(args) {
			kubeconfigs = append(kubeconfigs, args[i+1])
		}
	}
	for _, e := range strings.Split(string(environ), "\x00") {
		if strings.Contains(e, workHost) || strings.HasPrefix(e, "KUBECONFIG=") {
			t.Errorf("the provider's environment holds %q", e)
		}
	}
	if len(kubeconfigs) != 1 {
		t.Fatalf("the provider's --kubeconfig flags %v, want one", kubeconfigs)
	}
	kc, err := clientcmd.LoadFromFile(kubeconfigs[0])
	if err != nil {
		t.Fatal(err)
	}
	for n, c := range kc.Clusters {
		if got, want := hostOf(t, c.Server), hostOf(t, hub.Config.Host); got != want {
			t.Errorf("the provider's kubeconfig has cluster %s at %s, want only the hub %s", n, got, want)
		}
	}
}

func hostOf(t *testing.T, server string) string {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		t.Fatalf("server %q: %v", server, err)
	}
	return u.Host
}

// noProviderRequests fails if the workload API server served, since
// before, any request for the provider's kinds (every CRD of the package),
// CRDs or Secrets: what a provider pointed at it would list and watch
// first. The agent there reads only Pods and Nodes and writes Pods and
// Events.
func noProviderRequests(t *testing.T, before testenv.APIRequests) {
	t.Helper()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := hubKube.List(context.Background(), crds); err != nil {
		t.Fatal(err)
	}
	deny := map[string]bool{"customresourcedefinitions": true, "secrets": true}
	for _, c := range crds.Items {
		deny[c.Spec.Names.Plural] = true
	}
	now, err := testenv.ScrapeAPIRequests(context.Background(), workload.Config)
	if err != nil {
		t.Fatal(err)
	}
	got := now.Sub(before)
	t.Logf("requests the workload API server served during the test:\n%s", got)
	if n := got.Count(func(r testenv.APIRequest) bool { return deny[r.Resource] }); n != 0 {
		t.Errorf("the workload API server served %g requests for the provider's kinds, CRDs or Secrets", n)
	}
	// The counts are not blind: the agent's own traffic is there.
	if got.Count(func(r testenv.APIRequest) bool { return r.Resource == "pods" && r.Verb == "PATCH" }) == 0 {
		t.Error("no Pod patch counted on the workload API server: the scrape sees nothing")
	}
}

// A processAgent is the agent binary of one cluster, run with the flags of
// examples/nat/agent.yaml (paths and names pointed at the test's).
type processAgent struct {
	dir, bin string
	args     []string
	proc     *testenv.Process
}

// server is the hub API server's address as the agent reaches it.
func e2eAgent(t *testing.T, dir, bin, server, ns, name string) *processAgent {
	t.Helper()
	hubKC := clientcmdapi.NewConfig()
	hubKC.Clusters["hub"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: hub.Config.CAData}
	hubKC.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub"}
	hubKC.CurrentContext = "hub"
	hubFile, err := clientcmd.Write(*hubKC)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"hub": hubFile, "bootstrap": []byte(bootstrapToken(t, ns, name)), "workload": agentKubeconfig(t)}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := exampleAgentArgs(t, map[string]string{
		"--hub-kubeconfig": filepath.Join(dir, "hub"), "--bootstrap-token-file": filepath.Join(dir, "bootstrap"),
		"--token-file": filepath.Join(dir, "token"), "--health-probe-bind-address": "0",
		"--cluster-name": name, "--hub-namespace": ns,
	})
	return &processAgent{dir: dir, bin: bin, args: append([]string{"--kubeconfig", filepath.Join(dir, "workload"), "--heartbeat-interval", "1s"}, args...)}
}

// start runs the agent until the test ends (or Kill).
func (a *processAgent) start(t *testing.T) {
	t.Helper()
	p, err := testenv.StartProcess(a.dir, "agent", a.bin, nil, a.args...)
	if err != nil {
		t.Fatal(err)
	}
	a.proc = p
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if t.Failed() {
			if out, err := os.ReadFile(p.Log); err == nil {
				t.Logf("agent log %s:\n%s", p.Log, tail(out))
			}
		}
	})
}

func tail(b []byte) []byte {
	const n = 6000
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// exampleAgentArgs are the args of the example Deployment's container,
// with the values of local's flags replaced.
func exampleAgentArgs(t *testing.T, local map[string]string) []string {
	t.Helper()
	objs, err := testenv.ReadYAML(filepath.Join(testenv.RepoRoot(), "examples", "nat", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, a := range cs[0].(map[string]any)["args"].([]any) { //nolint:forcetypeassert // the example's shape
			a := a.(string) //nolint:forcetypeassert // args are strings
			flag, _, _ := strings.Cut(a, "=")
			if v, ok := local[flag]; ok {
				a = flag + "=" + v
			}
			args = append(args, a)
		}
	}
	if len(args) == 0 {
		t.Fatal("no agent args in examples/nat/agent.yaml")
	}
	return args
}

// served waits until every Pod room-<i> of podNS carries the address its
// PodAddress in hub namespace ns is bound to (our annotation, status
// Ready) and the address condition True, and returns the addresses and
// the PodAddresses. The PodAddress must be live and none of released,
// those of before a release: a released one lingers, being deleted and
// still Bound, until its targets are gone, and a Pod's annotations outlive
// the release while its agent is away, so the two agree on the old
// address until the agent tells the new one. All Pods are read in each
// poll, so what is returned is one moment's; that no two of them hold one
// address is then asserted, not waited for.
func served(t *testing.T, ns, podNS string, n int, released ...*v1alpha1.PodAddress) ([]string, []*v1alpha1.PodAddress) {
	t.Helper()
	ctx := context.Background()
	addrs := make([]string, n)
	pas := make([]*v1alpha1.PodAddress, n)
	poll(t, fmt.Sprintf("%d Pods told their addresses", n), func() error {
		for i := range n {
			name := fmt.Sprintf("room-%d", i)
			pa := &v1alpha1.PodAddress{}
			if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.RemotePodName(podNS, name)}, pa); err != nil {
				return err
			}
			if slices.ContainsFunc(released, func(r *v1alpha1.PodAddress) bool { return r.UID == pa.UID }) || pa.DeletionTimestamp != nil {
				return fmt.Errorf("%s: PodAddress %s is a released one (being deleted: %t)", name, pa.UID, pa.DeletionTimestamp != nil)
			}
			if pa.Status.State != v1alpha1.StateBound || len(pa.Status.Bindings) != 1 {
				return fmt.Errorf("%s: PodAddress %s, bindings %+v", name, pa.Status.State, pa.Status.Bindings)
			}
			p := &corev1.Pod{}
			if err := workKube.Get(ctx, client.ObjectKey{Namespace: podNS, Name: name}, p); err != nil {
				return err
			}
			if s := p.Annotations[podannotation.AnnotationStatus]; s != "Ready" {
				return fmt.Errorf("%s: status annotation %q", name, s)
			}
			var res []podannotation.Address
			if err := json.Unmarshal([]byte(p.Annotations[podannotation.AnnotationAddresses]), &res); err != nil {
				return fmt.Errorf("%s: addresses annotation: %w", name, err)
			}
			if len(res) != 1 || res[0].Address != pa.Status.Bindings[0].Address {
				return fmt.Errorf("%s: addresses annotation %+v, want the binding's %s", name, res, pa.Status.Bindings[0].Address)
			}
			ci := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == podannotation.ConditionAddressReady })
			if ci < 0 || p.Status.Conditions[ci].Status != corev1.ConditionTrue {
				return fmt.Errorf("%s: conditions %+v, want %s True", name, p.Status.Conditions, podannotation.ConditionAddressReady)
			}
			addrs[i], pas[i] = res[0].Address, pa
		}
		return nil
	})
	for i := range addrs {
		if j := slices.Index(addrs[:i], addrs[i]); j >= 0 {
			t.Errorf("room-%d and room-%d are both told %s (PodAddresses %s and %s)", j, i, addrs[i], pas[j].UID, pas[i].UID)
		}
	}
	noSharedSlot(t, ns)
	return addrs, pas
}

// noSharedSlot fails if two live PodAddresses of hub namespace ns record
// the same port of a load balancer: the allocator never gives one to two.
// A PodAddress being deleted is left out: its ports go back to the pool
// before its finalizer does.
func noSharedSlot(t *testing.T, ns string) {
	t.Helper()
	l := &v1alpha1.PodAddressList{}
	if err := hubKube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	holder := map[string]string{}
	for _, pa := range l.Items {
		if pa.DeletionTimestamp != nil {
			continue
		}
		for _, b := range pa.RecordedBindings() {
			slot := fmt.Sprintf("%s:%d", b.LoadBalancerID, b.Port)
			if h, ok := holder[slot]; ok {
				t.Errorf("port %s is recorded by PodAddresses %s and %s", slot, h, pa.Name)
			}
			holder[slot] = pa.Name
		}
	}
}

// targetsAre waits until the emulator's targets, over every listener, are
// want ("ip:port", any order; nil for none).
func targetsAre(t *testing.T, emu *emulator.Emulator, what string, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	poll(t, what, func() error {
		var got []string
		for _, lb := range emu.Inventory().LoadBalancers {
			for _, l := range lb.Listeners {
				for _, tg := range l.Targets {
					got = append(got, net.JoinHostPort(tg.IP, fmt.Sprint(tg.Port)))
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("targets %v, want %v", got, want)
		}
		return nil
	})
}

// roundTrips waits for a round trip through each address, addrs[i] being
// room-i's, to be answered by its own Pod's process.
func roundTrips(t *testing.T, addrs []string) {
	t.Helper()
	for i, addr := range addrs {
		poll(t, "a round trip through "+addr, func() error {
			got, err := testenv.RoundTrip(addr, "ping "+addr)
			if err != nil {
				return err
			}
			if want := fmt.Sprintf("room-%d", i); got != want {
				return fmt.Errorf("answered by %s, want %s", got, want)
			}
			return nil
		})
	}
}

// waitRemotePodsWithin waits until hub namespace ns has no RemotePod of
// Pods of podNS.
func waitRemotePodsWithin(t *testing.T, ns, podNS string, d time.Duration) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), d, func() error {
		if got := remotePodsOf(t, ns, podNS); len(got) != 0 {
			return fmt.Errorf("RemotePods %v", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
