// Package podaddress gives Pods public addresses: it turns what a Pod asks
// for (by annotation or through a PodAddressPolicy) into a PodAddress,
// allocates pool ports for it, registers the Pod as the target of the
// pool's listeners and tells the Pod its addresses.
//
// One reconcile serves both objects of a name: the Pod and its PodAddress.
// Allocation is in memory and persisted before any cloud call, in
// PodAddress.status or, for a PodAddress created with its bindings, in
// the create (v1alpha1.AnnotationCreatedBindings), so a restarted
// provider rebuilds the allocator from those records and never hands a
// port out twice. Target registrations run in
// the background and coalesce across Pods in the cloud client; no
// reconcile waits on the cloud.
package podaddress

import (
	"cmp"
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/optional"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/audit"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/eip"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/pods"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/policy"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
)

const (
	// Finalizer keeps a PodAddress until its targets are deregistered and
	// its ports returned to the pool.
	Finalizer = "network.tencentcloud.crossplane.io/targets"

	controllerName = "podaddress"

	// waitForPorts is how often a binding that waits for a free port or a
	// pool looks again, besides the PortPool watch.
	waitForPorts = 10 * time.Second

	// waitBackendQuiet is how long a new PodAddress whose Pod has no IP
	// yet stays unrecorded (state "") before it says WaitBackend.
	waitBackendQuiet = 2 * time.Second

	// cacheLag is how long a reconcile that read a PodAddress from before
	// our own write waits, should the write's event not bring it back.
	cacheLag = time.Second

	// sealWait is how often a reconcile looks again while the records
	// written before sealing began are being sealed.
	sealWait = time.Second

	// reasonRecordsIgnored: a PodAddress held records the provider did
	// not write (no valid seal); they were dropped, not acted on.
	reasonRecordsIgnored event.Reason = "RecordsIgnored"

	// minWorkers keeps enough reconciles running for bursts of Pods; each
	// is short because cloud calls run in the background.
	minWorkers = 32
)

// Setup adds the PodAddress controller, the PodAddressPolicy status
// controller and, unless po disables it, the target audit. With
// po.Admission set, the Pod admission webhook allocates with this
// controller's allocator.
func Setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool, po Options) error {
	r, err := setup(mgr, o, pool, po)
	if err != nil || po.Admission == nil {
		return err
	}
	po.Admission.Serve(r, mgr.Elected())
	return nil
}

func setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool, po Options) (*Reconciler, error) {
	if po.Seal == nil {
		return nil, errors.New("the PodAddress controller needs the records' seal")
	}
	r := NewReconciler(mgr.GetClient(), pool, o.Logger.WithValues("controller", controllerName),
		event.NewAPIRecorder(mgr.GetEventRecorderFor(controllerName)))
	r.records.seal = po.Seal
	// Uncached reads see records as the cache does: unsealed ones dropped.
	api := seal.Reader(mgr.GetAPIReader(), po.Seal)
	r.alloc.secrets = mgr.GetAPIReader()
	r.out.podEvents = po.PodEvents
	if po.MaxPortsPerPod != nil {
		r.alloc.limits.maxPortsPerPod = *po.MaxPortsPerPod
	}
	if po.PendingHold != nil {
		r.alloc.limits.pendingHold = *po.PendingHold
	}
	if po.RemotePods != nil {
		r.remote.served = po.RemotePods
	} else if err := r.remote.served.Served(); err != nil { // every kind is installed
		return nil, err
	}
	if err := policy.Setup(mgr, o, r.remote.served); err != nil {
		return nil, err
	}
	if err := mgr.Add(r.cloud.binder); err != nil {
		return nil, err
	}
	if po.VPC != nil {
		r.eips.grants = eip.NewGrants(r.kube, api, r.out.log)
		warm := eip.NewWarmer(r.kube, api, po.VPC, r.eips.grants, r.out.log, cmp.Or(po.EIPWarmInterval, eip.DefaultWarmInterval))
		if err := mgr.Add(warm); err != nil {
			return nil, err
		}
		if err := mgr.Add(r.eips.grants); err != nil {
			return nil, err
		}
		r.eips.machine = eip.NewMachine(r.kube, po.VPC, warm, r.eips.grants, r.now, r.writeStatus)
	}
	if po.TargetAuditInterval > 0 {
		a := audit.NewAuditor(r.kube, api, r.cloud.binder, r.cloud.repairs, r.out.record, r.out.log, po.TargetAuditInterval)
		if err := mgr.Add(a); err != nil {
			return nil, err
		}
	}
	copts := o.ForControllerRuntime()
	copts.MaxConcurrentReconciles = max(copts.MaxConcurrentReconciles, minWorkers)
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(copts).
		For(&v1alpha1.PodAddress{}).
		// A Pod and its PodAddress share a name, so a Pod event is a
		// request for its PodAddress.
		Watches(&corev1.Pod{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e ctrlevent.UpdateEvent) bool { return pods.Changed(e.ObjectOld, e.ObjectNew) },
		})).
		Watches(&v1alpha1.PodAddressPolicy{}, handler.EnqueueRequestsFromMapFunc(r.podsOfPolicy)).
		Watches(&clbv1alpha1.PortPool{}, handler.EnqueueRequestsFromMapFunc(r.waitersOfPool)).
		Watches(&v1alpha1.EIPGrant{}, handler.EnqueueRequestsFromMapFunc(r.refusedEIPs)).
		// A pool's namespace selector reads the consumer's labels.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.usersOfOtherPools), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		// A Node of tke-extend's HostPort scheme holds its ports through
		// a PodAddress of its own (nodes.go).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(nodeRequest), builder.WithPredicates(nodeChanged())).
		WatchesRawSource(source.Channel(r.cloud.binder.Wake(), &handler.TypedEnqueueRequestForObject[*v1alpha1.PodAddress]{})).
		WatchesRawSource(source.Channel(r.cloud.repairs.Wake(), &handler.TypedEnqueueRequestForObject[*v1alpha1.PodAddress]{})).
		// Not behind the global reconcile limiter the managed resources
		// share: a burst of Pods would bind at --max-reconcile-rate per
		// second. Cloud calls are rate limited in the client instead.
		Build(errors.WithSilentRequeueOnConflict(r))
	if err != nil {
		return nil, err
	}
	// A RemotePod and its PodAddress share a name too.
	return r, r.remote.served.Watch(func() error {
		if err := c.Watch(source.Kind(mgr.GetCache(), &v1alpha1.RemotePod{}, &handler.TypedEnqueueRequestForObject[*v1alpha1.RemotePod]{})); err != nil {
			return err
		}
		// A cluster's bounds decide which of its RemotePods are served.
		return c.Watch(source.Kind(mgr.GetCache(), &v1alpha1.WorkloadCluster{}, handler.TypedEnqueueRequestsFromMapFunc(r.remotePodsOfCluster)))
	})
}

// A Reconciler reconciles a Pod and its PodAddress. Its parts are grouped
// by the party they deal with, so that a step names what it touches.
type Reconciler struct {
	kube client.Client
	// alloc hands out pool ports.
	alloc allocator
	// cloud registers targets and repairs what the audit found.
	cloud cloudSide
	// eips moves per-Pod EIPs.
	eips eipSide
	// records are what the reconciler wrote and told, and their seal.
	records records
	// remote serves the Pods of other clusters.
	remote *remotes
	// nodes serves the Nodes of tke-extend's HostPort scheme.
	nodes *nodes
	out   reporter
	clock func() time.Time
}

// allocator is what decides which ports a Pod may hold.
type allocator struct {
	pools *allocation.Pools
	// consents read the pools' spec.consumers.
	consents *allocation.Consents
	// limits bound what one Pod may hold.
	limits limits
	// secrets reads the certSecrets of Pods, in their own namespaces,
	// uncached: the provider keeps no Secret in its cache.
	secrets client.Reader
	// since is when the reconciler started: Pods switched from
	// tke-extend wait a moment for their pools (tkeextend.go).
	since time.Time
}

// cloudSide runs the cloud calls of bindings in the background.
type cloudSide struct {
	binder  *targets.Binder
	repairs *audit.Repairs
}

// eipSide moves per-Pod EIPs; without a VPC client its machine says they
// cannot be managed.
type eipSide struct {
	machine *eip.Machine
	retry   *eip.Retry
	// grants chooses the EIPGrant of each EIP and counts its quota.
	grants *eip.Grants
}

// records remember the reconciler's own writes.
type records struct {
	// seal signs every status written and says which records were
	// dropped as not the provider's.
	seal  *seal.Sealer
	told  *toldMemo
	wrote *writeMemo
}

// reporter is where the reconciler says what happened.
type reporter struct {
	record  event.Recorder
	log     logging.Logger
	metrics *recorder
	// podEvents says whether Normal Events are written on Pods.
	podEvents PodEvents
}

// NewReconciler returns a Reconciler with a fresh allocator: its state is
// rebuilt from PodAddress statuses as pools are first used.
func NewReconciler(kube client.Client, clients *clb.Pool, log logging.Logger, rec event.Recorder) *Reconciler {
	m := newRecorder(metrics.Registry)
	r := &Reconciler{
		kube: kube,
		alloc: allocator{
			// Every load balancer's usage is exported when its pool is
			// loaded or its status changes; an allocation then updates
			// only its own.
			pools:    allocation.NewPools(kube, m.usage),
			consents: allocation.NewConsents(kube),
			secrets:  kube,
			limits:   limits{maxPortsPerPod: DefaultMaxPortsPerPod, pendingHold: DefaultPendingHold},
		},
		cloud:   cloudSide{binder: targets.NewBinder(kube, clients), repairs: audit.NewRepairs(metrics.Registry)},
		records: records{seal: seal.Ephemeral(), told: &toldMemo{rv: map[types.UID]string{}}, wrote: newWriteMemo()},
		remote:  &remotes{served: &pods.Remote{}},
		nodes:   &nodes{},
		out:     reporter{record: rec, log: log, metrics: m},
		clock:   time.Now,
	}
	r.alloc.since = r.clock()
	r.eips = eipSide{retry: &eip.Retry{}, grants: eip.NewGrants(kube, kube, log)}
	r.eips.machine = eip.NewMachine(kube, nil, nil, r.eips.grants, r.now, r.writeStatus)
	return r
}

// Reconcile one name: the Pod and the PodAddress of that name. A cloud
// answer that means "not yet" (a busy load balancer, the rate limit) is
// no error: the name comes back after the wait it suggests, without a
// failure logged or backed off.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	defer func() {
		if after, ok := clb.NotYet(err); ok {
			res, err = reconcile.Result{RequeueAfter: after}, nil
		}
	}()
	defer func() {
		// Runs first: a reconcile that failed, or was told to wait, keeps
		// the binder's answer it read for the next one.
		if err == nil {
			r.cloud.binder.Settle(req.NamespacedName)
		}
	}()
	if !r.records.seal.SealedAll() {
		// Upgraded from a version without seals: the leader seals the
		// records written before (seal.Migrator); nothing acts until then.
		return reconcile.Result{RequeueAfter: sealWait}, nil
	}
	pod, done, err := r.subject(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	defer done()
	pa, err := optional.Get(ctx, r.kube, req.NamespacedName, &v1alpha1.PodAddress{})
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case pa == nil && r.records.wrote.unseen(req.NamespacedName, r.clock()):
		// Created by us, not in the cache yet: its event brings this key
		// back.
		return reconcile.Result{RequeueAfter: cacheLag}, nil
	case pa == nil:
		r.records.wrote.gone(req.NamespacedName)
	case r.records.wrote.behind(pa):
		// The cache has not caught up with our last write; its event
		// brings this key back. The requeue is a safety net only.
		return reconcile.Result{RequeueAfter: cacheLag}, nil
	default:
		if why, ok := r.records.seal.Ignored(pa.GetUID()); ok {
			r.out.record.Event(pa, event.Warning(reasonRecordsIgnored, errors.Errorf("records ignored: %s; only what the provider recorded is acted on", why)))
			r.out.log.Info("Ignored records the provider did not write", "podAddress", req.NamespacedName, "why", why)
		}
		// What the PodAddress was created with is its record until its
		// status is first written.
		pa.AdoptCreatedBindings()
	}

	var want *ask
	if pod != nil && pod.DeletionTimestamp == nil {
		want, err = r.request(ctx, pod)
		if err != nil {
			// A malformed request concerns this Pod only: say so on it and
			// leave any existing binding alone; in a dry run, only say so.
			if dry, derr := r.dryRunInvalid(ctx, pod, err); dry || derr != nil {
				return reconcile.Result{RequeueAfter: dryRunAgain}, derr
			}
			r.reportInvalid(ctx, pod, err)
			return reconcile.Result{}, nil
		}
	}
	x := r.remote.of(pod)
	refusal, err := r.outOfBounds(ctx, x, want)
	if err != nil {
		return reconcile.Result{}, err
	}
	if refusal != nil {
		r.refuseRemote(ctx, x, pod, refusal)
	}
	f := facts{pod: pod, pa: pa, want: want, remote: x != nil, outOfBounds: refusal != nil, now: r.clock()}
	s, wait := decide(f)
	var p *plan // create's, for bind to go on with
	if s == stepCreate {
		if f.pa, p, wait, err = r.create(ctx, pod, want); err != nil || f.pa == nil {
			return reconcile.Result{RequeueAfter: wait}, err
		}
		// Go on with the object just created rather than wait for its
		// event: a burst of Pods binds sooner.
		pa = f.pa
		s, wait = decide(f)
	}
	switch s {
	case stepNone:
		return reconcile.Result{}, nil
	case stepFinalize:
		return r.finalize(ctx, pa)
	case stepAwaitPod:
		return reconcile.Result{RequeueAfter: wait}, nil
	case stepRemove:
		return reconcile.Result{}, r.remove(ctx, pa)
	case stepPodGone:
		return r.podGone(ctx, pa)
	case stepTakeOver:
		return reconcile.Result{}, r.takeOver(ctx, pa, pod, want)
	case stepRefuseRemoteEIP:
		return r.invalid(ctx, pa, pod, want, errRemoteEIP)
	case stepBindEIP:
		return r.bindEIP(ctx, pa, pod, want)
	}
	return r.bind(ctx, pa, pod, want, p)
}

// subject returns what the PodAddress of key serves, as a Pod: the Pod of
// that name, or else a Pod of another cluster (a RemotePod); or, for a
// name of a Node's PodAddress (reserved: a Pod of it is never served), the
// Node. nil when there is none; done ends what the reconcile keeps of it.
func (r *Reconciler) subject(ctx context.Context, key types.NamespacedName) (*corev1.Pod, func(), error) {
	if node, ok := podannotation.TKENodeOf(key); ok {
		return r.nodePod(ctx, node)
	}
	pod, err := optional.Get(ctx, r.kube, key, &corev1.Pod{})
	if err != nil || pod != nil {
		return pod, func() {}, err
	}
	return r.remotePod(ctx, key)
}

// now is the reconciler's clock, for the parts it hands it to.
func (r *Reconciler) now() time.Time { return r.clock() }

// podEvent records e on pod: a Warning always, a Normal Event only when
// every Pod event was asked for (one per Pod of a burst otherwise). A Pod
// of another cluster has no object here to record on: its Warning goes
// with the next status of its RemotePod, for the agent to record.
func (r *Reconciler) podEvent(pod *corev1.Pod, e event.Event) {
	if x := r.remote.of(pod); x != nil {
		if e.Type == event.TypeWarning {
			x.warn(e)
		}
		return
	}
	if e.Type == event.TypeNormal && r.out.podEvents != PodEventsAll {
		return
	}
	r.out.record.Event(r.about(pod), e)
}

// about returns the object an Event about pod is recorded on: the Node
// a stand-in is made of (nodes.go), else the Pod.
func (r *Reconciler) about(pod *corev1.Pod) runtime.Object {
	if n := r.nodes.of(pod); n != nil {
		return n
	}
	return pod
}
