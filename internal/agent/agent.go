// Package agent is the agent of a workload cluster behind NAT: it runs in
// that cluster and connects out to the management cluster, where the
// provider runs. It registers with a bootstrap token, then acts with its
// own least-privilege token, which the provider mints and renews; it mirrors the Pods that ask
// for an address into RemotePods of its cluster's namespace, applies what
// the provider writes in their status back to the Pods, and renews a Lease
// as its heartbeat. The management cluster never connects to the workload
// cluster.
package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Config is how the agent reaches both clusters and what it is.
type Config struct {
	// Local is the workload cluster the agent runs in.
	Local *rest.Config
	// Hub is the management cluster's server and CA, without credentials:
	// the agent authenticates with its tokens.
	Hub *rest.Config
	// Cluster is the WorkloadCluster's name, Namespace its namespace in
	// the management cluster.
	Cluster, Namespace string
	// TokenFile is where the agent keeps its own token; it is read at
	// start and replaced on renewal. BootstrapTokenFile holds the token an
	// admin created for the bootstrap ServiceAccount; it is used only
	// when TokenFile holds no valid token.
	TokenFile, BootstrapTokenFile string
	// HeartbeatInterval is how often the Lease is renewed.
	HeartbeatInterval time.Duration
	// HealthAddr serves /healthz and /readyz when not empty or "0".
	HealthAddr string
	// MetricsAddr serves /metrics when not empty or "0".
	MetricsAddr string
	Log         logr.Logger
}

// Run registers the agent if it has no token yet and then serves until ctx
// ends.
func Run(ctx context.Context, c Config) error {
	if c.Cluster == "" || c.Namespace == "" {
		return errors.New("the cluster name and its namespace in the management cluster are required")
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = v1alpha1.DefaultHeartbeatInterval
	}
	hub := rest.CopyConfig(c.Hub)
	// Only the agent's tokens authenticate it.
	hub.BearerToken, hub.BearerTokenFile, hub.Username, hub.Password = "", "", "", ""
	hub.CertFile, hub.KeyFile, hub.CertData, hub.KeyData, hub.ExecProvider, hub.AuthProvider = "", "", nil, nil, nil, nil
	tok := &tokens{hub: hub, namespace: c.Namespace, cluster: c.Cluster, file: c.TokenFile, bootstrap: c.BootstrapTokenFile,
		log: c.Log.WithName("token"), now: time.Now}
	if _, ok := tok.current(); !ok && tok.bootstrap == "" {
		return fmt.Errorf("%s holds no valid token and no bootstrap token file is given", c.TokenFile)
	}
	// Retried: the agent may start a moment before the provider has
	// created its identities, or while the hub is unreachable.
	if err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		err := tok.ensure(ctx)
		if err != nil {
			c.Log.Error(err, "Cannot register with the management cluster; retrying")
		}
		return err == nil, nil
	}); err != nil {
		return err
	}
	hub.BearerTokenFile = c.TokenFile

	identity, err := whoAmI(ctx, hub)
	if err != nil {
		return err
	}
	c.Log.Info("Acting in the management cluster", "identity", identity, "namespace", c.Namespace, "cluster", c.Cluster)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.SchemeBuilder.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(c.Local, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: or0(c.MetricsAddr)},
		HealthProbeBindAddress: or0(c.HealthAddr),
		Controller:             config.Controller{UsePriorityQueue: ptr.To(false), SkipNameValidation: ptr.To(true)},
		Logger:                 c.Log,
	})
	if err != nil {
		return fmt.Errorf("cannot create the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	// The management cluster, seen only through the cluster's namespace.
	hubc, err := cluster.New(hub, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Logger = c.Log.WithName("hub")
		o.Cache.DefaultNamespaces = map[string]cache.Config{c.Namespace: {}}
	})
	if err != nil {
		return fmt.Errorf("cannot connect to the management cluster: %w", err)
	}
	if err := mgr.Add(hubc); err != nil {
		return err
	}
	if err := mgr.Add(tok); err != nil {
		return err
	}
	// Connected now: the grace period counts from here until the first
	// heartbeat gets through.
	ln := newLink(time.Now())
	if err := mgr.Add(ln); err != nil {
		return err
	}
	if err := mgr.Add(&heartbeat{hub: hubc.GetClient(), api: hubc.GetAPIReader(), lease: leaseOf(c.Namespace, c.Cluster),
		cluster: types.NamespacedName{Namespace: c.Namespace, Name: c.Cluster}, link: ln,
		identity: identity, interval: c.HeartbeatInterval, log: c.Log.WithName("heartbeat")}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, indexNodeName, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" { //nolint:forcetypeassert // indexed on Pods
			return []string{n}
		}
		return nil
	}); err != nil {
		return err
	}
	m := &mirror{local: mgr.GetClient(), hub: hubc.GetClient(), hubAPI: hubc.GetAPIReader(), link: ln, ns: c.Namespace, cluster: c.Cluster,
		log: c.Log.WithName("mirror"), warned: map[types.NamespacedName]warned{}}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("agent").
		For(&corev1.Pod{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(m.podsOnNode), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e ctrlevent.UpdateEvent) bool { return nodeChanged(e.ObjectOld, e.ObjectNew) },
		})).
		// Both sides are listed at start: a RemotePod whose Pod is gone
		// is deleted, a Pod without its RemotePod gets one.
		WatchesRawSource(source.Kind(hubc.GetCache(), &v1alpha1.RemotePod{},
			handler.TypedEnqueueRequestsFromMapFunc(m.podOfRemotePod))).
		WatchesRawSource(source.Kind(hubc.GetCache(), &v1alpha1.PodAddressPolicy{},
			handler.TypedEnqueueRequestsFromMapFunc(m.podsOfPolicy))).
		// Every Pod when the link is lost past the grace period and when
		// it is back.
		WatchesRawSource(source.Channel(ln.resync, handler.EnqueueRequestsFromMapFunc(m.allPods))).
		Complete(m); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func or0(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}

// whoAmI is the user the management cluster knows the agent as.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("cannot authenticate to the management cluster: %w", err)
	}
	return r.Status.UserInfo.Username, nil
}

func (m *mirror) podOfRemotePod(_ context.Context, rp *v1alpha1.RemotePod) []reconcile.Request {
	if rp.Spec.Cluster != "" && rp.Spec.Cluster != m.cluster {
		return nil
	}
	ns, name := rp.Spec.PodNamespace, rp.Spec.PodName
	if ns == "" || name == "" {
		var ok bool
		if ns, name, ok = v1alpha1.ParseRemotePodName(rp.Name); !ok {
			return nil
		}
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// podsOfPolicy maps a policy to the Pods its selector matches; called for
// the old and the new policy of an update, so Pods it stops matching are
// reconciled too.
func (m *mirror) podsOfPolicy(ctx context.Context, pol *v1alpha1.PodAddressPolicy) []reconcile.Request {
	sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil
	}
	pods := &corev1.PodList{}
	if err := m.local.List(ctx, pods, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(pods.Items))
	for _, p := range pods.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
	}
	return out
}

func (m *mirror) allPods(ctx context.Context, _ client.Object) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := m.local.List(ctx, pods); err != nil {
		m.log.Error(err, "Cannot list the Pods to resync")
		return nil
	}
	out := make([]reconcile.Request, 0, len(pods.Items))
	for _, p := range pods.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
	}
	return out
}

func (m *mirror) podsOnNode(ctx context.Context, o client.Object) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := m.local.List(ctx, pods, client.MatchingFields{indexNodeName: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(pods.Items))
	for _, p := range pods.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
	}
	return out
}

// nodeChanged: only what RemotePods carry of a node. Nodes update their
// status often; the rest is of no interest here.
func nodeChanged(o, n client.Object) bool {
	on, ok1 := o.(*corev1.Node)
	nn, ok2 := n.(*corev1.Node)
	return !ok1 || !ok2 || on.Spec.ProviderID != nn.Spec.ProviderID || internalIP(on) != internalIP(nn)
}
