package nat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// forbidden fails the test unless err is the API server's Forbidden.
func forbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !kerrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want Forbidden", what, err)
	}
}

func remotePod(ns, name string) *v1alpha1.RemotePod {
	return &v1alpha1.RemotePod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.RemotePodSpec{Cluster: "x", PodNamespace: "default", PodName: "p", PodUID: "u"},
	}
}

// TestRegistration: an agent given only the hub's address, CA and a
// bootstrap token registers, acts as its own ServiceAccount from then on,
// and the cluster reports it connected; the bootstrap token may do nothing
// but that exchange.
func TestRegistration(t *testing.T) {
	ctx := context.Background()
	ns, name := "nat-reg", "reg"
	const lifetime = 15 * time.Minute
	newCluster(t, ns, name, 0, func(wc *v1alpha1.WorkloadCluster) {
		wc.Spec.AgentTokenLifetime = &metav1.Duration{Duration: lifetime}
	})

	// Before any agent: waiting for one, and saying how to register.
	wc := waitCluster(t, ns, name, "awaiting its agent", func(wc *v1alpha1.WorkloadCluster) bool {
		return wc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonAwaitingAgent
	})
	if wc.Status.Connected || wc.Status.AgentIdentity != "" {
		t.Errorf("status before any agent: %+v", wc.Status)
	}

	boot := bootstrapToken(t, ns, name)
	bc := hubClient(t, withToken(boot))
	// The bootstrap identity reads its own cluster and nothing else.
	if err := bc.Get(ctx, client.ObjectKeyFromObject(wc), &v1alpha1.WorkloadCluster{}); err != nil {
		t.Errorf("the bootstrap token cannot get its WorkloadCluster: %v", err)
	}
	forbidden(t, "bootstrap lists RemotePods", bc.List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace(ns)))
	forbidden(t, "bootstrap creates a RemotePod", bc.Create(ctx, remotePod(ns, "default.p")))
	forbidden(t, "bootstrap updates the Lease", bc.Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.AgentLease(name)}}))
	forbidden(t, "bootstrap lists WorkloadClusters", bc.List(ctx, &v1alpha1.WorkloadClusterList{}, client.InNamespace(ns)))
	forbidden(t, "bootstrap creates a Role", bc.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"}}))
	forbidden(t, "bootstrap lists Secrets", bc.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)))
	// The token lifetime is the hub's: no identity of the agent mints one.
	agentSA := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.AgentServiceAccount(name)}}
	day := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](86400)}}
	forbidden(t, "bootstrap mints the agent a token of a day", bc.SubResource("token").Create(ctx, agentSA, day))

	a := register(t, ns, name)
	want := "system:serviceaccount:" + ns + ":" + v1alpha1.AgentServiceAccount(name)
	wc = waitCluster(t, ns, name, "connected as the agent's ServiceAccount", func(wc *v1alpha1.WorkloadCluster) bool {
		return wc.Status.Connected && wc.Status.AgentIdentity == want &&
			wc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonAgentConnected
	})
	if wc.Status.RegisteredAt == nil || wc.Status.LastHeartbeat == nil {
		t.Errorf("registeredAt and lastHeartbeat should be set: %+v", wc.Status)
	}
	// The agent's own token is a different identity from the bootstrap's.
	if a.token(t) == boot {
		t.Error("the agent kept using the bootstrap token")
	}
	// It is the one the provider minted, of the cluster's lifetime, and
	// the agent cannot mint itself a longer one.
	if issued, expires := tokenTimes(t, a.token(t)); expires.Sub(issued) != lifetime {
		t.Errorf("the agent's token lives %s, want the cluster's agentTokenLifetime %s", expires.Sub(issued), lifetime)
	}
	sec := &corev1.Secret{}
	if err := hubKube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.AgentTokenSecret(name)}, sec); err != nil || string(sec.Data[v1alpha1.AgentTokenKey]) != a.token(t) {
		t.Errorf("the agent's token is not the one of Secret %s (%v)", v1alpha1.AgentTokenSecret(name), err)
	}
	ac := hubClient(t, withToken(a.token(t)))
	forbidden(t, "the agent mints itself a token of a day", ac.SubResource("token").Create(ctx, agentSA, day))
	forbidden(t, "the agent lists Secrets", ac.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)))
	forbidden(t, "the agent gets the provider's credentials Secret", ac.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, &corev1.Secret{}))

	// Per-cluster gauges on the provider's registry.
	if err := testenv.Eventually(ctx, wait, func() error {
		v, err := gauge("workloadcluster_connected", ns, name)
		if err != nil {
			return err
		}
		if v != 1 {
			return fmt.Errorf("workloadcluster_connected = %v, want 1", v)
		}
		hb, err := gauge("workloadcluster_last_heartbeat_timestamp_seconds", ns, name)
		if err != nil {
			return err
		}
		if hb < float64(wc.Status.RegisteredAt.Unix()) {
			return fmt.Errorf("last heartbeat %v is before the registration %v", hb, wc.Status.RegisteredAt.Unix())
		}
		return nil
	}); err != nil {
		t.Error(err)
	}

	// The provider made the identities it reports, and nothing grants the
	// bootstrap account a token of itself (it cannot outlive its hour).
	bc = hubClient(t, withToken(boot))
	err := bc.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.BootstrapServiceAccount(name)}},
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}})
	forbidden(t, "bootstrap renews its own token", err)
}

// tokenTimes reads the iat and exp claims of a JWT, unverified.
func tokenTimes(t *testing.T, token string) (issued, expires time.Time) {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		t.Fatal("the token is not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Iat, Exp int64 }
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return time.Unix(c.Iat, 0), time.Unix(c.Exp, 0)
}

// gauge reads one per-cluster gauge from the test registry.
func gauge(metric, ns, name string) (float64, error) {
	mfs, err := registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["namespace"] == ns && l["name"] == name {
				return m.GetGauge().GetValue(), nil
			}
		}
	}
	return 0, fmt.Errorf("no %s for %s/%s", metric, ns, name)
}

// TestClustersCannotSeeEachOther: an agent's identity reads and writes its
// own namespace only.
func TestClustersCannotSeeEachOther(t *testing.T) {
	ctx := context.Background()
	newCluster(t, "nat-iso-a", "a", 0)
	newCluster(t, "nat-iso-b", "b", 0)
	a := register(t, "nat-iso-a", "a")
	b := register(t, "nat-iso-b", "b")
	waitCluster(t, "nat-iso-a", "a", "connected", func(wc *v1alpha1.WorkloadCluster) bool { return wc.Status.Connected })
	waitCluster(t, "nat-iso-b", "b", "connected", func(wc *v1alpha1.WorkloadCluster) bool { return wc.Status.Connected })
	if err := hubKube.Create(ctx, remotePod("nat-iso-a", "default.of-a")); err != nil {
		t.Fatal(err)
	}

	ac, bc := hubClient(t, withToken(a.token(t))), hubClient(t, withToken(b.token(t)))
	// Its own namespace works...
	if err := bc.List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace("nat-iso-b")); err != nil {
		t.Errorf("b lists its RemotePods: %v", err)
	}
	if err := ac.Get(ctx, client.ObjectKey{Namespace: "nat-iso-a", Name: "default.of-a"}, &v1alpha1.RemotePod{}); err != nil {
		t.Errorf("a reads its RemotePod: %v", err)
	}
	// ...the other's does not.
	forbidden(t, "b lists a's RemotePods", bc.List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace("nat-iso-a")))
	forbidden(t, "b gets a's RemotePod", bc.Get(ctx, client.ObjectKey{Namespace: "nat-iso-a", Name: "default.of-a"}, &v1alpha1.RemotePod{}))
	forbidden(t, "b creates a RemotePod in a's namespace", bc.Create(ctx, remotePod("nat-iso-a", "default.from-b")))
	forbidden(t, "b deletes a's RemotePod", bc.Delete(ctx, remotePod("nat-iso-a", "default.of-a")))
	forbidden(t, "b gets a's WorkloadCluster", bc.Get(ctx, client.ObjectKey{Namespace: "nat-iso-a", Name: "a"}, &v1alpha1.WorkloadCluster{}))
	forbidden(t, "b reads a's Lease", bc.Get(ctx, client.ObjectKey{Namespace: "nat-iso-a", Name: v1alpha1.AgentLease("a")}, &coordinationv1.Lease{}))
	forbidden(t, "b lists a's PodAddresses", bc.List(ctx, &v1alpha1.PodAddressList{}, client.InNamespace("nat-iso-a")))
	// Nor may an agent write what the provider tells its Pods.
	rp := &v1alpha1.RemotePod{}
	if err := ac.Get(ctx, client.ObjectKey{Namespace: "nat-iso-a", Name: "default.of-a"}, rp); err == nil {
		rp.Status.Annotations = map[string]string{"forged": "true"}
		forbidden(t, "a writes a RemotePod status", ac.Status().Update(ctx, rp))
	}
	// Nor list the cluster's namespaces or Secrets.
	forbidden(t, "a lists Namespaces", ac.List(ctx, &corev1.NamespaceList{}))
	forbidden(t, "a lists its namespace's Secrets", ac.List(ctx, &corev1.SecretList{}, client.InNamespace("nat-iso-a")))
}
