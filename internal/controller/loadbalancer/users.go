package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpmeta "github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// A load balancer is deleted only once nothing of ours uses it: deleting
// it in the cloud takes its listeners and the Pods' targets with it. A
// garbage collector deletes a composite's resources all at once, so
// without this the load balancer went while the pool still served Pods
// from it. Its users are the PortPools that reference it or are on it
// (status) and the Listeners on it, in any namespace that may use it (all
// for an untagged load balancer, its owner's for one with owner tags). A
// waiting deletion is retried on the controller's error backoff (at most
// 30 s).

// maxUsersShown bounds the users named in the error.
const maxUsersShown = 5

// users returns "Kind namespace/name" of each resource that uses the load
// balancer of cr, sorted.
func (e *external) users(ctx context.Context, cr *v1alpha1.LoadBalancer) ([]string, error) {
	id := xpmeta.GetExternalName(cr)
	var out []string
	// Resources of namespaces that may not build on the load balancer
	// (mr.Owners) do not use it either: a tenant cannot hold up another
	// team's deletion by naming its load balancer.
	mayUse := e.mayUse(ctx, cr)
	pools := &v1alpha1.PortPoolList{}
	switch err := e.kube.List(ctx, pools); {
	case meta.IsNoMatchError(err): // the kind is not served (safe-start)
	case err != nil:
		return nil, errors.Wrap(err, "cannot list the PortPools that may use the load balancer")
	}
	for i := range pools.Items {
		if mayUse(pools.Items[i].GetNamespace()) && poolUses(&pools.Items[i], cr.GetNamespace(), cr.GetName(), id) {
			out = append(out, "PortPool "+pools.Items[i].GetNamespace()+"/"+pools.Items[i].GetName())
		}
	}
	listeners := &v1alpha1.ListenerList{}
	switch err := e.kube.List(ctx, listeners); {
	case meta.IsNoMatchError(err):
	case err != nil:
		return nil, errors.Wrap(err, "cannot list the Listeners that may use the load balancer")
	}
	for i := range listeners.Items {
		if l := &listeners.Items[i]; id != "" && mayUse(l.GetNamespace()) && ptrIs(l.Spec.ForProvider.LoadBalancerID, id) {
			out = append(out, "Listener "+l.GetNamespace()+"/"+l.GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}

// errInUse says which resources hold the deletion back.
func errInUse(users []string) error {
	shown := users[:min(len(users), maxUsersShown)]
	more := ""
	if n := len(users) - len(shown); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return errors.Errorf("the load balancer is still used by %s%s; it is deleted once they are gone", strings.Join(shown, ", "), more)
}

// poolUses reports whether pool p references the LoadBalancer ns/name or
// lists load balancer id among its own.
func poolUses(p *v1alpha1.PortPool, ns, name, id string) bool {
	for _, ref := range p.Spec.ForProvider.LoadBalancerIDRefs {
		refNS := ref.Namespace
		if refNS == "" {
			refNS = p.GetNamespace()
		}
		if refNS == ns && ref.Name == name {
			return true
		}
	}
	if id == "" {
		return false
	}
	for _, s := range p.Status.AtProvider.LoadBalancers {
		if s.ID == id {
			return true
		}
	}
	return slices.ContainsFunc(p.Spec.ForProvider.LoadBalancerIDs, func(v string) bool {
		_, lb, _ := strings.Cut(v, ":")
		return v == id || lb == id
	})
}

func ptrIs(p *string, v string) bool { return p != nil && *p == v }

// mayUse reports whether resources of a namespace may build on the load
// balancer of cr: its own namespace, those its consent lets in, and, for
// an untagged one, those a grant gives it to.
func (e *external) mayUse(ctx context.Context, cr *v1alpha1.LoadBalancer) func(ns string) bool {
	tags := cr.Status.AtProvider.Tags
	owner, tagged := mr.OwnerNamespace(tags)
	consent := cr.NamespaceConsent()
	return func(ns string) bool {
		switch {
		case ns == cr.GetNamespace() && (!tagged || ns == owner):
			return true
		case !tagged:
			return clients.Granted(ctx, e.kube, cr.GetProviderConfigReference(), ns, xpmeta.GetExternalName(cr), tags) == nil
		case owner != cr.GetNamespace():
			return false
		}
		consumer, err := clients.Consumer(ctx, e.kube, consent.NeedsLabels(), ns)
		return err != nil || consent.Allows(owner, consumer)
	}
}
