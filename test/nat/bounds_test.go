package nat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// refusedOrUnknown fails unless err is the API server refusing a token:
// unauthenticated, or (while its ServiceAccount cache lags) forbidden.
func refusedOrUnknown(t *testing.T, what string, err error) {
	t.Helper()
	if !kerrors.IsUnauthorized(err) && !kerrors.IsForbidden(err) {
		t.Errorf("%s: %v, want Unauthorized or Forbidden", what, err)
	}
}

// TestOutOfBounds runs the provider binary and the real agent: of two Pods
// asking for a pool port, the one whose IP is inside the cluster's
// podCIDRs is bound; the other is refused before any binding, its Pod told
// so (address condition False OutOfClusterBounds, a Warning Event) and
// nothing registered in the cloud for it. Then the agent's token, used
// directly as a compromised agent would, writes a RemotePod that puts a
// database's address behind the pool: refused the same way.
func TestOutOfBounds(t *testing.T) {
	ctx := context.Background()
	const ns, name, podNS = "cluster-bounds", "bounds", "bounds-games"
	pauseProvider(t)
	dir := t.TempDir()
	providerBin, err := testenv.BuildProvider(dir)
	if err != nil {
		t.Fatal(err)
	}
	emu := e2eCloud(t, func(*emulator.Config) {})
	prov := testenv.RunProvider(t, providerKubeconfig(t), providerBin, "management", "--poll", "5s")
	if err := prov.Ready(ctx, e2eWait); err != nil {
		t.Fatal(err)
	}
	releaseAll(t, ns, podNS)
	newCluster(t, ns, name, 0, func(wc *v1alpha1.WorkloadCluster) {
		wc.Spec.PodCIDRs, wc.Spec.NodeCIDRs = []string{"10.80.0.0/24"}, []string{"10.81.0.0/24"}
	})
	e2ePool(t, ns)

	ensureNamespace(t, workKube, podNS)
	ips := map[string]string{"in": "10.80.0.1", "out": "10.99.0.1"}
	for pod := range ips {
		p := gamePod(podNS, pod, "", false)
		p.Annotations = map[string]string{podannotation.AnnotationPorts: "7777 pool"}
		p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolTCP
		if err := workKube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	a := register(t, ns, name)
	waitCluster(t, ns, name, "connected", func(wc *v1alpha1.WorkloadCluster) bool { return wc.Status.Connected })
	for pod, ip := range ips {
		setRunning(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: pod}}, ip, false)
	}

	poll(t, "the Pod within bounds bound", func() error {
		pa := &v1alpha1.PodAddress{}
		if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.RemotePodName(podNS, "in")}, pa); err != nil {
			return err
		}
		if pa.Status.State != v1alpha1.StateBound {
			return fmt.Errorf("PodAddress %s: %s", pa.Status.State, pa.Status.Message)
		}
		return nil
	})
	want := "spec.podIP 10.99.0.1 is outside the podCIDRs of WorkloadCluster bounds (10.80.0.0/24)"
	poll(t, "the Pod out of bounds told why", func() error {
		p := &corev1.Pod{}
		if err := workKube.Get(ctx, client.ObjectKey{Namespace: podNS, Name: "out"}, p); err != nil {
			return err
		}
		var c *corev1.PodCondition
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == podannotation.ConditionAddressReady {
				c = &p.Status.Conditions[i]
			}
		}
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != "OutOfClusterBounds" || c.Message != want {
			return fmt.Errorf("address condition %+v", c)
		}
		if _, ok := p.Annotations[podannotation.AnnotationAddresses]; ok {
			return fmt.Errorf("the refused Pod carries an address: %v", p.Annotations)
		}
		evs := &corev1.EventList{}
		if err := workKube.List(ctx, evs, client.InNamespace(podNS)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "out" && e.Type == corev1.EventTypeWarning && e.Reason == "OutOfClusterBounds" && e.Message == want {
				return nil
			}
		}
		return fmt.Errorf("no Warning Event OutOfClusterBounds on the Pod")
	})
	if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.RemotePodName(podNS, "out")}, &v1alpha1.PodAddress{}); !kerrors.IsNotFound(err) {
		t.Errorf("a PodAddress for the refused Pod (%v)", err)
	}
	targetsAre(t, emu, "only the Pod within bounds in the cloud", []string{"10.80.0.1:7777"})

	// A compromised agent: its token, used directly, puts a database's
	// address behind the pool. The agent is stopped first: it would delete
	// a RemotePod of no Pod of its cluster.
	tok := a.token(t)
	a.stop()
	ac := hubClient(t, withToken(tok))
	evil := &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.RemotePodName("evil", "db")},
		Spec: v1alpha1.RemotePodSpec{Cluster: name, PodNamespace: "evil", PodName: "db", PodUID: "evil-db",
			Annotations: map[string]string{podannotation.AnnotationPorts: "3306 pool"},
			Containers:  []v1alpha1.RemoteContainer{{Name: "db", Ports: []corev1.ContainerPort{{ContainerPort: 3306, Protocol: corev1.ProtocolTCP}}}},
			PodIP:       "10.0.0.5", PodIPs: []string{"10.0.0.5"}, Ready: true}}
	if err := ac.Create(ctx, evil); err != nil {
		t.Fatal(err)
	}
	poll(t, "the database's RemotePod refused", func() error {
		if err := hubKube.Get(ctx, client.ObjectKeyFromObject(evil), evil); err != nil {
			return err
		}
		if w := evil.Status.Warning; w == nil || w.Reason != "OutOfClusterBounds" ||
			w.Message != "spec.podIP 10.0.0.5 is outside the podCIDRs of WorkloadCluster bounds (10.80.0.0/24)" {
			return fmt.Errorf("warning %+v", w)
		}
		return nil
	})
	if err := hubKube.Get(ctx, client.ObjectKeyFromObject(evil), &v1alpha1.PodAddress{}); !kerrors.IsNotFound(err) {
		t.Errorf("a PodAddress for the database (%v)", err)
	}
	targetsAre(t, emu, "the database not in the cloud", []string{"10.80.0.1:7777"})
}

// TestSuspend: spec.suspend revokes a running agent at once: its
// ServiceAccounts, Roles, RoleBindings and token Secret are deleted, its
// token is refused by the API server, the cluster's RemotePods are deleted
// (no grace period) and the running agent cannot write them again (its
// rights go at once; its token is Unauthorized once the API server's 10 s
// cache of successful authentications lets it go). The
// WorkloadCluster says Suspended. Resumed, the identities are new: the old
// token stays refused and a new bootstrap token registers the agent again.
func TestSuspend(t *testing.T) {
	ctx := context.Background()
	ns, name, podNS := "nat-suspend", "suspend", "suspend-games"
	wc := newCluster(t, ns, name, time.Hour)
	createPods(t, podNS, "s-0")
	// The workload cluster is shared: the next tests' agents would mirror
	// this Pod too.
	t.Cleanup(func() {
		if err := workKube.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(podNS)); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	a := register(t, ns, name)
	waitRemotePods(t, ns, podNS, podNS+".s-0")
	tok := a.token(t)

	setSuspend := func(v bool) {
		t.Helper()
		if err := testenv.Eventually(ctx, wait, func() error {
			if err := hubKube.Get(ctx, client.ObjectKeyFromObject(wc), wc); err != nil {
				return err
			}
			wc.Spec.Suspend = v
			return hubKube.Update(ctx, wc)
		}); err != nil {
			t.Fatal(err)
		}
	}
	setSuspend(true)
	waitCluster(t, ns, name, "suspended", func(wc *v1alpha1.WorkloadCluster) bool {
		c := wc.Status.GetCondition(xpv2.TypeReady)
		return !wc.Status.Connected && c.Status == corev1.ConditionFalse && c.Reason == v1alpha1.ReasonSuspended
	})
	// Released at once, though the grace period is an hour.
	waitRemotePods(t, ns, podNS)
	identities := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AgentServiceAccount(name)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.BootstrapServiceAccount(name)}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AgentServiceAccount(name)}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AgentServiceAccount(name)}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.BootstrapServiceAccount(name)}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.BootstrapServiceAccount(name)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.AgentTokenSecret(name)}},
	}
	for _, o := range identities {
		if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, o); !kerrors.IsNotFound(err) {
			t.Errorf("%T %s after suspend: %v, want NotFound", o, o.GetName(), err)
		}
	}
	if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.AgentLease(name)}, &coordinationv1.Lease{}); err != nil {
		t.Errorf("the Lease, the record of the last heartbeat, should stay: %v", err)
	}
	ac := hubClient(t, withToken(tok))
	refusedOrUnknown(t, "the suspended agent lists its RemotePods", ac.List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace(ns)))
	// Its token itself is refused once the API server's cache of
	// successful authentications (10 s by default) has let it go.
	if err := testenv.Eventually(ctx, wait, func() error {
		switch err := ac.List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace(ns)); {
		case err == nil:
			return errors.New("the suspended agent's token is accepted")
		case !kerrors.IsUnauthorized(err):
			return fmt.Errorf("the suspended agent's token: %w, want Unauthorized", err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	refusedOrUnknown(t, "the suspended agent creates a RemotePod", ac.Create(ctx, &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podNS + ".s-1"},
		Spec: v1alpha1.RemotePodSpec{Cluster: name, PodNamespace: podNS, PodName: "s-1", PodUID: "u"}}))
	// The agent still runs and resyncs: nothing of it gets through.
	time.Sleep(3 * heartbeat)
	if got := remotePodsOf(t, ns, podNS); len(got) != 0 {
		t.Errorf("RemotePods %v written by the suspended agent", got)
	}
	evs := &corev1.EventList{}
	if err := hubKube.List(ctx, evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || (e.InvolvedObject.Name == name && e.Reason == "Suspended" && strings.Contains(e.Message, "RemotePods, which releases their addresses"))
	}
	if !found {
		t.Error("no Suspended Event on the WorkloadCluster")
	}
	a.stop()

	// Resumed: new identities; the old token stays refused.
	setSuspend(false)
	if err := testenv.Eventually(ctx, wait, func() error {
		return hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.BootstrapServiceAccount(name)}, &corev1.ServiceAccount{})
	}); err != nil {
		t.Fatal(err)
	}
	if err := hubClient(t, withToken(tok)).List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace(ns)); !kerrors.IsUnauthorized(err) {
		t.Errorf("the token of before the suspension, once resumed: %v, want Unauthorized", err)
	}
	register(t, ns, name)
	waitRemotePods(t, ns, podNS, podNS+".s-0")
	waitCluster(t, ns, name, "connected again", func(wc *v1alpha1.WorkloadCluster) bool { return wc.Status.Connected })
}
