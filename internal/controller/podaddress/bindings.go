package podaddress

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
)

// bind brings a live Pod's PodAddress to Bound: let go of what it no
// longer asks for, allocate what is missing and record it, record and
// register the targets, put back what the audit found missing, tell the
// Pod. Each step either lets the next one run or ends the reconcile with
// its result (a wait, a state recorded, an error).
func (r *Reconciler) bind(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, p *plan) (reconcile.Result, error) {
	if p == nil {
		var err error
		if p, err = r.planFor(ctx, pa, pod); err != nil {
			return reconcile.Result{}, err
		}
	}
	switch {
	case p.invalid != nil:
		return r.invalid(ctx, pa, pod, a, p.invalid)
	case p.no != nil && p.no.err != nil:
		return r.invalid(ctx, pa, pod, a, p.no.err)
	case p.no != nil:
		return r.notAllowed(ctx, pa, pod, a, p.ws, p.no.denied)
	case p.cert != nil:
		return r.certRefused(ctx, pa, pod, a, p.cert)
	}
	var left time.Duration
	if r.remote.of(pod) == nil {
		var foreign []string
		if foreign, left = r.alloc.limits.pendingForeign(pa, pod, p.ws, r.clock()); len(foreign) > 0 {
			return reconcile.Result{}, r.givePendingBack(ctx, pa, pod, a, p.ws, foreign)
		}
	}
	res, err := r.bindSteps(ctx, pa, pod, a, p)
	// Looked at again when a pending hold ends, if nothing else does.
	if err == nil && left > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > left) {
		res.RequeueAfter = left
	}
	return res, err
}

// bindSteps runs bind's steps for a plan nothing refused; each step
// either lets the next one run or ends the reconcile (outcome).
func (r *Reconciler) bindSteps(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, p *plan) (reconcile.Result, error) {
	if o := r.dropUnwanted(ctx, pa, pod, p.ws); o.end {
		return o.res, o.err
	}
	if o := r.quietWait(pa, pod, p); o.end {
		return o.res, o.err
	}
	// New slots are recorded before any cloud call; those a failed write
	// did not record go back when the bind ends.
	rsv := r.alloc.pools.Reserve(pa)
	defer rsv.Drop()
	if o := r.allocateMissing(ctx, pa, pod, a, p.ws, rsv); o.end {
		return o.res, o.err
	}
	if pa.Spec.Isolated {
		return reconcile.Result{}, r.isolate(ctx, pa, pod, a, rsv)
	}
	if o := r.recordTargets(ctx, pa, pod, a, p, rsv); o.end {
		return o.res, o.err
	}
	if o := r.certsInPlace(ctx, pa); o.end {
		return o.res, o.err
	}
	if o := r.registerTargets(ctx, pa); o.end {
		return o.res, o.err
	}
	// Targets the audit found missing are registered again, through the
	// binder as any registration.
	if o := r.repair(ctx, pa); o.end {
		return o.res, o.err
	}
	return reconcile.Result{}, r.bound(ctx, pa, pod, a)
}

// An outcome is what one step of bind says: go on to the next step, or
// end the reconcile here with res and err (a wait, a state recorded, a
// failure, or a cloud call still running, whose answer brings the
// PodAddress back).
type outcome struct {
	end bool
	res reconcile.Result
	err error
}

// goOn lets the next step run.
func goOn() outcome { return outcome{} }

// endWith ends the reconcile with res and err.
func endWith(res reconcile.Result, err error) outcome {
	return outcome{end: true, res: res, err: err}
}

// afterCloud is the outcome of a step that ran cloud calls through the
// binder: it goes on once they are done, and ends the reconcile with
// their error, or with nothing while they run.
func afterCloud(a targets.Answer) outcome {
	if a.State != targets.Done {
		return endWith(reconcile.Result{}, a.Err)
	}
	return goOn()
}

// dropUnwanted lets go of the bindings pa no longer asks for once their
// targets are gone: ports no longer asked for, those whose slot the
// allocator gives to someone else, and those on a load balancer that left
// their pool (allocateMissing gives them a new address). It ends the
// reconcile while their deregistration runs.
func (r *Reconciler) dropUnwanted(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, ws []want) outcome {
	key := client.ObjectKeyFromObject(pa)
	var keep, drop, moved []v1alpha1.PortBinding
	for _, b := range pa.Status.Bindings {
		asked := slices.ContainsFunc(ws, func(w want) bool { return w.Of(b) })
		switch {
		case asked && r.alloc.pools.HasLeft(ctx, b):
			moved = append(moved, b)
			drop = append(drop, b)
		case asked && r.alloc.pools.Owns(ctx, key, b):
			keep = append(keep, b)
		default:
			drop = append(drop, b)
		}
	}
	// A port with the same public port in all of its pools moves as a
	// whole when what is kept of it cannot be completed at its port.
	var regrouped []string
	for _, g := range allocation.Groups(ports(ws)) {
		if ok, why := r.alloc.pools.SamePortMoves(ctx, pa, g, keep); ok {
			for _, w := range g {
				if i := slices.IndexFunc(keep, w.Of); i >= 0 {
					drop = append(drop, keep[i])
					keep = slices.Delete(keep, i, i+1)
				}
			}
			regrouped = append(regrouped, why)
		}
	}
	if len(drop) == 0 {
		return goOn()
	}
	if o := afterCloud(r.cloud.binder.Send(ctx, pa, targets.Deregister(drop))); o.end {
		return o
	}
	for _, b := range moved {
		r.podEvent(pod, event.Normal(reasonMoved, fmt.Sprintf("load balancer %s left pool %s: %s/%d moves from %s to a new address",
			b.LoadBalancerID, b.Pool, b.Protocol, b.ContainerPort, cmp.Or(b.Address, "(none)"))))
	}
	for _, why := range regrouped {
		r.podEvent(pod, event.Normal(reasonMoved, why))
	}
	r.alloc.pools.ReleaseBindings(pa, drop)
	pa.Status.Bindings = keep
	return goOn()
}

// quietWait is how long a new PodAddress whose Pod has no IP (or node) yet
// writes nothing: the IP follows within a second or so in a burst of Pods,
// and then the allocation and its targets are recorded in one write
// instead of two. Nothing is allocated meanwhile, so nothing is held that
// the status does not say. The moment counts from the Pod's creation:
// create waited for the IP already.
func (r *Reconciler) quietWait(pa *v1alpha1.PodAddress, pod *corev1.Pod, p *plan) outcome {
	if pa.Status.State != "" || len(pa.Status.Bindings) > 0 || pa.Spec.Isolated {
		return goOn()
	}
	if p.destErr != nil || p.ready {
		return goOn()
	}
	if wait := waitBackendQuiet - r.clock().Sub(pod.GetCreationTimestamp().Time); wait > 0 {
		return endWith(reconcile.Result{RequeueAfter: wait}, nil)
	}
	return goOn()
}

// allocateMissing allocates a slot for every want without a binding; the
// caller records them before any cloud call; rsv holds them until then.
// A want that gets none (no free port, no pool) stops the bind with that
// state recorded and told.
func (r *Reconciler) allocateMissing(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, ws []want, rsv *allocation.Reservation) outcome {
	// A port asked with the same public port in all of its pools is
	// allocated as one: in every pool or in none.
	for _, g := range allocation.Groups(ports(ws)) {
		bs, state, err := rsv.AllocateGroup(ctx, g, pa.Status.Bindings)
		if err != nil {
			if state == v1alpha1.StateNoPortAvailable {
				r.podEvent(pod, event.Warning(reasonNoPort, err))
			}
			res, uerr := r.setState(ctx, pa, state, err.Error(), reconcile.Result{RequeueAfter: waitForPorts})
			if uerr != nil {
				return endWith(res, uerr)
			}
			rsv.Commit()
			return endWith(res, r.tellPod(ctx, pod, a, pa, state, err.Error()))
		}
		pa.Status.Bindings = append(pa.Status.Bindings, bs...)
	}
	return goOn()
}

// recordTargets records where each binding forwards to, with new
// allocations, before anything is sent: whatever may be registered is
// then known to a deletion and to a restarted provider, and a recorded
// target is deregistered (or confirmed) whether or not its registration
// was answered. Targets that changed (a new Pod IP) are deregistered, and
// that recorded, before the new ones are. It stops the bind while the
// Pod has no IP (or node) yet, and after a deregistration of changed
// targets (the next reconcile records and registers the new ones).
func (r *Reconciler) recordTargets(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, p *plan, rsv *allocation.Reservation) outcome {
	allocated := rsv.Fresh() || len(pa.Status.Bindings) > 0 && pa.Status.State == v1alpha1.StatePending
	gap := ""
	if p.destErr == nil && p.ready {
		gap = familyGap(pa, p.ws, p.ds)
	}
	if err := p.destErr; err != nil || !p.ready || gap != "" {
		msg, wait := cmp.Or(gap, "waiting for the Pod's IP (or its node)"), reconcile.Result{}
		if err != nil {
			msg, wait = err.Error(), reconcile.Result{RequeueAfter: waitForPorts}
		}
		res, uerr := r.setState(ctx, pa, v1alpha1.StateWaitBackend, msg, wait)
		if uerr != nil {
			return endWith(res, uerr)
		}
		rsv.Commit()
		return endWith(res, r.tellPod(ctx, pod, a, pa, v1alpha1.StateWaitBackend, msg))
	}
	stale, record := setTargets(pa, p.ws, p.ds)
	if setCerts(pa, p.ws) {
		record = true
	}
	if allocated || record {
		msg := "registering the Pod as the target of its ports"
		if len(stale) > 0 {
			msg = "the Pod's targets changed; deregistering the old ones"
		}
		if _, err := r.setState(ctx, pa, v1alpha1.StateAllocated, msg, reconcile.Result{}); err != nil {
			return endWith(reconcile.Result{}, err)
		}
		rsv.Commit()
		if err := r.tellPod(ctx, pod, a, pa, v1alpha1.StateAllocated, msg); err != nil {
			return endWith(reconcile.Result{}, err)
		}
	}
	if len(stale) == 0 {
		return goOn()
	}
	if o := afterCloud(r.cloud.binder.Send(ctx, pa, targets.Deregister(stale))); o.end {
		return o
	}
	for i := range pa.Status.Bindings {
		b := &pa.Status.Bindings[i]
		for _, s := range stale {
			if s.Pool == b.Pool && s.ContainerPort == b.ContainerPort && s.Protocol == b.Protocol {
				targets.Clear(b)
			}
		}
	}
	_, err := r.setState(ctx, pa, v1alpha1.StateAllocated, "the Pod's targets changed; registering the new ones", reconcile.Result{})
	return endWith(reconcile.Result{}, err)
}

// registerTargets registers the recorded targets that have no address
// yet; it ends the reconcile while the registration runs.
func (r *Reconciler) registerTargets(ctx context.Context, pa *v1alpha1.PodAddress) outcome {
	var toRegister []v1alpha1.PortBinding
	for _, b := range pa.Status.Bindings {
		if b.Address == "" {
			toRegister = append(toRegister, b)
		}
	}
	if len(toRegister) == 0 {
		return goOn()
	}
	ans := r.cloud.binder.Send(ctx, pa, targets.Register(toRegister))
	if _, notYet := clb.NotYet(ans.Err); ans.State == targets.Failed && !notYet {
		_, _ = r.setState(ctx, pa, v1alpha1.StateAllocated, ans.Err.Error(), reconcile.Result{})
	}
	if o := afterCloud(ans); o.end {
		return o
	}
	for i := range pa.Status.Bindings {
		pa.Status.Bindings[i].Address = address(pa.Status.Bindings[i])
	}
	return goOn()
}

// bound records that every address forwards to the Pod, and tells it. A
// Pod that asked for an EIP and fell back to ports is bound too, and says
// so.
func (r *Reconciler) bound(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask) error {
	boundState, boundMsg := v1alpha1.StateBound, ""
	if e := pa.Status.EIP; e != nil && e.State == v1alpha1.EIPFallback {
		boundState, boundMsg = v1alpha1.StateFallbackPort, "no EIP ("+e.Reason+"); bound to ports of the fallback pool"
	}
	if pa.Status.State != boundState || pa.Status.BoundAt == nil {
		now := metaTime(r.clock())
		pa.Status.BoundAt = now
		if _, err := r.setState(ctx, pa, boundState, boundMsg, reconcile.Result{}); err != nil {
			return err
		}
		r.out.metrics.bound(pa, pod, now.Time)
		r.podEvent(pod, event.Normal(reasonBound, "public addresses: "+addresses(pa.Status.Bindings)))
	}
	return r.tellPod(ctx, pod, a, pa, boundState, boundMsg)
}

// invalid records that pa's request cannot be served as it stands, and
// tells the Pod why.
func (r *Reconciler) invalid(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, err error) (reconcile.Result, error) {
	if pa.Status.State != v1alpha1.StateInvalid || pa.Status.Message != err.Error() {
		r.podEvent(pod, event.Warning(reasonInvalidRequest, err))
	}
	if _, uerr := r.setState(ctx, pa, v1alpha1.StateInvalid, err.Error(), reconcile.Result{}); uerr != nil {
		return reconcile.Result{}, uerr
	}
	return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, v1alpha1.StateInvalid, err.Error())
}

// isolate takes a live Pod out of service and keeps its addresses: every
// recorded target is deregistered through the binder, as any other, and
// then each binding is recorded with its address and no target. That
// record is what a restarted provider reads: it has nothing to deregister,
// and registers nothing while the Pod stays isolated. Once the Pod is no
// longer isolated, bind records and registers its targets again. rsv
// holds the slots this reconcile allocated.
func (r *Reconciler) isolate(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, rsv *allocation.Reservation) error {
	const msg = "isolated: no target is registered; the ports and addresses are kept"
	if ops := targets.Deregister(pa.Status.Bindings); len(ops) > 0 {
		if rsv.Fresh() {
			// New slots are recorded before any cloud call.
			if _, err := r.setState(ctx, pa, pa.Status.State, pa.Status.Message, reconcile.Result{}); err != nil {
				return err
			}
			rsv.Commit()
		}
		if ans := r.cloud.binder.Send(ctx, pa, ops); ans.State != targets.Done {
			return ans.Err
		}
	}
	for i := range pa.Status.Bindings {
		b := &pa.Status.Bindings[i]
		targets.Clear(b)
		b.Address = address(*b)
	}
	was := pa.Status.State
	if _, err := r.setState(ctx, pa, v1alpha1.StateIsolated, msg, reconcile.Result{}); err != nil {
		return err
	}
	rsv.Commit()
	if was != v1alpha1.StateIsolated {
		r.podEvent(pod, event.Normal(reasonIsolated, "out of service, addresses kept: "+addresses(pa.Status.Bindings)))
	}
	return r.tellPod(ctx, pod, a, pa, v1alpha1.StateIsolated, msg)
}
