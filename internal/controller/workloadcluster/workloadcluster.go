// Package workloadcluster keeps, for each WorkloadCluster, the identities its
// agent registers and acts with (ServiceAccounts, Roles, RoleBindings, the
// token it mints for the agent and the heartbeat Lease, all in the cluster's
// namespace), and its status: whether the agent is connected, and how many
// Pods it mirrors and how many are served. A cluster whose agent stays
// silent past its disconnect grace period loses its RemotePods, which
// releases their addresses; a suspended cluster loses its agent's identities
// and its RemotePods at once.
package workloadcluster

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

const controllerName = "workloadcluster"

// Defaults of Options.
const (
	// DefaultCheckInterval bounds how late a renewal (or its absence) is
	// noticed: Leases are read, not watched, so that the provider does not
	// cache every Lease of the cluster (each node renews one).
	DefaultCheckInterval = 10 * time.Second
	// identityRecheck is how often identities that were in place are
	// read again, to repair one deleted behind the provider's back.
	identityRecheck = 10 * time.Minute
)

// Options configure the controller; zero values take the defaults.
type Options struct {
	CheckInterval time.Duration
	// Registerer receives the per-cluster gauges; the controller-runtime
	// registry (the provider's /metrics) when nil.
	Registerer prometheus.Registerer
}

// Event reasons.
const (
	reasonReleased   event.Reason = "DisconnectGraceExpired"
	reasonRegistered event.Reason = "AgentRegistered"
	reasonSuspended  event.Reason = "Suspended"
)

// Setup adds the WorkloadCluster controller to mgr.
func Setup(mgr ctrl.Manager, o controller.Options, wo Options) error {
	r := &Reconciler{
		kube:     mgr.GetClient(),
		api:      mgr.GetAPIReader(),
		log:      o.Logger.WithValues("controller", controllerName),
		events:   event.NewAPIRecorder(mgr.GetEventRecorderFor(controllerName)),
		interval: cmp.Or(wo.CheckInterval, DefaultCheckInterval),
		metrics:  newGauges(cmp.Or[prometheus.Registerer](wo.Registerer, metrics.Registry)),
		clock:    time.Now,
		ensured:  map[types.UID]time.Time{},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(o.ForControllerRuntime()).
		For(&v1alpha1.WorkloadCluster{}).
		Watches(&v1alpha1.RemotePod{}, handler.EnqueueRequestsFromMapFunc(clusterOfRemotePod)).
		// A PodAddress of a cluster's namespace changes what it serves.
		Watches(&v1alpha1.PodAddress{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfNamespace)).
		Complete(errors.WithSilentRequeueOnConflict(r))
}

func clusterOfRemotePod(_ context.Context, o client.Object) []reconcile.Request {
	rp, ok := o.(*v1alpha1.RemotePod)
	if !ok || rp.Spec.Cluster == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: rp.GetNamespace(), Name: rp.Spec.Cluster}}}
}

func (r *Reconciler) clustersOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	l := &v1alpha1.WorkloadClusterList{}
	if err := r.kube.List(ctx, l, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(l.Items))
	for _, wc := range l.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&wc)})
	}
	return out
}

// A Reconciler reconciles WorkloadClusters.
type Reconciler struct {
	kube     client.Client
	api      client.Reader // identities and Leases: read uncached
	log      logging.Logger
	events   event.Recorder
	interval time.Duration
	metrics  *gauges
	clock    func() time.Time

	mu sync.Mutex
	// ensured is when each cluster's identities were last found in place.
	ensured map[types.UID]time.Time
}

// Reconcile keeps a cluster's identities and status, and releases its Pods
// once its agent has been silent for the grace period.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wc := &v1alpha1.WorkloadCluster{}
	if err := r.kube.Get(ctx, req.NamespacedName, wc); err != nil {
		if kerrors.IsNotFound(err) {
			r.metrics.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if wc.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, r.remove(ctx, wc)
	}
	if controllerutil.AddFinalizer(wc, v1alpha1.WorkloadClusterFinalizer) {
		if err := r.kube.Update(ctx, wc); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot add the finalizer")
		}
	}
	if wc.Spec.Suspend {
		return reconcile.Result{}, r.suspend(ctx, wc)
	}
	if err := r.ensureIdentities(ctx, wc); err != nil {
		return reconcile.Result{}, err
	}
	renew, err := r.ensureToken(ctx, wc)
	if err != nil {
		return reconcile.Result{}, err
	}

	now := r.clock()
	lease := &coordinationv1.Lease{}
	if err := r.api.Get(ctx, types.NamespacedName{Namespace: wc.Namespace, Name: v1alpha1.AgentLease(wc.Name)}, lease); err != nil {
		if kerrors.IsNotFound(err) {
			// Deleted behind our back: recreate the identities next time.
			r.mu.Lock()
			delete(r.ensured, wc.UID)
			r.mu.Unlock()
		}
		return reconcile.Result{}, errors.Wrap(err, "cannot get the agent's Lease")
	}
	hb := heartbeatOf(lease)
	want := wc.DeepCopy()
	next := min(r.interval, renew+time.Millisecond)
	if hb.holder != "" {
		want.Status.AgentIdentity = hb.holder
		if want.Status.RegisteredAt == nil {
			want.Status.RegisteredAt = ptrTime(hb.acquired)
			r.events.Event(wc, event.Normal(reasonRegistered, fmt.Sprintf("Agent %s registered", hb.holder)))
		}
		want.Status.LastHeartbeat = ptrTime(hb.renewed)
	}
	want.Status.Connected = hb.holder != "" && now.Before(hb.expires)
	grace := v1alpha1.DefaultDisconnectGracePeriod * time.Second
	if d := wc.Spec.DisconnectGracePeriod; d != nil {
		grace = d.Duration
	}
	switch {
	case want.Status.Connected:
		want.Status.SetConditions(ready(corev1.ConditionTrue, v1alpha1.ReasonAgentConnected,
			// No time here: the condition would change with every renewal.
			fmt.Sprintf("agent %s renews its heartbeat; the cluster's Pods are served", hb.holder)))
		next = min(next, hb.expires.Sub(now)+time.Millisecond)
	case hb.holder == "":
		want.Status.SetConditions(ready(corev1.ConditionFalse, v1alpha1.ReasonAwaitingAgent,
			fmt.Sprintf("no agent has registered: give it a token of ServiceAccount %s", v1alpha1.BootstrapServiceAccount(wc.Name))))
	default:
		// Counted from the last heartbeat, but never before it expired.
		release := hb.renewed.Add(grace)
		if release.Before(hb.expires) {
			release = hb.expires
		}
		if now.Before(release) {
			want.Status.SetConditions(ready(corev1.ConditionFalse, v1alpha1.ReasonAgentDisconnected,
				fmt.Sprintf("no heartbeat since %s; the cluster's Pods keep their addresses until %s", hb.renewed.Format(time.RFC3339), release.Format(time.RFC3339))))
			next = min(next, release.Sub(now)+time.Millisecond)
			break
		}
		want.Status.SetConditions(ready(corev1.ConditionFalse, v1alpha1.ReasonAgentDisconnected,
			fmt.Sprintf("no heartbeat since %s; the disconnect grace period (%s) has passed and the cluster's Pods were released", hb.renewed.Format(time.RFC3339), grace)))
		n, err := r.deleteRemotePods(ctx, wc)
		if err != nil {
			return reconcile.Result{}, err
		}
		if n > 0 {
			r.events.Event(wc, event.Warning(reasonReleased, fmt.Errorf("no heartbeat since %s (grace period %s): deleted %d RemotePods, which releases their addresses", hb.renewed.Format(time.RFC3339), grace, n)))
		}
	}
	if _, err := wc.Bounds(); err != nil {
		// Stored before the CIDRs were required: connected or not, its
		// RemotePods are all refused until they are declared.
		want.Status.SetConditions(ready(corev1.ConditionFalse, v1alpha1.ReasonMissingCIDRs, err.Error()))
	}
	// A cluster whose agent stopped renewing, or that serves nothing for
	// want of CIDRs, needs a person: Synced=False with the Ready message,
	// Degraded for Argo CD's built-in check.
	rc := want.Status.GetCondition(xpv2.TypeReady)
	want.Status.SetConditions(v1alpha1.SyncedCondition(rc.Reason == v1alpha1.ReasonAgentDisconnected || rc.Reason == v1alpha1.ReasonMissingCIDRs, rc.Message))
	if err := r.count(ctx, want); err != nil {
		return reconcile.Result{}, err
	}
	r.metrics.set(want)
	if !equality.Semantic.DeepEqual(wc.Status, want.Status) {
		if err := r.kube.Status().Update(ctx, want); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot update the status")
		}
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// suspend revokes the agent's access and releases the cluster's Pods at
// once: unlike a cut link, a suspension is a decision, so no grace period.
func (r *Reconciler) suspend(ctx context.Context, wc *v1alpha1.WorkloadCluster) error {
	revoked, err := r.revoke(ctx, wc)
	if err != nil {
		return err
	}
	released, err := r.deleteRemotePods(ctx, wc)
	if err != nil {
		return err
	}
	if revoked > 0 || released > 0 {
		r.events.Event(wc, event.Normal(reasonSuspended, fmt.Sprintf("spec.suspend: deleted the agent's ServiceAccounts, Roles, RoleBindings and token (%d objects), so its tokens stop working, and %d RemotePods, which releases their addresses", revoked, released)))
	}
	want := wc.DeepCopy()
	want.Status.Connected = false
	want.Status.SetConditions(ready(corev1.ConditionFalse, v1alpha1.ReasonSuspended,
		"spec.suspend revokes the agent's access: it has no identity and the cluster's Pods are not served; to resume, set it to false and give the agent a new bootstrap token"),
		v1alpha1.SyncedCondition(false, ""))
	if err := r.count(ctx, want); err != nil {
		return err
	}
	r.metrics.set(want)
	if equality.Semantic.DeepEqual(wc.Status, want.Status) {
		return nil
	}
	return errors.Wrap(r.kube.Status().Update(ctx, want), "cannot update the status")
}

func ready(s corev1.ConditionStatus, reason xpv2.ConditionReason, msg string) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

// ptrTime is t at the second, as the API stores it, so an unchanged
// heartbeat compares equal to the stored one.
func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t).Rfc3339Copy()
	return &mt
}

// A heartbeat is what the agent's Lease says.
type heartbeat struct {
	holder   string
	acquired time.Time
	renewed  time.Time
	// expires is when the last renewal stops counting.
	expires time.Time
}

func heartbeatOf(l *coordinationv1.Lease) heartbeat {
	hb := heartbeat{}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
		return hb
	}
	hb.holder = *l.Spec.HolderIdentity
	hb.renewed = l.Spec.RenewTime.Time
	hb.acquired = hb.renewed
	if l.Spec.AcquireTime != nil {
		hb.acquired = l.Spec.AcquireTime.Time
	}
	d := 3 * v1alpha1.DefaultHeartbeatInterval
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	hb.expires = hb.renewed.Add(d)
	return hb
}

// remotePods lists the RemotePods of wc's namespace that belong to it.
func (r *Reconciler) remotePods(ctx context.Context, wc *v1alpha1.WorkloadCluster) ([]v1alpha1.RemotePod, error) {
	l := &v1alpha1.RemotePodList{}
	if err := r.kube.List(ctx, l, client.InNamespace(wc.Namespace)); err != nil {
		return nil, errors.Wrap(err, "cannot list RemotePods")
	}
	out := l.Items[:0]
	for _, rp := range l.Items {
		if rp.Spec.Cluster == wc.Name {
			out = append(out, rp)
		}
	}
	return out, nil
}

// count sets the status's Pods and PodsServed.
func (r *Reconciler) count(ctx context.Context, wc *v1alpha1.WorkloadCluster) error {
	rps, err := r.remotePods(ctx, wc)
	if err != nil {
		return err
	}
	served := 0
	for _, rp := range rps {
		pa := &v1alpha1.PodAddress{}
		err := r.kube.Get(ctx, client.ObjectKeyFromObject(&rp), pa)
		switch {
		case err == nil && v1alpha1.Serving(pa.Status.State):
			served++
		case err != nil && !kerrors.IsNotFound(err):
			return errors.Wrap(err, "cannot get a PodAddress")
		}
	}
	wc.Status.Pods, wc.Status.PodsServed = int32(len(rps)), int32(served) //nolint:gosec // counts of one namespace
	return nil
}

// deleteRemotePods deletes the cluster's RemotePods and returns how many it
// asked to delete; the PodAddress controller releases their addresses.
func (r *Reconciler) deleteRemotePods(ctx context.Context, wc *v1alpha1.WorkloadCluster) (int, error) {
	rps, err := r.remotePods(ctx, wc)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range rps {
		if rps[i].GetDeletionTimestamp() != nil {
			continue
		}
		if err := r.kube.Delete(ctx, &rps[i]); client.IgnoreNotFound(err) != nil {
			return n, errors.Wrap(err, "cannot delete a RemotePod")
		}
		n++
	}
	return n, nil
}

// remove deletes the cluster's RemotePods and identities, then lets the
// WorkloadCluster go. Owner references would do the identities in a
// cluster with a garbage collector; deleting them here does not wait.
func (r *Reconciler) remove(ctx context.Context, wc *v1alpha1.WorkloadCluster) error {
	if !controllerutil.ContainsFinalizer(wc, v1alpha1.WorkloadClusterFinalizer) {
		return nil
	}
	if _, err := r.deleteRemotePods(ctx, wc); err != nil {
		return err
	}
	for _, o := range append(identities(wc), tokenSecret(wc)) {
		if err := r.kube.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return errors.Wrapf(err, "cannot delete %T %s", o, o.GetName())
		}
	}
	r.mu.Lock()
	delete(r.ensured, wc.UID)
	r.mu.Unlock()
	r.metrics.forget(client.ObjectKeyFromObject(wc))
	controllerutil.RemoveFinalizer(wc, v1alpha1.WorkloadClusterFinalizer)
	return errors.Wrap(r.kube.Update(ctx, wc), "cannot remove the finalizer")
}
