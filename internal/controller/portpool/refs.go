package portpool

import (
	"context"
	"slices"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// specLoadBalancers returns the load balancers the spec names now:
// loadBalancerIds, then the referenced and the selected LoadBalancers. The
// references are resolved at every reconcile rather than copied into
// loadBalancerIds, so a reference that is removed takes its load balancer
// out of the pool. A referenced LoadBalancer that does not exist yet, or
// has no id yet, is left out until it has one.
func (e *external) specLoadBalancers(ctx context.Context, cr *v1alpha1.PortPool) ([]string, error) {
	p := cr.Spec.ForProvider
	out := slices.Clone(p.LoadBalancerIDs)
	for _, ref := range p.LoadBalancerIDRefs {
		lb := &v1alpha1.LoadBalancer{}
		ns := ref.Namespace
		if ns == "" {
			ns = cr.GetNamespace()
		}
		err := e.kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, lb)
		if kerrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, errors.Wrapf(err, "cannot get referenced LoadBalancer %s/%s", ns, ref.Name)
		}
		if id := meta.GetExternalName(lb); strings.HasPrefix(id, "lb-") {
			out = append(out, id)
		}
	}
	if sel := p.LoadBalancerIDSelector; sel != nil {
		ns := sel.Namespace
		if ns == "" {
			ns = cr.GetNamespace()
		}
		l := &v1alpha1.LoadBalancerList{}
		if err := e.kube.List(ctx, l, client.InNamespace(ns), client.MatchingLabels(sel.MatchLabels)); err != nil {
			return nil, errors.Wrap(err, "cannot list the selected LoadBalancers")
		}
		slices.SortFunc(l.Items, func(a, b v1alpha1.LoadBalancer) int { return strings.Compare(a.GetName(), b.GetName()) })
		for i := range l.Items {
			lb := &l.Items[i]
			if sel.MatchControllerRef != nil && *sel.MatchControllerRef && !sameController(lb, cr) {
				continue
			}
			if id := meta.GetExternalName(lb); strings.HasPrefix(id, "lb-") {
				out = append(out, id)
			}
		}
	}
	return out, nil
}

// sameController reports whether a and b have the same controller.
func sameController(a, b client.Object) bool {
	ca, cb := metav1.GetControllerOf(a), metav1.GetControllerOf(b)
	return ca != nil && cb != nil && ca.UID == cb.UID
}
