// Package controller registers every controller of the provider.
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkeextendv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	configv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	vpcv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/address"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/clbpodbinding"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/clbportpool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/config"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/gameserver"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/gameserverset"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/listener"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/loadbalancer"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/pods"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/portpool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/rule"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/targetset"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/tkehostport"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/workloadcluster"
)

// A kindController is one controller and every kind of ours it reads or
// watches: it can start only once all of their CRDs are served.
type kindController struct {
	setup func(ctrl.Manager, controller.Options, Pools) error
	needs []schema.GroupVersionKind
	// optional: some of needs are another project's kinds (Agones',
	// OpenKruiseGame's), which a cluster may never serve. Without a gate
	// the controller is then set up only if they are served now; with
	// one, whenever they are.
	optional bool
}

// Pools are the cloud clients the controllers share: one pool per service,
// each handing out one client per account, region and endpoint.
type Pools struct {
	CLB *clb.Pool
	VPC *vpc.Pool
}

// NewPools builds the pools of every service with the same options (rate,
// timeouts, metrics registry).
func NewPools(o tcapi.Options) Pools {
	return Pools{CLB: clb.NewPool(o), VPC: vpc.NewPool(o)}
}

// withCLB adapts the Setup of a controller that needs only CLB.
func withCLB(setup func(ctrl.Manager, controller.Options, *clb.Pool) error) func(ctrl.Manager, controller.Options, Pools) error {
	return func(m ctrl.Manager, o controller.Options, p Pools) error { return setup(m, o, p.CLB) }
}

func controllers(po podaddress.Options) []kindController {
	idx := &poolIndex{}
	configKinds := []schema.GroupVersionKind{
		configv1alpha1.ProviderConfigGroupVersionKind,
		configv1alpha1.ProviderConfigUsageGroupVersionKind,
		clusterv1alpha1.ClusterProviderConfigGroupVersionKind,
	}
	with := func(gvks ...schema.GroupVersionKind) []schema.GroupVersionKind {
		return append(append([]schema.GroupVersionKind{}, configKinds...), gvks...)
	}
	// The PodAddress controllers serve RemotePods once that kind is served
	// too; they run without it.
	rps := &pods.Remote{}
	po.RemotePods = rps
	return []kindController{
		{setup: func(m ctrl.Manager, o controller.Options, _ Pools) error { return config.Setup(m, o) }, needs: configKinds},
		{setup: withCLB(loadbalancer.Setup), needs: with(v1alpha1.LoadBalancerGroupVersionKind)},
		{setup: withCLB(listener.Setup), needs: with(v1alpha1.ListenerGroupVersionKind)},
		{setup: withCLB(rule.Setup), needs: with(v1alpha1.RuleGroupVersionKind)},
		{setup: withCLB(targetset.Setup), needs: with(v1alpha1.TargetSetGroupVersionKind)},
		{setup: func(m ctrl.Manager, o controller.Options, p Pools) error { return address.Setup(m, o, p.VPC) }, needs: with(vpcv1alpha1.AddressGroupVersionKind)},
		{setup: idx.before(func(m ctrl.Manager, o controller.Options, p Pools) error {
			return portpool.Setup(m, o, p.CLB, po.Seal)
		}), needs: with(v1alpha1.PortPoolGroupVersionKind, networkv1alpha1.PodAddressGroupVersionKind)},
		{setup: idx.before(func(m ctrl.Manager, o controller.Options, p Pools) error {
			po := po
			po.VPC = p.VPC // per-Pod EIPs
			return podaddress.Setup(m, o, p.CLB, po)
		}), needs: with(networkv1alpha1.PodAddressGroupVersionKind,
			networkv1alpha1.PodAddressPolicyGroupVersionKind, networkv1alpha1.EIPGrantGroupVersionKind, v1alpha1.PortPoolGroupVersionKind)},
		// tke-extend's CLBPortPools, each made into a PortPool.
		{setup: func(m ctrl.Manager, o controller.Options, _ Pools) error { return clbportpool.Setup(m, o) },
			needs: []schema.GroupVersionKind{tkeextendv1alpha1.CLBPortPoolGroupVersionKind, v1alpha1.PortPoolGroupVersionKind}},
		// tke-extend's CLBPodBindings, mirrors of the PodAddresses of Pods
		// that ask in its syntax.
		{setup: func(m ctrl.Manager, o controller.Options, _ Pools) error { return clbpodbinding.Setup(m, o) },
			needs: []schema.GroupVersionKind{tkeextendv1alpha1.CLBPodBindingGroupVersionKind, tkeextendv1alpha1.CLBNodeBindingGroupVersionKind,
				networkv1alpha1.PodAddressGroupVersionKind}},
		// Pods of tke-extend's HostPort scheme are told their hostPorts'
		// addresses on their Node's listeners.
		{setup: func(m ctrl.Manager, o controller.Options, _ Pools) error { return tkehostport.Setup(m, o) },
			needs: []schema.GroupVersionKind{networkv1alpha1.PodAddressGroupVersionKind}},
		// RemotePods are served within their WorkloadCluster's bounds.
		{setup: func(ctrl.Manager, controller.Options, Pools) error { return rps.Served() }, needs: []schema.GroupVersionKind{networkv1alpha1.RemotePodGroupVersionKind,
			networkv1alpha1.WorkloadClusterGroupVersionKind}},
		// Agones GameServers carry their Pod's addresses, once Agones'
		// kind is served.
		{setup: func(m ctrl.Manager, o controller.Options, _ Pools) error { return gameserver.Setup(m, o) },
			needs: []schema.GroupVersionKind{gameserver.GroupVersionKind()}, optional: true},
		// Clusters behind NAT: their agents' identities, heartbeats and status.
		{setup: func(m ctrl.Manager, o controller.Options, _ Pools) error {
			return workloadcluster.Setup(m, o, workloadcluster.Options{})
		}, needs: []schema.GroupVersionKind{networkv1alpha1.WorkloadClusterGroupVersionKind,
			networkv1alpha1.RemotePodGroupVersionKind, networkv1alpha1.PodAddressGroupVersionKind}},
	}
}

// poolIndex registers networkv1alpha1.PoolIndex once, before the first
// controller that reads it: the PortPool and PodAddress controllers both
// do, and either may start first under safe-start.
type poolIndex struct {
	once sync.Once
	err  error
}

func (p *poolIndex) before(setup func(ctrl.Manager, controller.Options, Pools) error) func(ctrl.Manager, controller.Options, Pools) error {
	return func(mgr ctrl.Manager, o controller.Options, pool Pools) error {
		p.once.Do(func() {
			p.err = mgr.GetFieldIndexer().IndexField(context.Background(), &networkv1alpha1.PodAddress{}, networkv1alpha1.PoolIndex, networkv1alpha1.PoolsOf)
		})
		if p.err != nil {
			return p.err
		}
		return setup(mgr, o, pool)
	}
}

// Setup adds all controllers to the manager. They share pools, so that one
// cloud client per service, account, region and endpoint carries every call
// of the process and its rate limits hold across controllers.
//
// With o.Gate set (safe-start), a controller is added only once the CRDs of
// every kind it needs are established: Crossplane installs the CRDs of a
// safe-start provider only as a ManagedResourceActivationPolicy activates
// them, and a controller whose kind is not served would fail the manager.
// Without a gate every controller is added now.
//
// po configures the PodAddress controller: the target audit, and the Pod
// admission webhook it allocates for (see webhook.Setup, which serves it).
func Setup(mgr ctrl.Manager, o controller.Options, pool Pools, po podaddress.Options) error {
	if po.Seal == nil {
		return errors.New("the controllers need the records' seal (podaddress.Options.Seal)")
	}
	f, err := failuresOf(mgr, o)
	if err != nil {
		return err
	}
	for _, c := range controllers(po) {
		if err := add(mgr, o, pool, f, c); err != nil {
			return err
		}
	}
	return nil
}

// SetupIPPools adds the NetPool controller (gated like Setup's) and, when
// srv is not nil, serves the allocator API through it: srv is added to
// the manager now and answers "unavailable" until the controller starts.
// keep is how long a StatefulSet Pod's IP is kept after its container is
// released, unless the Pod says.
func SetupIPPools(mgr ctrl.Manager, o controller.Options, srv *ippool.Server, keep time.Duration) error {
	if srv != nil {
		if err := mgr.Add(srv); err != nil {
			return err
		}
	}
	f, err := failuresOf(mgr, o)
	if err != nil {
		return err
	}
	return add(mgr, o, Pools{}, f, kindController{
		setup: func(m ctrl.Manager, o controller.Options, _ Pools) error { return ippool.Setup(m, o, srv, keep) },
		needs: []schema.GroupVersionKind{networkv1alpha1.NetPoolGroupVersionKind, networkv1alpha1.NetIPGroupVersionKind, networkv1alpha1.NetIPClaimGroupVersionKind},
	})
}

// SetupGameServerSets adds the controller that makes a CLBPortPool for
// each OpenKruiseGame GameServerSet with networkType TencentCloud-CLB.
// OKG is optional, as Agones is in Setup.
func SetupGameServerSets(mgr ctrl.Manager, o controller.Options) error {
	f, err := failuresOf(mgr, o)
	if err != nil {
		return err
	}
	return add(mgr, o, Pools{}, f, kindController{
		setup:    func(m ctrl.Manager, o controller.Options, _ Pools) error { return gameserverset.Setup(m, o) },
		needs:    []schema.GroupVersionKind{gameserverset.GroupVersionKind(), tkeextendv1alpha1.CLBPortPoolGroupVersionKind},
		optional: true,
	})
}

// add sets c up now, or, under safe-start, once its CRDs are established.
// A gated setup that fails stops the manager with its error (see
// setupFailures): a provider that silently leaves a kind unreconciled
// would look healthy.
func add(mgr ctrl.Manager, o controller.Options, pool Pools, f *setupFailures, c kindController) error {
	if o.Gate == nil {
		if c.optional {
			switch missing, err := unserved(mgr, c.needs); {
			case err != nil:
				return err
			case len(missing) > 0:
				o.Logger.Info("Not starting a controller: its kinds are not served", "kinds", fmt.Sprint(missing))
				return nil
			}
		}
		return c.setup(mgr, o, pool)
	}
	o.Gate.Register(func() {
		err := waitMapped(mgr, c.needs)
		if err == nil {
			err = c.setup(mgr, o, pool)
		}
		if err != nil {
			f.fail(errors.Wrapf(err, "cannot start the controller of %v, whose CRDs became available", c.needs))
		}
	}, c.needs...)
	return nil
}

// setupFailures is a manager Runnable that returns the first error of a
// controller set up after the manager started, which stops the manager
// (and the provider, which its Pod then restarts) with that error.
type setupFailures struct {
	errs chan error
}

// failuresOf adds the setupFailures of the gated controllers of one setup
// call to mgr; none without a gate, where setup errors return at once.
func failuresOf(mgr ctrl.Manager, o controller.Options) (*setupFailures, error) {
	if o.Gate == nil {
		return nil, nil
	}
	f := &setupFailures{errs: make(chan error, 1)}
	return f, mgr.Add(f)
}

func (f *setupFailures) fail(err error) {
	select {
	case f.errs <- err:
	default: // one is enough to stop the manager
	}
}

// Start returns the first setup failure, or nil once the manager stops.
func (f *setupFailures) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-f.errs:
		return err
	}
}

// NeedLeaderElection: every replica sets its controllers up.
func (f *setupFailures) NeedLeaderElection() bool { return false }

// unserved returns the kinds of gvks the manager's REST mapper does not
// serve.
func unserved(mgr ctrl.Manager, gvks []schema.GroupVersionKind) ([]schema.GroupVersionKind, error) {
	var out []schema.GroupVersionKind
	for _, gvk := range gvks {
		switch _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); {
		case meta.IsNoMatchError(err):
			out = append(out, gvk)
		case err != nil:
			return nil, errors.Wrapf(err, "cannot tell whether %s is served", gvk)
		}
	}
	return out, nil
}

// waitMapped waits until the manager's REST mapper serves every kind: a CRD
// is established a moment before discovery lists it, and a controller set
// up in that moment fails with "no matches for kind".
func waitMapped(mgr ctrl.Manager, gvks []schema.GroupVersionKind) error {
	return wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		for _, gvk := range gvks {
			if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return false, nil //nolint:nilerr // not yet served: poll again
			}
		}
		return true, nil
	})
}

// UsePriorityQueue is what every manager of the provider sets in
// config.Controller. controller-runtime v0.23 (up to v0.23.3) enables its
// priority queue by default, and that queue can deadlock on shutdown
// (kubernetes-sigs/controller-runtime#3538): a stopping provider then hangs.
const UsePriorityQueue = false
