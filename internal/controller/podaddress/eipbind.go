package podaddress

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/eip"
)

const (
	reasonEIPFallback    event.Reason = "EIPFallback"
	reasonEIPUnavailable event.Reason = "EIPQuotaExceeded"
	reasonEIPNotGranted  event.Reason = "EIPNotGranted"

	// notGrantedRecheck is how often a PodAddress that no grant admits
	// looks again, besides the EIPGrant watch (a namespace's labels may
	// change).
	notGrantedRecheck = time.Minute
)

// bindEIP brings a live Pod's PodAddress that asks for an EIP to Bound:
// take a warm EIP or allocate one, associate it with the Pod IP's network
// interface, tell the Pod. Each cloud call is recorded in status.eip before
// it is sent; tasks are checked on later reconciles.
func (r *Reconciler) bindEIP(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask) (reconcile.Result, error) {
	if e := pa.Status.EIP; e != nil && e.State == v1alpha1.EIPFallback {
		return r.bind(ctx, pa, pod, a, nil)
	}
	if pa.Status.State == v1alpha1.StateQuotaExceeded || pa.Status.State == v1alpha1.StateInvalid {
		if d, ok := r.eips.retry.Pending(client.ObjectKeyFromObject(pa), time.Now()); ok {
			return reconcile.Result{RequeueAfter: d}, nil
		}
	}
	var (
		c      eip.API
		region string
		err    error
		fresh  bool
	)
	if pa.Status.EIP == nil {
		// A new EIP: only through a grant that covers the namespace and
		// admits the request, counted against its quota, before any
		// cloud call.
		gr, gerr := r.eips.grants.Choose(ctx, pa.GetNamespace(), pa.Spec.EIP)
		var refused *eip.NotGrantedError
		if errors.As(gerr, &refused) {
			return r.notGranted(ctx, pa, pod, a, refused.Msg)
		}
		if gerr != nil {
			return reconcile.Result{}, gerr
		}
		c, region, err = r.eips.machine.ClientOf(ctx, gr.Spec.ProviderConfigRef, pa.GetNamespace())
		if err == nil {
			var full *eip.GrantQuotaError
			fresh, err = r.eips.machine.Start(ctx, pa, region, gr)
			switch {
			case errors.As(err, &full):
				return r.noEIP(ctx, pa, pod, a, full.Error())
			case err != nil:
				return reconcile.Result{}, err
			}
		}
	} else {
		c, _, err = r.eips.machine.Client(ctx, pa)
	}
	if err != nil {
		res, uerr := r.setState(ctx, pa, v1alpha1.StatePending, err.Error(), reconcile.Result{RequeueAfter: waitForPorts})
		return res, errors.Join(uerr, r.tellPod(ctx, pod, a, pa, v1alpha1.StatePending, err.Error()))
	}
	goal := eip.Goal{IP: pod.Status.PodIP}
	if pa.Spec.Isolated {
		goal.IP = ""
	}
	done, wait, err := r.eips.machine.Drive(ctx, pa, c, goal, fresh)
	if err == nil && pa.Status.EIP == nil {
		// Released to be allocated again with the request's attributes
		// (see eipStep): the next reconcile records the new allocation.
		return reconcile.Result{RequeueAfter: eip.TaskPoll}, nil
	}
	var noEIP *eip.UnavailableError
	var waiting *eip.WaitError
	var refused *eip.InvalidError
	switch {
	case errors.As(err, &noEIP):
		return r.noEIP(ctx, pa, pod, a, noEIP.Reason)
	case errors.As(err, &refused):
		return r.eipRefused(ctx, pa, pod, a, refused.Msg)
	case errors.As(err, &waiting):
		res, uerr := r.setState(ctx, pa, v1alpha1.StateWaitBackend, waiting.Msg, reconcile.Result{RequeueAfter: waitForPorts})
		return res, errors.Join(uerr, r.tellPod(ctx, pod, a, pa, v1alpha1.StateWaitBackend, waiting.Msg))
	case err != nil:
		_, _ = r.setState(ctx, pa, pa.Status.State, err.Error(), reconcile.Result{})
		return reconcile.Result{}, err
	case !done:
		state, msg := v1alpha1.StateAllocated, "EIP "+eip.Progress(pa.Status.EIP)
		res, uerr := r.setState(ctx, pa, state, msg, reconcile.Result{RequeueAfter: wait})
		return res, errors.Join(uerr, r.tellPod(ctx, pod, a, pa, state, msg))
	}
	r.eips.retry.Reset(client.ObjectKeyFromObject(pa))
	e := pa.Status.EIP
	switch {
	case pa.Spec.Isolated:
		const msg = "isolated: the EIP is kept, not associated"
		was := pa.Status.State
		if _, err := r.setState(ctx, pa, v1alpha1.StateIsolated, msg, reconcile.Result{}); err != nil {
			return reconcile.Result{}, err
		}
		if was != v1alpha1.StateIsolated {
			r.podEvent(pod, event.Normal(reasonIsolated, "out of service, EIP kept: "+told(pa)))
		}
		return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, v1alpha1.StateIsolated, msg)
	case goal.IP == "":
		const msg = "the EIP is allocated; waiting for the Pod's IP"
		res, uerr := r.setState(ctx, pa, v1alpha1.StateWaitBackend, msg, reconcile.Result{})
		return res, errors.Join(uerr, r.tellPod(ctx, pod, a, pa, v1alpha1.StateWaitBackend, msg))
	}
	if pa.Status.State != v1alpha1.StateBound || pa.Status.BoundAt == nil {
		now := metaTime(r.clock())
		pa.Status.BoundAt = now
		if _, err := r.setState(ctx, pa, v1alpha1.StateBound, "", reconcile.Result{}); err != nil {
			return reconcile.Result{}, err
		}
		r.out.metrics.bound(pa, pod, now.Time)
		r.podEvent(pod, event.Normal(reasonBound, fmt.Sprintf("EIP %s (%s) on %s/%s", e.PublicIP, e.AddressID, e.ENIID, e.PrivateIP)))
	}
	return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, v1alpha1.StateBound, "")
}

// notGranted tells a PodAddress and its Pod that no EIPGrant admits the
// request: nothing was sent to the cloud. It looks again when an EIPGrant
// changes, and every notGrantedRecheck.
func (r *Reconciler) notGranted(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, msg string) (reconcile.Result, error) {
	if pa.Status.State != v1alpha1.StateNotGranted || pa.Status.Message != msg {
		r.podEvent(pod, event.Warning(reasonEIPNotGranted, errors.New(msg)))
	}
	res, err := r.setState(ctx, pa, v1alpha1.StateNotGranted, msg, reconcile.Result{RequeueAfter: notGrantedRecheck})
	return res, errors.Join(err, r.tellPod(ctx, pod, a, pa, v1alpha1.StateNotGranted, msg))
}

// eipRefused tells a PodAddress and its Pod that the cloud refuses its
// EIP request as it is; it is tried again with the doubling backoff of
// QuotaExceeded, and at once when the request changes.
func (r *Reconciler) eipRefused(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, msg string) (reconcile.Result, error) {
	d := r.eips.retry.Next(client.ObjectKeyFromObject(pa), time.Now())
	msg = fmt.Sprintf("%s; trying again in %s", msg, d)
	if pa.Status.State != v1alpha1.StateInvalid {
		r.podEvent(pod, event.Warning(reasonInvalidRequest, errors.New(msg)))
	}
	res, err := r.setState(ctx, pa, v1alpha1.StateInvalid, msg, reconcile.Result{RequeueAfter: d})
	return res, errors.Join(err, r.tellPod(ctx, pod, a, pa, v1alpha1.StateInvalid, msg))
}

// refusedEIPs maps an EIPGrant change to the PodAddresses it may now
// serve: those no grant admitted, or whose grant's quota was used up.
func (r *Reconciler) refusedEIPs(ctx context.Context, _ client.Object) []reconcile.Request {
	l := &v1alpha1.PodAddressList{}
	if err := r.kube.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range l.Items {
		if s := l.Items[i].Status.State; s == v1alpha1.StateNotGranted || s == v1alpha1.StateQuotaExceeded {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
		}
	}
	return reqs
}

// told is what the Pod's address condition says once bound.
func told(pa *v1alpha1.PodAddress) string {
	if e := pa.Status.EIP; e != nil && e.State != v1alpha1.EIPFallback {
		return fmt.Sprintf("EIP %s (%s)", e.PublicIP, e.AddressID)
	}
	return addresses(pa.Status.Bindings)
}

// noEIP handles an EIP that cannot be allocated: with a fallback pool the
// Pod gets its ports instead (and is told so); without one the PodAddress
// is QuotaExceeded and tries again with a doubling backoff.
func (r *Reconciler) noEIP(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, reason string) (reconcile.Result, error) {
	if fb := pa.Spec.EIP.FallbackPool; fb != nil {
		pa.Status.EIP = &v1alpha1.EIPBinding{State: v1alpha1.EIPFallback, Reason: reason}
		msg := fmt.Sprintf("no EIP (%s); falling back to ports of pool %s", reason, fb.Key(pa.GetNamespace()))
		if _, err := r.setState(ctx, pa, v1alpha1.StatePending, msg, reconcile.Result{}); err != nil {
			return reconcile.Result{}, err
		}
		r.podEvent(pod, event.Warning(reasonEIPFallback, errors.New(msg)))
		return r.bind(ctx, pa, pod, a, nil)
	}
	d := r.eips.retry.Next(client.ObjectKeyFromObject(pa), time.Now())
	msg := fmt.Sprintf("no EIP: %s; trying again in %s", reason, d)
	if pa.Status.State != v1alpha1.StateQuotaExceeded {
		r.podEvent(pod, event.Warning(reasonEIPUnavailable, errors.New(msg)))
	}
	res, err := r.setState(ctx, pa, v1alpha1.StateQuotaExceeded, msg, reconcile.Result{RequeueAfter: d})
	return res, errors.Join(err, r.tellPod(ctx, pod, a, pa, v1alpha1.StateQuotaExceeded, msg))
}
