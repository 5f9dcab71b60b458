// Package ippool keeps the NetIPs of each NetPool and serves the CNI's
// allocator HTTP API (the bcs-netservice-controller's) over them.
//
// All state is in the API objects: which container holds an IP is the
// NetIP's status, written with the resourceVersion the allocator read, so
// the API server refuses the second of two writers and no IP is given
// twice, by one replica or several, before or after a restart.
package ippool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Finalizer keeps a NetPool until none of its IPs is Active.
const Finalizer = "network.tencentcloud.crossplane.io/netpool"

const controllerName = "netpool"

// poolIPIndex indexes NetPools by their spec.availableIPs, so that a
// NetIP's change reaches every pool that lists its IP: a pool that lost
// an IP to another pool (IPConflict) takes it when that pool lets go.
const poolIPIndex = "network.tencentcloud.crossplane.io/netpool-ip"

// Setup registers the NetIP indexes, the NetPool and NetIPClaim
// controllers, and hands srv (when not nil) an allocator over them. keep
// is how long a StatefulSet Pod's IP is kept after its container is
// released when the Pod does not say (AnnotationFixedIPKeep).
func Setup(mgr ctrl.Manager, o controller.Options, srv *Server, keep time.Duration) error {
	for name, fn := range v1alpha1.NetIPIndexes {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.NetIP{}, name, fn); err != nil {
			return err
		}
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.NetPool{}, poolIPIndex, func(o client.Object) []string {
		return o.(*v1alpha1.NetPool).Spec.AvailableIPs
	}); err != nil {
		return err
	}
	r := &poolReconciler{kube: mgr.GetClient(), log: o.Logger.WithValues("controller", controllerName), clock: time.Now}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		WithOptions(o.ForControllerRuntime()).
		For(&v1alpha1.NetPool{}).
		Watches(&v1alpha1.NetIP{}, handler.EnqueueRequestsFromMapFunc(r.poolsOfIP)).
		// A deleted claim frees the IP it kept.
		Watches(&v1alpha1.NetIPClaim{}, handler.EnqueueRequestsFromMapFunc(r.poolsOfClaim)).
		Complete(errors.WithSilentRequeueOnConflict(r)); err != nil {
		return err
	}
	if err := setupClaims(mgr, o); err != nil {
		return err
	}
	if srv != nil {
		srv.use(&Allocator{kube: mgr.GetClient(), api: mgr.GetAPIReader(), log: o.Logger.WithValues("netservice", "allocator"), clock: time.Now, keep: keep},
			mgr.GetClient(), mgr.GetAPIReader())
	}
	return nil
}

type poolReconciler struct {
	kube  client.Client
	log   logging.Logger
	clock func() time.Time
}

// poolsOfIP is the NetIP's pool and any other pool that lists its IP.
func (r *poolReconciler) poolsOfIP(ctx context.Context, o client.Object) []reconcile.Request {
	ip := o.(*v1alpha1.NetIP)
	out := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ip.Spec.Pool}}}
	pools := &v1alpha1.NetPoolList{}
	if err := r.kube.List(ctx, pools, client.MatchingFields{poolIPIndex: ip.Name}); err != nil {
		return out
	}
	for _, p := range pools.Items {
		if p.Name != ip.Spec.Pool {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	return out
}

func (r *poolReconciler) poolsOfClaim(ctx context.Context, o client.Object) []reconcile.Request {
	ips := &v1alpha1.NetIPList{}
	key := v1alpha1.FixedKey(v1alpha1.NetIPStatus{Fixed: true, IPClaimKey: v1alpha1.ClaimKey(o.GetNamespace(), o.GetName())})
	if err := r.kube.List(ctx, ips, client.MatchingFields{v1alpha1.NetIPFixedIndex: key}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(ips.Items))
	for _, ip := range ips.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ip.Spec.Pool}})
	}
	return out
}

// Reconcile reconciles the pool and says on its Synced condition whether
// that failed, and why: a refused call (such as a NetIP delete the
// provider's RBAC lacks) would otherwise leave a pool that looks Ready
// while its IPs are not what its spec says.
func (r *poolReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.reconcile(ctx, req)
	if err != nil && !kerrors.IsConflict(err) {
		pool := &v1alpha1.NetPool{}
		if gerr := r.kube.Get(ctx, req.NamespacedName, pool); gerr == nil {
			want := pool.DeepCopy()
			want.Status.SetConditions(xpv2.ReconcileError(err))
			if werr := r.writeStatus(ctx, pool, want, r.clock()); werr != nil {
				r.log.Debug("Cannot record the reconcile error on the NetPool", "pool", pool.Name, "error", werr)
			}
		}
	}
	return res, err
}

// reconcile creates a NetIP per listed IP, deletes unlisted ones that
// nobody holds, frees fixed IPs whose time is up, and counts.
func (r *poolReconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pool := &v1alpha1.NetPool{}
	if err := r.kube.Get(ctx, req.NamespacedName, pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ips := &v1alpha1.NetIPList{}
	if err := r.kube.List(ctx, ips, client.MatchingFields{v1alpha1.NetIPPoolIndex: pool.Name}); err != nil {
		return reconcile.Result{}, err
	}
	if pool.DeletionTimestamp != nil {
		return r.delete(ctx, pool, ips.Items)
	}
	if controllerutil.AddFinalizer(pool, Finalizer) {
		if err := r.kube.Update(ctx, pool); err != nil {
			return reconcile.Result{}, err
		}
	}
	now := r.clock()
	have := map[string]*v1alpha1.NetIP{}
	for i := range ips.Items {
		have[ips.Items[i].Name] = &ips.Items[i]
	}
	listed := map[string]bool{}
	var conflicts []string
	var requeue time.Duration
	for _, addr := range pool.Spec.AvailableIPs {
		listed[addr] = true
		if _, ok := have[addr]; ok {
			continue
		}
		ip, err := r.create(ctx, pool, addr)
		if err != nil {
			return reconcile.Result{}, err
		}
		if ip.Spec.Pool != pool.Name {
			conflicts = append(conflicts, addr+" (pool "+ip.Spec.Pool+")")
			continue
		}
		have[addr] = ip
	}
	for name, ip := range have {
		switch ip.Status.Status {
		case "":
			// Created, but its status was never written (a crash between
			// the two calls): it is free.
			ip.Status = v1alpha1.NetIPStatus{Status: v1alpha1.NetIPAvailable, UpdateTime: stamp(now)}
			if err := r.kube.Status().Update(ctx, ip); err != nil {
				return reconcile.Result{}, err
			}
		case v1alpha1.NetIPReserved:
			after, err := r.expire(ctx, ip, now)
			if err != nil {
				return reconcile.Result{}, err
			}
			if after > 0 && (requeue == 0 || after < requeue) {
				requeue = after
			}
		}
		if !listed[name] && (ip.Status.Status == v1alpha1.NetIPAvailable || ip.Status.Status == v1alpha1.NetIPReserved) {
			// Reserved too: no container holds it, and a removed IP is
			// never given again, not even to the Pod or claim it was kept
			// for (which gets another). The precondition loses to an
			// allocation that read the same version: the IP is then
			// Active and kept until released.
			rv := ip.ResourceVersion
			if err := r.kube.Delete(ctx, ip, client.Preconditions{ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
			delete(have, name)
		}
	}
	want := pool.DeepCopy()
	want.Status.Total, want.Status.Available, want.Status.Active, want.Status.Reserved = count(have)
	want.Status.Status = v1alpha1.NetPoolNormal
	c := xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonPoolSynced, LastTransitionTime: metav1.Now()}
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		want.Status.Status = v1alpha1.NetPoolInitializing
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, v1alpha1.ReasonIPConflict, "IPs already in another NetPool: "+strings.Join(conflicts, ", ")
	}
	// An IP listed in two pools needs a person: Synced=False with the Ready
	// message, Degraded for Argo CD's built-in check.
	synced := v1alpha1.SyncedCondition(len(conflicts) > 0, c.Message)
	want.Status.SetConditions(c.WithObservedGeneration(pool.Generation), synced.WithObservedGeneration(pool.Generation))
	return reconcile.Result{RequeueAfter: requeue}, r.writeStatus(ctx, pool, want, now)
}

// create makes the NetIP of addr, or returns the one that exists.
func (r *poolReconciler) create(ctx context.Context, pool *v1alpha1.NetPool, addr string) (*v1alpha1.NetIP, error) {
	ip := &v1alpha1.NetIP{
		ObjectMeta: metav1.ObjectMeta{Name: addr, Labels: map[string]string{v1alpha1.LabelNetPool: pool.Name}},
		Spec:       v1alpha1.NetIPSpec{Pool: pool.Name, Mask: pool.Spec.Mask, Gateway: pool.Spec.Gateway},
	}
	err := r.kube.Create(ctx, ip)
	if kerrors.IsAlreadyExists(err) {
		// Another pool's, or ours and not yet in the cache.
		return ip, r.kube.Get(ctx, client.ObjectKeyFromObject(ip), ip)
	}
	if err != nil {
		return nil, err
	}
	ip.Status = v1alpha1.NetIPStatus{Status: v1alpha1.NetIPAvailable, UpdateTime: stamp(r.clock())}
	return ip, r.kube.Status().Update(ctx, ip)
}

// expire frees a Reserved IP whose time is up, or whose claim is gone, and
// returns how long until it is up otherwise (0: never).
func (r *poolReconciler) expire(ctx context.Context, ip *v1alpha1.NetIP, now time.Time) (time.Duration, error) {
	s := ip.Status
	claimGone := false
	if s.IPClaimKey != "" {
		// A key that names no claim has no claim to keep the IP for.
		nn, ok := v1alpha1.ParseClaimKey(s.IPClaimKey)
		claimGone = !ok
		if ok {
			err := r.kube.Get(ctx, nn, &v1alpha1.NetIPClaim{})
			if client.IgnoreNotFound(err) != nil {
				return 0, err
			}
			claimGone = kerrors.IsNotFound(err)
		}
	}
	if !claimGone {
		if s.FixedIPExpiredTime == "" {
			return 0, nil
		}
		at, err := time.Parse(time.RFC3339Nano, s.FixedIPExpiredTime)
		if err == nil && at.After(now) {
			return at.Sub(now), nil
		}
	}
	ip.Status = v1alpha1.NetIPStatus{Status: v1alpha1.NetIPAvailable, UpdateTime: stamp(now)}
	if err := r.kube.Status().Update(ctx, ip); err != nil {
		return 0, err
	}
	if s.IPClaimKey != "" && !claimGone {
		return 0, setClaim(ctx, r.kube, s.IPClaimKey, v1alpha1.ClaimExpired, "")
	}
	return 0, nil
}

// delete removes the pool's IPs once none is Active, then the finalizer.
func (r *poolReconciler) delete(ctx context.Context, pool *v1alpha1.NetPool, ips []v1alpha1.NetIP) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(pool, Finalizer) {
		return reconcile.Result{}, nil
	}
	var active []string
	for _, ip := range ips {
		if ip.Status.Status == v1alpha1.NetIPActive {
			active = append(active, ip.Name)
		}
	}
	if len(active) > 0 {
		slices.Sort(active)
		want := pool.DeepCopy()
		byName := make(map[string]*v1alpha1.NetIP, len(ips))
		for i := range ips {
			byName[ips[i].Name] = &ips[i]
		}
		// The counts too: kubectl get netpools shows ACTIVE while the
		// deletion waits for it.
		want.Status.Total, want.Status.Available, want.Status.Active, want.Status.Reserved = count(byName)
		want.Status.Status = v1alpha1.NetPoolTerminating
		want.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonDeletionBlocked,
			Message: fmt.Sprintf("cannot delete the pool while %s Active: %s", countIPs(len(active)), listSome(active, 20)), LastTransitionTime: metav1.Now()},
			xpv2.ReconcileSuccess().WithObservedGeneration(pool.Generation))
		// The NetIP watch brings the pool back as each is released.
		return reconcile.Result{}, client.IgnoreNotFound(r.writeStatus(ctx, pool, want, r.clock()))
	}
	for i := range ips {
		// An allocation that raced this delete wins on the version; the
		// pool is then reconciled again and waits for it.
		rv := ips[i].ResourceVersion
		if err := r.kube.Delete(ctx, &ips[i], client.Preconditions{ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(pool, Finalizer)
	// NotFound: an earlier pass removed it and the cache had not caught up.
	return reconcile.Result{}, client.IgnoreNotFound(r.kube.Update(ctx, pool))
}

// writeStatus writes want's status when it differs from pool's, stamping
// UpdateTime.
func (r *poolReconciler) writeStatus(ctx context.Context, pool, want *v1alpha1.NetPool, now time.Time) error {
	syncedFirst(want.Status.Conditions)
	want.Status.UpdateTime = pool.Status.UpdateTime
	if statusEqual(pool.Status, want.Status) {
		return nil
	}
	want.Status.UpdateTime = stamp(now)
	return r.kube.Status().Update(ctx, want)
}

// syncedFirst lists the Synced condition before the others. Argo CD's
// built-in check for *.crossplane.io kinds reads conditions in order and,
// before v3.3, stops at the first True Ready: a pool whose last call was
// refused (Synced=False, e.g. a NetIP delete its RBAC forbids) while it
// serves its IPs (Ready=True) would read Healthy there if Ready came first.
func syncedFirst(cs []xpv2.Condition) {
	slices.SortStableFunc(cs, func(a, b xpv2.Condition) int {
		return rank(a) - rank(b)
	})
}

func rank(c xpv2.Condition) int {
	if c.Type == xpv2.TypeSynced {
		return 0
	}
	return 1
}

// statusEqual compares statuses ignoring conditions' transition times.
func statusEqual(a, b v1alpha1.NetPoolStatus) bool {
	if a.Status != b.Status || a.UpdateTime != b.UpdateTime || a.Total != b.Total || a.Available != b.Available ||
		a.Active != b.Active || a.Reserved != b.Reserved || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if !a.Conditions[i].Equal(b.Conditions[i]) {
			return false
		}
	}
	return true
}

func count(ips map[string]*v1alpha1.NetIP) (total, available, active, reserved int) {
	for _, ip := range ips {
		total++
		switch ip.Status.Status {
		case v1alpha1.NetIPAvailable:
			available++
		case v1alpha1.NetIPActive:
			active++
		case v1alpha1.NetIPReserved:
			reserved++
		}
	}
	return total, available, active, reserved
}

// countIPs is "1 IP is" or "n IPs are".
func countIPs(n int) string {
	if n == 1 {
		return "1 IP is"
	}
	return fmt.Sprintf("%d IPs are", n)
}

func listSome(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(" and %d more", len(s)-n)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
