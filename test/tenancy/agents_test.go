package tenancy

import (
	"context"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// A workload cluster behind NAT, as an admin registers it: its namespace,
// the CIDRs and the one pool its agent may claim. The agent acts with the
// token the provider minted for it, as a compromised agent would.
const (
	ClusterNamespace = "cluster-idc"
	Cluster          = "idc"
	ClusterPool      = "rooms"
	clusterPodCIDR   = "10.70.0.0/24"
	clusterNodeCIDR  = "10.71.0.0/24"
)

var cluster struct {
	once sync.Once
	err  error
}

// ensureCluster creates the WorkloadCluster and gives Agent the token the
// provider minted for it. It runs in the first snapshot, before any case,
// so that the cluster's objects are there before and after every attack;
// it changes nothing in the cloud.
func ensureCluster(ctx context.Context) error {
	cluster.once.Do(func() {
		if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ClusterNamespace}}); err != nil {
			cluster.err = err
			return
		}
		wc := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ClusterNamespace, Name: Cluster},
			Spec: v1alpha1.WorkloadClusterSpec{PodCIDRs: []string{clusterPodCIDR}, NodeCIDRs: []string{clusterNodeCIDR},
				Pools: []v1alpha1.PoolRef{{Name: ClusterPool}}}}
		if err := kube.Create(ctx, wc); err != nil {
			cluster.err = err
			return
		}
		tok, err := agentToken(ctx, ClusterNamespace, Cluster)
		if err != nil {
			cluster.err = err
			return
		}
		cluster.err = SetIdentity(Agent, withToken(tok))
	})
	return cluster.err
}

// agentToken waits for the token the provider mints for cluster's agent.
func agentToken(ctx context.Context, ns, name string) (string, error) {
	sec := &corev1.Secret{}
	err := testenv.Eventually(ctx, wait, func() error {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha1.AgentTokenSecret(name)}, sec); err != nil {
			return err
		}
		if len(sec.Data[v1alpha1.AgentTokenKey]) == 0 {
			return errors.New("no token yet")
		}
		return nil
	})
	return string(sec.Data[v1alpha1.AgentTokenKey]), err
}

func withToken(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	return cfg
}

// remotePod is what an agent writes for Pod game/name of its cluster: one
// TCP port asking for pool, at podIP on a node of the cluster.
func remotePod(name, podIP, pool string, mod ...func(*v1alpha1.RemotePodSpec)) *v1alpha1.RemotePod {
	rp := &v1alpha1.RemotePod{ObjectMeta: metav1.ObjectMeta{Namespace: ClusterNamespace, Name: v1alpha1.RemotePodName("game", name)},
		Spec: v1alpha1.RemotePodSpec{Cluster: Cluster, PodNamespace: "game", PodName: name, PodUID: "uid-" + name,
			Annotations: map[string]string{podannotation.AnnotationPorts: "7000 " + pool},
			Containers:  []v1alpha1.RemoteContainer{{Name: "server", Ports: []corev1.ContainerPort{{ContainerPort: 7000, Protocol: corev1.ProtocolTCP}}}},
			Node:        &v1alpha1.RemoteNode{Name: "node-1", InternalIP: "10.71.0.4", InstanceID: "ins-a1b2c3d4"},
			PodIP:       podIP, PodIPs: []string{podIP}, Ready: true}}
	for _, m := range mod {
		m(&rp.Spec)
	}
	return rp
}

// claim creates rp as the agent and returns the refusal the provider
// wrote in its status.warning.
func claim(ctx context.Context, rp *v1alpha1.RemotePod) (string, error) {
	if err := Client(Agent).Create(ctx, rp); err != nil {
		return "", errors.Wrap(err, "the agent cannot create its RemotePod")
	}
	var said string
	err := testenv.Eventually(ctx, wait, func() error {
		got := &v1alpha1.RemotePod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(rp), got); err != nil {
			return err
		}
		pa := &v1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(rp), pa); err == nil {
			return errors.Errorf("a PodAddress %s for the claimed Pod: %s", pa.Status.State, pa.Status.Message)
		}
		if w := got.Status.Warning; w != nil && w.Reason == "OutOfClusterBounds" {
			said = w.Message
			return nil
		}
		return errors.Errorf("no refusal in the status yet: %s", jsonOf(got.Status))
	})
	return said, err
}

func unclaim(rp *v1alpha1.RemotePod) func(context.Context, *testing.T) {
	return func(ctx context.Context, t *testing.T) {
		t.Helper()
		if err := kube.Delete(ctx, rp); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}

func init() { //nolint:gochecknoinits // the tenancy frame registers cases from init
	// The cluster's objects that no attack may change: its bounds, the
	// agent's rights, and the PodAddresses of its Pods.
	compare(func(ctx context.Context, into map[string]string) error {
		if err := ensureCluster(ctx); err != nil {
			return err
		}
		wc := &v1alpha1.WorkloadCluster{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: Cluster}, wc); err != nil {
			return err
		}
		into["WorkloadCluster "+Cluster] = jsonOf(wc.Spec)
		roles := &rbacv1.RoleList{}
		bindings := &rbacv1.RoleBindingList{}
		pas := &v1alpha1.PodAddressList{}
		for _, l := range []client.ObjectList{roles, bindings, pas} {
			if err := kube.List(ctx, l, client.InNamespace(ClusterNamespace)); err != nil {
				return err
			}
		}
		for _, r := range roles.Items {
			into["Role "+ClusterNamespace+"/"+r.Name] = jsonOf(r.Rules)
		}
		for _, b := range bindings.Items {
			into["RoleBinding "+ClusterNamespace+"/"+b.Name] = jsonOf([]any{b.RoleRef, b.Subjects})
		}
		for _, p := range pas.Items {
			into["PodAddress "+ClusterNamespace+"/"+p.Name] = jsonOf([]any{p.Spec, p.Status.State, p.Status.Bindings})
		}
		return nil
	})

	database := remotePod("db", "10.0.0.5", ClusterPool)
	outsideNode := remotePod("far", "10.70.0.9", ClusterPool, func(s *v1alpha1.RemotePodSpec) { s.Node.InternalIP = "10.9.9.9" })
	badInstance := remotePod("lb", "10.70.0.10", ClusterPool, func(s *v1alpha1.RemotePodSpec) { s.Node.InstanceID = "lb-a1b2c3d4" })
	otherPool := remotePod("steal", "10.70.0.11", NamespaceB+"/"+PoolB)
	attack(
		Attack{
			Name: "agent-claims-database", Who: Agent,
			What: "write a RemotePod whose Pod IP is a database's (10.0.0.5, outside the cluster's podCIDRs) behind its pool",
			Want: "spec.podIP 10.0.0.5 is outside the podCIDRs of WorkloadCluster idc (" + clusterPodCIDR + ")",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return claim(ctx, database)
			},
			Cleanup: unclaim(database),
		},
		Attack{
			Name: "agent-claims-foreign-node", Who: Agent,
			What: "write a RemotePod on a node whose InternalIP (10.9.9.9) is outside the cluster's nodeCIDRs",
			Want: "spec.node.internalIP 10.9.9.9 is outside the nodeCIDRs of WorkloadCluster idc (" + clusterNodeCIDR + ")",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return claim(ctx, outsideNode)
			},
			Cleanup: unclaim(outsideNode),
		},
		Attack{
			Name: "agent-claims-non-cvm-instance", Who: Agent,
			What: "write a RemotePod whose node instanceId is not a CVM instance (lb-a1b2c3d4)",
			Want: `spec.node.instanceId "lb-a1b2c3d4" is not a CVM instance id`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return claim(ctx, badInstance)
			},
			Cleanup: unclaim(badInstance),
		},
		Attack{
			Name: "agent-claims-other-pool", Who: Agent,
			What: "write a RemotePod asking for tenant-b's pool, which the cluster's spec.pools does not list",
			Want: "PortPool " + NamespaceB + "/" + PoolB + " is not in spec.pools of WorkloadCluster idc",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return claim(ctx, otherPool)
			},
			Cleanup: unclaim(otherPool),
		},
		Attack{
			Name: "agent-mints-long-token", Who: Agent,
			What: "mint itself a token of a day (the cluster's agentTokenLifetime is 1h)",
			Want: `cannot create resource "serviceaccounts/token"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ClusterNamespace, Name: v1alpha1.AgentServiceAccount(Cluster)}}
				tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](86400)}}
				return APIRefusal("create token", Client(Agent).SubResource("token").Create(ctx, sa, tr))
			},
		},
		Attack{
			Name: "agent-widens-its-cidrs", Who: Agent,
			What: "update its own WorkloadCluster to declare 0.0.0.0/0 as its podCIDRs",
			Want: `cannot update resource "workloadclusters"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				wc := &v1alpha1.WorkloadCluster{}
				if err := kube.Get(ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: Cluster}, wc); err != nil {
					return "", err
				}
				wc.Spec.PodCIDRs = []string{"0.0.0.0/0"}
				return APIRefusal("update WorkloadCluster", Client(Agent).Update(ctx, wc))
			},
		},
		Attack{
			Name: "agent-writes-remotepod-status", Who: Agent,
			What: "write a RemotePod's status to tell its Pod an address the provider never bound",
			Want: `cannot patch resource "remotepods/status"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				rp := remotePod("forged", "10.70.0.12", ClusterPool)
				rp.Status.Annotations = map[string]string{podannotation.AnnotationStatus: podannotation.StatusReady}
				body := []byte(`{"status":{"annotations":{"` + podannotation.AnnotationStatus + `":"Ready"}}}`)
				return APIRefusal("patch RemotePod status", Client(Agent).Status().Patch(ctx, rp, client.RawPatch("application/merge-patch+json", body)))
			},
		},
		Attack{
			Name: "agent-reads-tenant", Who: Agent,
			What: "list tenant-b's PodAddresses",
			Want: `cannot list resource "podaddresses"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return APIRefusal("list PodAddresses", Client(Agent).List(ctx, &v1alpha1.PodAddressList{}, client.InNamespace(NamespaceB)))
			},
		},
		Attack{
			Name: "suspended-agent", Who: Agent,
			What: "act with its token after the admin set spec.suspend on its WorkloadCluster (a second cluster, idc-2)",
			Want: "Unauthorized",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				const ns, name = "cluster-idc-2", "idc-2"
				if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
					return "", err
				}
				wc := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: v1alpha1.WorkloadClusterSpec{PodCIDRs: []string{clusterPodCIDR}, NodeCIDRs: []string{clusterNodeCIDR}}}
				if err := kube.Create(ctx, wc); err != nil {
					return "", err
				}
				tok, err := agentToken(ctx, ns, name)
				if err != nil {
					return "", err
				}
				ac, err := client.New(withToken(tok), client.Options{Scheme: env.Scheme})
				if err != nil {
					return "", err
				}
				if err := ac.List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace(ns)); err != nil {
					return "", errors.Wrap(err, "the agent's token does not work before the suspension")
				}
				if err := kube.Patch(ctx, wc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
					return "", err
				}
				var refusal string
				err = testenv.Eventually(ctx, wait, func() error {
					err := ac.List(ctx, &v1alpha1.RemotePodList{}, client.InNamespace(ns))
					if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
						return errors.Errorf("the suspended agent's token: %v", err)
					}
					refusal = err.Error()
					return nil
				})
				return refusal, err
			},
		},
	)
	allow(
		Allowed{
			Name: "agent-pod-in-bounds", Who: Agent,
			What: "write a RemotePod within the cluster's CIDRs asking for the pool its spec.pools lists: bound",
			Try: func(ctx context.Context, t *testing.T) error {
				lb := pool(t, ClusterNamespace, ClusterPool)
				rp := remotePod("room-0", "10.70.0.20", ClusterPool)
				if err := Client(Agent).Create(ctx, rp); err != nil {
					return err
				}
				return Bound(ctx, ClusterNamespace, rp.Name, lb, "10.70.0.20")
			},
		},
		Allowed{
			Name: "agent-renews-heartbeat", Who: Agent,
			What: "read its WorkloadCluster and its token Secret (as it does to renew its token)",
			Try: func(ctx context.Context, _ *testing.T) error {
				if err := Client(Agent).Get(ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: Cluster}, &v1alpha1.WorkloadCluster{}); err != nil {
					return err
				}
				return Client(Agent).Get(ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: v1alpha1.AgentTokenSecret(Cluster)}, &corev1.Secret{})
			},
		},
	)
}
