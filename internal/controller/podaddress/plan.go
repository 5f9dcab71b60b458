package podaddress

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/certgrant"
)

// A plan is what pa's request comes to for its Pod, worked out once per
// reconcile: the addresses it wants, whether a limit or pool refuses
// them, and where each forwards. create's preallocate and bind's steps
// read the same plan, so no step works any of it out again.
type plan struct {
	ws []want
	// invalid: the request cannot be served as it stands.
	invalid error
	// no: a limit or a pool's consent refuses the wants.
	no *refusal
	// cert: a port's certSecret is refused (certs.go).
	cert *certgrant.Refusal
	// ds is where each want forwards, once ready: the Pod has its IP (or
	// node). destErr is why it could not be worked out (a NodePort
	// Service or node that cannot be read).
	ds      []dest
	ready   bool
	destErr error
}

// planFor works out the plan of pa's request for pod. Its error is one of
// reading the pools' consent; everything else is in the plan.
func (r *Reconciler) planFor(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod) (*plan, error) {
	p := &plan{}
	if p.ws, p.invalid = wants(pa, pod); p.invalid != nil {
		return p, nil
	}
	var err error
	if p.no, err = r.refused(ctx, pa, p.ws); err != nil || p.no != nil {
		return p, err
	}
	if p.cert, err = r.decideCerts(ctx, pa, p.ws); err != nil || p.cert != nil {
		return p, err
	}
	p.ds, p.ready, p.destErr = r.dests(ctx, pod, p.ws)
	return p, nil
}
