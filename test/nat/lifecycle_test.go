package nat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// createPods creates Pods asking for an address in the workload cluster.
func createPods(t *testing.T, ns string, names ...string) {
	t.Helper()
	ensureNamespace(t, workKube, ns)
	for _, n := range names {
		if err := workKube.Create(context.Background(), gamePod(ns, n, "", true)); err != nil {
			t.Fatal(err)
		}
	}
}

// remotePodsOf lists the names of the RemotePods of hub namespace ns that
// mirror Pods of namespace podNS ("" for all). The tests' clusters share one
// workload control plane, so each agent mirrors the other tests' Pods too.
func remotePodsOf(t *testing.T, ns, podNS string) []string {
	t.Helper()
	l := &v1alpha1.RemotePodList{}
	if err := hubKube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rp := range l.Items {
		if rp.GetDeletionTimestamp() == nil && (podNS == "" || rp.Spec.PodNamespace == podNS) {
			out = append(out, rp.Name)
		}
	}
	return out
}

func waitRemotePods(t *testing.T, ns, podNS string, want ...string) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), wait, func() error {
		if got := remotePodsOf(t, ns, podNS); strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("RemotePods %v, want %v", got, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestDisconnectAndGrace: a stopped agent counts as disconnected three
// heartbeats after its last renewal, its Pods keep their RemotePods (and
// so their addresses) for the grace period, and then lose them; the agent
// coming back mirrors them again.
func TestDisconnectAndGrace(t *testing.T) {
	ctx := context.Background()
	ns, name, podNS := "nat-grace", "grace", "grace-games"
	const grace = 8 * time.Second
	newCluster(t, ns, name, grace)
	createPods(t, podNS, "g-0", "g-1")
	a := register(t, ns, name)
	waitRemotePods(t, ns, podNS, podNS+".g-0", podNS+".g-1")
	waitCluster(t, ns, name, "connected, with its Pods", func(wc *v1alpha1.WorkloadCluster) bool {
		return wc.Status.Connected && wc.Status.Pods >= 2
	})

	a.stop()
	stopped := time.Now()
	wc := waitCluster(t, ns, name, "disconnected", func(wc *v1alpha1.WorkloadCluster) bool { return !wc.Status.Connected })
	// Bound: three heartbeats after the last renewal, plus the check.
	if took := time.Since(stopped); took > 3*heartbeat+2*time.Second {
		t.Errorf("disconnect noticed after %s, want within %s", took, 3*heartbeat+2*time.Second)
	}
	if c := wc.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonAgentDisconnected {
		t.Errorf("Ready condition %+v, want False/%s", c, v1alpha1.ReasonAgentDisconnected)
	}
	// Within the grace period the Pods keep their RemotePods.
	if got := remotePodsOf(t, ns, podNS); len(got) != 2 {
		t.Fatalf("RemotePods %v right after the disconnect, want both kept", got)
	}
	waitRemotePods(t, ns, "")
	if took := wc.Status.LastHeartbeat.Add(grace); time.Now().Before(took.Add(-time.Second)) {
		t.Errorf("RemotePods released before the grace period ended (%s)", took)
	}
	if err := testenv.Eventually(ctx, wait, func() error {
		l := &corev1.EventList{}
		if err := hubKube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Name == name && e.Reason == "DisconnectGraceExpired" && strings.Contains(e.Message, "RemotePods, which releases their addresses") {
				return nil
			}
		}
		return fmt.Errorf("no DisconnectGraceExpired Event on the WorkloadCluster")
	}); err != nil {
		t.Error(err)
	}

	// The agent comes back with the token it kept: the Pods are mirrored
	// again and the cluster is connected.
	a.bootstrap = ""
	a.start(t)
	waitRemotePods(t, ns, podNS, podNS+".g-0", podNS+".g-1")
	waitCluster(t, ns, name, "connected again", func(wc *v1alpha1.WorkloadCluster) bool { return wc.Status.Connected && wc.Status.Pods >= 2 })
}

// TestRestartResync: what changed while the agent was down is put right
// when it starts: RemotePods of Pods gone are deleted, Pods created meanwhile
// are mirrored, Pods changed are updated.
func TestRestartResync(t *testing.T) {
	ctx := context.Background()
	ns, name, podNS := "nat-resync", "resync", "resync-games"
	newCluster(t, ns, name, 0)
	createPods(t, podNS, "stays", "goes", "changes")
	a := register(t, ns, name)
	waitRemotePods(t, ns, podNS, podNS+".changes", podNS+".goes", podNS+".stays")
	a.stop()

	// Unschedule Pods are deleted at once (no kubelet to wait for).
	if err := workKube.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: "goes"}}); err != nil {
		t.Fatal(err)
	}
	createPods(t, podNS, "new")
	p := &corev1.Pod{}
	if err := workKube.Get(ctx, client.ObjectKey{Namespace: podNS, Name: "changes"}, p); err != nil {
		t.Fatal(err)
	}
	p.Labels["tier"] = "gold"
	if err := workKube.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	// A RemotePod of this cluster for a Pod that never existed.
	stray := remotePod(ns, podNS+".never")
	stray.Spec.Cluster, stray.Spec.PodNamespace, stray.Spec.PodName = name, podNS, "never"
	if err := hubKube.Create(ctx, stray); err != nil {
		t.Fatal(err)
	}

	a.bootstrap = "" // restarts with the token it kept
	a.start(t)
	waitRemotePods(t, ns, podNS, podNS+".changes", podNS+".new", podNS+".stays")
	waitRemotePod(t, ns, podNS, "changes", "the changed Pod is updated", func(rp *v1alpha1.RemotePod) error {
		if rp.Spec.Labels["tier"] != "gold" {
			return fmt.Errorf("labels %v", rp.Spec.Labels)
		}
		return nil
	})
}

// TestDeleteWorkloadCluster: deleting a WorkloadCluster deletes its
// RemotePods and the agent's identities; the agent's token stops working.
func TestDeleteWorkloadCluster(t *testing.T) {
	ctx := context.Background()
	ns, name, podNS := "nat-delete", "delete", "delete-games"
	wc := newCluster(t, ns, name, 0)
	createPods(t, podNS, "d-0")
	a := register(t, ns, name)
	waitRemotePods(t, ns, podNS, podNS+".d-0")
	tok := a.token(t)
	a.stop()

	if err := hubKube.Delete(ctx, wc); err != nil {
		t.Fatal(err)
	}
	if err := testenv.Eventually(ctx, wait, func() error {
		switch err := hubKube.Get(ctx, client.ObjectKeyFromObject(wc), &v1alpha1.WorkloadCluster{}); {
		case kerrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return errors.New("the WorkloadCluster is still there")
	}); err != nil {
		t.Fatal(err)
	}
	if got := remotePodsOf(t, ns, ""); len(got) != 0 {
		t.Errorf("RemotePods %v left", got)
	}
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AgentServiceAccount(name)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.BootstrapServiceAccount(name)}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AgentServiceAccount(name)}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.BootstrapServiceAccount(name)}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AgentLease(name)}},
	} {
		if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, o); !kerrors.IsNotFound(err) {
			t.Errorf("%T %s: %v, want NotFound", o, o.GetName(), err)
		}
	}
	// The token was bound to the deleted ServiceAccount, whose rights
	// are gone: refused, as unauthenticated or (while the API server's
	// ServiceAccount cache lags) forbidden.
	err := hubClient(t, withToken(tok)).List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace(ns))
	if !kerrors.IsUnauthorized(err) && !kerrors.IsForbidden(err) {
		t.Errorf("the deleted agent's token: %v, want Unauthorized or Forbidden", err)
	}
}

// TestAgentProcess: the agent binary, run with the flags of the example
// Deployment (examples/nat/agent.yaml, its paths pointed at the test's
// files), registers the example WorkloadCluster with a bootstrap token
// file and a hub kubeconfig holding only the server and CA, and mirrors a
// Pod.
func TestAgentProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin, err := testenv.BuildAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(testenv.RepoRoot(), "examples", "nat")
	objs, err := testenv.Apply(ctx, hubKube, filepath.Join(root, "workloadcluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ns, name string
	for _, o := range objs {
		if o.GetKind() == v1alpha1.WorkloadClusterKind {
			ns, name = o.GetNamespace(), o.GetName()
		}
	}
	// The Deployment and its ConfigMap are valid objects of a cluster.
	if _, err := testenv.Apply(ctx, workKube, filepath.Join(root, "agent.yaml")); err != nil {
		t.Fatal(err)
	}
	if name == "" {
		t.Fatal("no WorkloadCluster in examples/nat/workloadcluster.yaml")
	}
	if err := testenv.Eventually(ctx, wait, func() error {
		return hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.BootstrapServiceAccount(name)}, &corev1.ServiceAccount{})
	}); err != nil {
		t.Fatal(err)
	}
	podNS := "process-games"
	createPods(t, podNS, "p-0")

	hubKC := clientcmdapi.NewConfig()
	hubKC.Clusters["hub"] = &clientcmdapi.Cluster{Server: hub.Config.Host, CertificateAuthorityData: hub.Config.CAData}
	hubKC.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub"}
	hubKC.CurrentContext = "hub"
	files := map[string][]byte{"bootstrap": []byte(bootstrapToken(t, ns, name)), "workload": agentKubeconfig(t)}
	if files["hub"], err = clientcmd.Write(*hubKC); err != nil {
		t.Fatal(err)
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	health, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// The example's flags, with the test's paths and addresses.
	run := append([]string{"--kubeconfig", filepath.Join(dir, "workload"), "--heartbeat-interval", "1s"}, exampleAgentArgs(t, map[string]string{
		"--hub-kubeconfig": filepath.Join(dir, "hub"), "--bootstrap-token-file": filepath.Join(dir, "bootstrap"),
		"--token-file": filepath.Join(dir, "token"), "--health-probe-bind-address": health,
	})...)
	p, err := testenv.StartProcess(dir, "agent", bin, nil, run...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if t.Failed() {
			if out, err := os.ReadFile(p.Log); err == nil {
				t.Logf("agent log:\n%s", out)
			}
		}
	})
	if err := p.WaitHTTP(ctx, "http://"+health+"/readyz", wait); err != nil {
		t.Fatal(err)
	}
	waitRemotePods(t, ns, podNS, podNS+".p-0")
	waitCluster(t, ns, name, "connected", func(wc *v1alpha1.WorkloadCluster) bool { return wc.Status.Connected })
}

// agentKubeconfig is a kubeconfig of the workload cluster that acts as the
// agent's ServiceAccount there (impersonated by the admin's certificate).
func agentKubeconfig(t *testing.T) []byte {
	t.Helper()
	kc, err := clientcmd.Load(workload.KubeConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = agentLocal.Impersonate.UserName
	}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
