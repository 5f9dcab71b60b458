package podaddress

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/optional"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

// AnnotationAdmittedUntil marks a PodAddress made when its Pod was
// admitted: the time (RFC 3339) until which it waits for the Pod to be
// created. A Pod that was admitted but never created (a later webhook
// refused it, its client gave up) leaves a PodAddress that no Pod takes
// over; once the time has passed, the controller releases its ports and
// deletes it. Taking it over removes the annotation.
const AnnotationAdmittedUntil = "network.tencentcloud.crossplane.io/admitted-until"

// Request is what pod asks for, as the admission webhook reads it.
func (r *Reconciler) Request(ctx context.Context, pod *corev1.Pod) (webhook.Request, bool, error) {
	a, err := r.request(ctx, pod)
	if err != nil || a == nil {
		return webhook.Request{}, false, err
	}
	return webhook.Request{Syntax: a.syntax, ReadinessGate: a.readinessGate, EIP: a.spec.EIP != nil}, true, nil
}

// AllocateAtAdmission gives the admitted pod its bindings: those of an existing
// PodAddress of its name that already serves the request (a recreated
// StatefulSet Pod within its keep duration), or new ones recorded in a new
// PodAddress's status before the Pod is answered, so that a restarted
// provider rebuilds them and a Pod never created releases them.
func (r *Reconciler) AllocateAtAdmission(ctx context.Context, pod *corev1.Pod, until time.Time) ([]v1alpha1.PortBinding, error) {
	asked, err := r.request(ctx, pod)
	if err != nil || asked == nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(pod)
	if pa, err := optional.Get(ctx, r.kube, key, &v1alpha1.PodAddress{}); err != nil || pa != nil {
		if pa != nil {
			pa.AdoptCreatedBindings()
		}
		if pa != nil && sameRequest(pa.Spec, asked.spec) && covers(pa, pod) {
			return pa.Status.Bindings, nil
		}
		return nil, err
	}

	pa := &v1alpha1.PodAddress{}
	pa.SetNamespace(pod.Namespace)
	pa.SetName(pod.Name)
	pa.SetFinalizers([]string{Finalizer})
	pa.SetAnnotations(map[string]string{AnnotationAdmittedUntil: until.UTC().Format(time.RFC3339)})
	pa.Spec = asked.spec
	ws, err := wants(pa, pod)
	if err != nil {
		return nil, nil // invalid: the controller says why once the Pod exists
	}
	if no, err := r.refused(ctx, pa, ws); no != nil || err != nil {
		return nil, err // refused: the controller says why once the Pod exists
	}
	if dry, err := r.inDryRun(ctx, v1alpha1.PoolsOf(pa)); dry || err != nil {
		return nil, err // a dry run of the switch from tke-extend writes nothing
	}
	if err := r.kube.Create(ctx, pa); err != nil {
		if kerrors.IsAlreadyExists(err) {
			return nil, nil
		}
		return nil, errors.Wrap(err, "cannot create PodAddress")
	}
	// From here on the PodAddress exists: if anything fails, it is left
	// for the controller, which binds it once the Pod exists or deletes
	// it after the grace.
	rsv := r.alloc.pools.Reserve(pa)
	defer rsv.Drop()
	bs, err := rsv.AllocateAll(ctx, ports(ws))
	if err != nil {
		return nil, err
	}
	pa.Status.Bindings = bs
	msg := "allocated at admission; waiting for the Pod to be created"
	pa.Status.State, pa.Status.Message = v1alpha1.StateAllocated, msg
	setReady(pa, false, xpv2.ConditionReason(v1alpha1.StateAllocated), msg)
	if err := r.records.seal.Seal(pa); err != nil {
		return nil, err
	}
	if err := r.kube.Status().Update(ctx, pa); err != nil {
		return nil, errors.Wrap(err, "cannot record the bindings allocated at admission")
	}
	rsv.Commit()
	r.out.metrics.state(pa)
	return pa.Status.Bindings, nil
}

// covers reports whether pa has a binding for every address pod asks for.
func covers(pa *v1alpha1.PodAddress, pod *corev1.Pod) bool {
	ws, err := wants(pa, pod)
	if err != nil || len(ws) == 0 {
		return false
	}
	for _, w := range ws {
		if !w.In(pa.Status.Bindings) {
			return false
		}
	}
	return true
}

// admittedWait returns how long a PodAddress made at admission still waits
// for its Pod to be created, and whether it is one that was never taken
// over by a Pod.
func admittedWait(pa *v1alpha1.PodAddress, now time.Time) (time.Duration, bool) {
	v, ok := pa.GetAnnotations()[AnnotationAdmittedUntil]
	if !ok || pa.Spec.PodUID != "" {
		return 0, false
	}
	until, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0, true // unreadable: treat as expired
	}
	return max(until.Sub(now), 0), true
}
