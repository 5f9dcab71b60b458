package podaddress

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpmeta "github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/eip"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// create makes the PodAddress of a Pod that asks for addresses. It returns
// nil when another reconcile made it first, or, with how long to wait,
// when the Pod is a moment old and has no IP yet: the IP follows within a
// second or so in a burst of Pods, and a PodAddress made then is created
// with its bindings (see preallocate), which saves a status write.
func (r *Reconciler) create(ctx context.Context, pod *corev1.Pod, want *ask) (*v1alpha1.PodAddress, *plan, time.Duration, error) {
	pa := &v1alpha1.PodAddress{}
	pa.SetNamespace(pod.GetNamespace())
	pa.SetName(pod.GetName())
	pa.SetFinalizers([]string{Finalizer})
	// No owner reference: with a keep duration the binding must outlive
	// the Pod, and without one this controller deletes it itself.
	pa.Spec = want.spec
	pa.Spec.PodUID = string(pod.GetUID())
	// Not recorded unless the create succeeds: the slots then go back (an
	// AlreadyExists PodAddress holds its own).
	rsv := r.alloc.pools.Reserve(pa)
	defer rsv.Drop()
	if dry, err := r.inDryRun(ctx, v1alpha1.PoolsOf(pa)); dry || err != nil {
		// A pool in a dry run of the switch from tke-extend: say what
		// would be kept, write nothing.
		if dry {
			r.dryRunReport(ctx, pa, pod)
		}
		return nil, nil, dryRunAgain, err
	}
	var p *plan
	var k *kept
	if pa.Spec.EIP == nil && !pa.Spec.Isolated {
		var err error
		if p, err = r.planFor(ctx, pa, pod); err != nil {
			return nil, nil, 0, err
		}
		var wait time.Duration
		if wait, k = r.preallocate(ctx, pa, pod, p, rsv); wait > 0 {
			return nil, nil, wait, nil
		}
	}
	err := r.kube.Create(ctx, pa)
	if err == nil {
		rsv.Commit()
		if k != nil {
			r.tellKept(pod, p.ws, *k)
		}
	}
	if kerrors.IsAlreadyExists(err) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, errors.Wrap(err, "cannot create PodAddress")
	}
	r.records.wrote.created(client.ObjectKeyFromObject(pa), r.clock())
	// The API server answers with an empty status.
	pa.AdoptCreatedBindings()
	return pa, p, 0, nil
}

// preallocate allocates the ports of a new PodAddress whose Pod already
// has its IP (or node), and records them with their targets in what pa is
// created with (v1alpha1.AnnotationCreatedBindings): the create is then
// the record made before any cloud call, and the first status write is
// Bound. The slots it allocates are held by rsv, which the caller commits
// once the create succeeded. It returns how long to wait for a young Pod's
// IP.
// Anything else in the way (an invalid request, a full or missing pool,
// an EIP) leaves pa without bindings: bind allocates and says why, as it
// does for every PodAddress.
//
// A Pod that tke-extend bound keeps the addresses of its result that are
// its own (keepTKE): those are recorded in the create whatever becomes of
// the others, so that bind never gives them new ones. The decision is
// returned, to be told once the create succeeded.
func (r *Reconciler) preallocate(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, p *plan, rsv *allocation.Reservation) (time.Duration, *kept) {
	if !p.servable() {
		return 0, nil
	}
	if !p.ready {
		return max(waitBackendQuiet-r.clock().Sub(pod.GetCreationTimestamp().Time), 0), nil
	}
	k, wait, err := r.keepTKE(ctx, pa, pod, p, rsv)
	if err != nil {
		// Not a refusal: the pool could not be read. A PodAddress made
		// now would get new addresses; look again shortly.
		r.out.log.Debug("Cannot decide which tke-extend addresses the Pod keeps", "pod", pod.GetNamespace()+"/"+pod.GetName(), "error", err)
		return waitForPoolStatus, nil
	}
	if wait > 0 {
		return wait, nil
	}
	var bs []v1alpha1.PortBinding
	var rest []allocation.Port
	var restDest []dest
	var restCerts []string
	for i, w := range p.ws {
		if b := k.bindings[i]; b != nil {
			bs = append(bs, *b)
			continue
		}
		rest, restDest, restCerts = append(rest, w.Port), append(restDest, p.ds[i]), append(restCerts, w.certID)
	}
	if more, err := rsv.AllocateAll(ctx, rest); err == nil {
		for i := range more {
			more[i].CertID = restCerts[i]
			if ip := restDest[i].ipFor(more[i]); ip != "" {
				more[i].TargetIP, more[i].TargetPort, more[i].InstanceID = ip, restDest[i].port, restDest[i].instance
			} // else the Pod lacks the family the load balancer forwards to: bind waits and says so
		}
		bs = append(bs, more...)
	}
	if len(bs) == 0 {
		return 0, &k
	}
	if err := v1alpha1.SetCreatedBindings(pa, bs); err != nil {
		rsv.Drop()
		return 0, nil
	}
	// Wall time: it is checked against the creation time the API server sets.
	r.records.seal.SealCreated(pa, time.Now())
	return 0, &k
}

// servable reports whether the plan may allocate: nothing refused it and
// it has ports.
func (p *plan) servable() bool {
	return p.invalid == nil && p.no == nil && p.cert == nil && p.destErr == nil && len(p.ws) > 0
}

// inDryRun reports whether one of the pools is in a dry run of the
// switch from tke-extend. A pool of tke-port-pools not made yet is in dry
// run when its CLBPortPool asks for one: a Pod seen in the first moments,
// before the PortPool is, must not be served either.
func (r *Reconciler) inDryRun(ctx context.Context, pools []string) (bool, error) {
	for _, key := range pools {
		_, pp, err := r.alloc.pools.Get(ctx, key)
		if err == nil {
			if dryRun(pp) {
				return true, nil
			}
			continue
		}
		if !kerrors.IsNotFound(errors.Cause(err)) {
			return false, err
		}
		nn, ok := v1alpha1.ParsePoolKey(key)
		if !ok || nn.Namespace != podannotation.TKEPoolNamespace {
			continue
		}
		cpp := &tkev1alpha1.CLBPortPool{}
		err = r.kube.Get(ctx, client.ObjectKey{Name: nn.Name}, cpp)
		switch {
		case err == nil && cpp.GetAnnotations()[clbv1alpha1.AnnotationTKESwitch] == clbv1alpha1.TKESwitchDryRun:
			return true, nil
		case err != nil && !kerrors.IsNotFound(err) && !meta.IsNoMatchError(err): // NoMatch: the kind is not served
			return false, errors.Wrapf(err, "cannot get CLBPortPool %s", nn.Name)
		}
	}
	return false, nil
}

// dryRunReport tells a Pod of a pool in a dry run what the switch would
// keep of its tke-extend addresses; it reserves and writes nothing.
func (r *Reconciler) dryRunReport(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod) {
	if pa.Spec.EIP != nil || pa.Spec.Isolated {
		return
	}
	p, err := r.planFor(ctx, pa, pod)
	if err != nil || !p.servable() || !p.ready {
		return
	}
	if k, wait, err := r.keepTKE(ctx, pa, pod, p, nil); err == nil && wait == 0 {
		r.tellKept(pod, p.ws, k)
	}
}

// takeOver points an existing PodAddress at a new Pod of the same name (a
// recreated StatefulSet Pod keeps its ports) or at a changed request.
func (r *Reconciler) takeOver(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, want *ask) error {
	if pa.Spec.PodUID != string(pod.GetUID()) {
		r.records.told.forget(types.UID(pa.Spec.PodUID))
	}
	// A changed request is tried at once, not after a refused one's wait.
	r.eips.retry.Reset(client.ObjectKeyFromObject(pa))
	pa.Spec = want.spec
	pa.Spec.PodUID = string(pod.GetUID())
	// A PodAddress made at admission now has its Pod.
	xpmeta.RemoveAnnotations(pa, AnnotationAdmittedUntil)
	if err := r.write(ctx, pa); err != nil {
		return errors.Wrap(err, "cannot update PodAddress for the new Pod")
	}
	if pa.Status.State != v1alpha1.StateHeld && pa.Status.ReleaseAt == nil {
		return nil
	}
	// A held binding is taken over: it is no longer released at
	// releaseAt, and the new Pod starts from Pending (a podGone of the
	// new Pod holds it anew).
	pa.Status.ReleaseAt = nil
	pa.Status.State, pa.Status.Message = v1alpha1.StatePending, "taken over by a new Pod of the same name"
	setReady(pa, false, xpv2.ConditionReason(v1alpha1.StatePending), pa.Status.Message)
	return errors.Wrap(r.writeStatus(ctx, pa), "cannot update PodAddress status for the new Pod")
}

// podGone holds or releases the addresses of a Pod that is gone. Retained
// ports (tke-extend's retain) and an EIP with release policy Never are
// held until the PodAddress is deleted.
func (r *Reconciler) podGone(ctx context.Context, pa *v1alpha1.PodAddress) (reconcile.Result, error) {
	keep := pa.Spec.KeepDuration
	forever := pa.Spec.Retain || pa.Spec.EIP != nil && pa.Spec.EIP.ReleasePolicy == v1alpha1.EIPReleaseNever
	if !forever && (keep == nil || keep.Duration <= 0) {
		return reconcile.Result{}, r.remove(ctx, pa)
	}
	if pa.Status.State != v1alpha1.StateHeld {
		done, err := r.deregister(ctx, pa, true)
		if !done || err != nil {
			return reconcile.Result{}, err
		}
		// The gone Pod's IP may go to another Pod: the EIP leaves it.
		done, wait, err := r.eips.machine.Detach(ctx, pa)
		if !done || err != nil {
			return reconcile.Result{RequeueAfter: wait}, err
		}
		if pa.Spec.EIP != nil && pa.Status.EIP == nil {
			// No EIP was had (refused, not granted, over a quota): there
			// is nothing to hold for a next Pod, and nothing to retry.
			return reconcile.Result{}, r.remove(ctx, pa)
		}
		now := r.clock()
		pa.Status.State = v1alpha1.StateHeld
		pa.Status.Message = "the Pod is gone; its ports are kept for a Pod of the same name"
		if eip.Active(pa) {
			pa.Status.Message = "the Pod is gone; its EIP is kept, not associated, for a Pod of the same name"
		}
		pa.Status.ReleaseAt = nil
		if !forever {
			pa.Status.ReleaseAt = metaTime(now.Add(keep.Duration))
		}
		pa.Status.BoundAt = nil
		setReady(pa, false, "Held", pa.Status.Message)
		if err := r.writeStatus(ctx, pa); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot record the held addresses")
		}
		if forever {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{RequeueAfter: keep.Duration}, nil
	}
	// A pool that no longer serves the namespace gets its ports back now.
	if denied, err := r.heldNotAllowed(ctx, pa); denied || err != nil {
		if err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.remove(ctx, pa)
	}
	if pa.Status.ReleaseAt == nil {
		return reconcile.Result{}, nil // held until the PodAddress is deleted
	}
	if left := pa.Status.ReleaseAt.Sub(r.clock()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	return reconcile.Result{}, r.remove(ctx, pa)
}

// finalize deregisters a deleted PodAddress's targets, returns its ports
// and lets it go.
func (r *Reconciler) finalize(ctx context.Context, pa *v1alpha1.PodAddress) (reconcile.Result, error) {
	// The deregistration is not recorded: the PodAddress goes with the
	// finalizer's removal below. Should that fail, the next reconcile
	// finds the same operation answered in the binder (Settle keeps it),
	// or deregisters again, which the cloud confirms. It is recorded for
	// a Pod with an EIP, whose release takes reconciles that end well.
	done, err := r.deregister(ctx, pa, pa.Status.EIP != nil)
	if !done || err != nil {
		return reconcile.Result{}, err
	}
	done, wait, err := r.eips.machine.Release(ctx, pa)
	if !done || err != nil {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	r.eips.retry.Reset(client.ObjectKeyFromObject(pa))
	if err := r.alloc.pools.Release(ctx, pa); err != nil {
		return reconcile.Result{}, err
	}
	r.records.told.forget(types.UID(pa.Spec.PodUID))
	r.out.metrics.forget(pa)
	r.cloud.repairs.Drop(client.ObjectKeyFromObject(pa))
	xpmeta.RemoveFinalizer(pa, Finalizer)
	return reconcile.Result{}, client.IgnoreNotFound(r.write(ctx, pa))
}
