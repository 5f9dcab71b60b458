package mr

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
)

// Tags the provider puts on every cloud resource it creates, naming its
// owner. The UID tag finds a resource whose id was never saved (the
// provider stopped between the create call and persisting the external
// name); the namespace tag decides which namespace may act on it.
const (
	TagUID       = "crossplane-uid"
	TagNamespace = "crossplane-namespace"
	TagName      = "crossplane-name"
	TagKind      = "crossplane-kind"
)

// Tags of the load balancers a PortPool creates. The UID tag finds them
// after a restart; the pool tag, namespace/name, names the pool.
const (
	TagPoolUID = "crossplane-portpool-uid"
	TagPool    = "crossplane-portpool"
)

// Tags of the EIPs of PodAddresses. The owner tag holds the PodAddress's
// UID; the warm-pool tag, namespace/name, names the PodAddressPolicy whose
// warm pool holds the EIP.
const (
	TagEIPOwner    = "network.tencentcloud.m.crossplane.io/owner"
	TagEIPWarmPool = "network.tencentcloud.m.crossplane.io/warm-pool"
)

// ReservedTagPrefixes start every tag key the provider writes. A user's
// tags may not use them: such a tag could get another resource's cloud
// object adopted (the UID tag) or name another owner. The CRDs' tags
// fields carry the same rule as CEL (ReservedTagsRule).
func ReservedTagPrefixes() []string {
	return []string{"crossplane-", "network.tencentcloud.m.crossplane.io/"}
}

// ReservedTags are every tag key the provider writes; each starts with one
// of ReservedTagPrefixes.
func ReservedTags() []string {
	return []string{TagUID, TagNamespace, TagName, TagKind, TagPoolUID, TagPool, TagEIPOwner, TagEIPWarmPool}
}

// ReservedTagsRule is the words of the rule, shared by the CRDs' CEL
// message and the controllers' refusal.
const ReservedTagsRule = "tag keys starting with crossplane- or network.tencentcloud.m.crossplane.io/ are the provider's own"

// IsReservedTag reports whether key is the provider's to write.
func IsReservedTag(key string) bool {
	return slices.ContainsFunc(ReservedTagPrefixes(), func(p string) bool { return strings.HasPrefix(key, p) })
}

// CheckTags refuses user tags holding a reserved key. Admission refuses
// them too; this catches objects written before that rule existed, before
// any cloud call. field names the tags in the error.
func CheckTags(field string, tags map[string]string) error {
	var bad []string
	for k := range tags {
		if IsReservedTag(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return errors.Errorf("%s: %s (%s)", field, ReservedTagsRule, strings.Join(bad, ", "))
}

// OwnerTags are the user's tags plus the tags naming mg, of kind, as
// owner. The owner's win: a reserved key among the user's (of an object
// older than the rule) never replaces them.
func OwnerTags(kind string, mg metav1.Object, user map[string]string) map[string]string {
	tags := maps.Clone(user)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[TagUID] = string(mg.GetUID())
	tags[TagNamespace] = mg.GetNamespace()
	tags[TagName] = mg.GetName()
	tags[TagKind] = kind
	return tags
}

// OwnerNamespace returns the namespace that tags name as the owner of a
// cloud object: its namespace tag, else the namespace of the PortPool or
// warm pool that made it. known is false when the object carries no owner
// tag at all (made in the console, or by other tools). An EIP of a
// PodAddress made before it carried its namespace is owned by a namespace
// nobody can tell: ns is "" and known true.
func OwnerNamespace(tags map[string]string) (ns string, known bool) {
	if ns, ok := tags[TagNamespace]; ok {
		return ns, true
	}
	for _, k := range []string{TagPool, TagEIPWarmPool} {
		if v, ok := tags[k]; ok {
			ns, _, _ := strings.Cut(v, "/")
			return ns, true
		}
	}
	if _, ok := tags[TagEIPOwner]; ok {
		return "", true
	}
	return "", false
}

// OwnerRule is the rule Owners.Check enforces, and who can change the
// answer.
const OwnerRule = "a namespace imports, adopts, changes, deletes or builds on only cloud objects whose owner tags name it, " +
	"a load balancer whose LoadBalancer lets it in (spec.consumers), or an untagged object its platform team granted it; " +
	"to hand one over, a platform admin changes its " + TagNamespace + " tag in the cloud"

// Use is what a managed resource does with a cloud object.
type Use int

const (
	// Manage is importing, adopting, changing or deleting the object
	// itself (a LoadBalancer, an Address).
	Manage Use = iota
	// BuildOn is putting listeners, rules, targets or pools on a load
	// balancer.
	BuildOn
)

// Owners decides which managed resources may act on which cloud objects,
// from the objects' owner tags, the consent of the LoadBalancer that owns
// a load balancer, and the platform team's grants of untagged objects.
type Owners struct {
	Kube client.Reader
}

// Check refuses mg acting (use) on the cloud object id (what, e.g. "load
// balancer lb-1", for messages) that carries tags: a tenant could
// otherwise import another team's object by id or name and change or
// delete it, or put listeners and targets on it. Refusals satisfy
// IsNotOwned.
func (o Owners) Check(ctx context.Context, mg resource.ModernManaged, use Use, what, id string, tags map[string]string) error {
	return o.CheckAs(ctx, mg.GetNamespace(), mg.GetProviderConfigReference(), use, what, id, tags)
}

// CheckAs is Check for a resource that acts for namespace ns through the
// provider config ref: a PortPool the provider made in tke-port-pools for
// a GameServerSet acts for the GameServerSet's namespace.
func (o Owners) CheckAs(ctx context.Context, ns string, ref *xpv2.ProviderConfigReference, use Use, what, id string, tags map[string]string) error {
	owner, known := OwnerNamespace(tags)
	switch {
	case known && owner == ns:
		return nil
	case !known:
		err := clients.Granted(ctx, o.Kube, ref, ns, id, tags)
		if err != nil && use == BuildOn {
			err = o.importerConsents(ctx, ns, id, tags, err)
		}
		if err != nil {
			return notGranted(fmt.Sprintf("%s carries no owner tags (made in the console or by another tool): %s", what, err))
		}
		return nil
	case owner == "" && tags[TagEIPOwner] != "":
		return notOwned(fmt.Sprintf("%s belongs to a PodAddress (tag %s) of no known namespace: %s", what, TagEIPOwner, OwnerRule))
	case owner == "":
		return notOwned(fmt.Sprintf("%s carries owner tags that name no namespace: %s", what, OwnerRule))
	case use == BuildOn && tags[TagKind] == clbv1alpha1.LoadBalancerKind:
		lb, err := o.owningLoadBalancer(ctx, tags)
		if err != nil {
			return err
		}
		if lb != nil {
			if err := o.consents(ctx, lb, ns); err != nil {
				return err
			}
			return nil
		}
	}
	return notOwned(fmt.Sprintf("%s belongs to namespace %s, not %s: %s", what, owner, ns, OwnerRule))
}

// Shared reports whether a load balancer that carries tags belongs to a
// LoadBalancer of another namespace than ns: one Check let ns build on
// only through its owner's consent.
func Shared(ns string, tags map[string]string) bool {
	owner, known := OwnerNamespace(tags)
	return known && owner != "" && owner != ns && tags[TagKind] == clbv1alpha1.LoadBalancerKind
}

// HeldListener refuses a listener of a shared load balancer (Shared) that
// no Listener of namespace ns holds: the consent lets ns add its own
// listeners, never take over the rules or targets of its owner's.
func (o Owners) HeldListener(ctx context.Context, ns, lbID, listenerID string) error {
	l := &clbv1alpha1.ListenerList{}
	if err := o.Kube.List(ctx, l, client.InNamespace(ns)); err != nil {
		return errors.Wrap(err, "cannot list the namespace's listeners")
	}
	for i := range l.Items {
		if meta.GetExternalName(&l.Items[i]) == listenerID && ptr.Deref(l.Items[i].Spec.ForProvider.LoadBalancerID, "") == lbID {
			return nil
		}
	}
	return notOwned(fmt.Sprintf("listener %s of load balancer %s is held by no Listener of namespace %s: on a load balancer of another namespace, a namespace acts only on its own listeners",
		listenerID, lbID, ns))
}

// SharedBound returns how many listeners namespace ns may hold on the
// load balancer that carries tags, and whether it is bounded: only when
// the load balancer belongs to another namespace that let ns in.
func (o Owners) SharedBound(ctx context.Context, ns string, tags map[string]string) (int, bool, error) {
	if !Shared(ns, tags) {
		return 0, false, nil
	}
	lb, err := o.owningLoadBalancer(ctx, tags)
	if err != nil || lb == nil {
		return 0, false, err
	}
	return lb.MaxListenersPerNamespace(), true, nil
}

// owningLoadBalancer is the LoadBalancer the owner tags name, nil when it
// is gone or another object of that name.
func (o Owners) owningLoadBalancer(ctx context.Context, tags map[string]string) (*clbv1alpha1.LoadBalancer, error) {
	lb := &clbv1alpha1.LoadBalancer{}
	err := o.Kube.Get(ctx, types.NamespacedName{Namespace: tags[TagNamespace], Name: tags[TagName]}, lb)
	if kerrors.IsNotFound(err) || (err == nil && string(lb.GetUID()) != tags[TagUID]) {
		return nil, nil
	}
	return lb, errors.Wrapf(err, "cannot read LoadBalancer %s/%s to check whom it lets in", tags[TagNamespace], tags[TagName])
}

// importerConsents returns nil when a LoadBalancer of another namespace
// imports the untagged load balancer id, was granted it, and lets ns
// build on it; else refused, the refusal of ns's own grants.
func (o Owners) importerConsents(ctx context.Context, ns, id string, tags map[string]string, refused error) error {
	l := &clbv1alpha1.LoadBalancerList{}
	if err := o.Kube.List(ctx, l); err != nil {
		return errors.Wrap(err, "cannot list LoadBalancers to find one that imports the load balancer")
	}
	for i := range l.Items {
		lb := &l.Items[i]
		if meta.GetExternalName(lb) != id || lb.GetNamespace() == ns ||
			clients.Granted(ctx, o.Kube, lb.GetProviderConfigReference(), lb.GetNamespace(), id, tags) != nil {
			continue
		}
		if o.consents(ctx, lb, ns) == nil {
			return nil
		}
	}
	return refused
}

// consents returns nil when lb lets namespace ns build on it.
func (o Owners) consents(ctx context.Context, lb *clbv1alpha1.LoadBalancer, ns string) error {
	c := lb.NamespaceConsent()
	consumer, err := clients.Consumer(ctx, o.Kube, c.NeedsLabels(), ns)
	if err != nil {
		return err
	}
	if c.Allows(lb.GetNamespace(), consumer) {
		return nil
	}
	return notOwned(fmt.Sprintf("load balancer %s belongs to LoadBalancer %s/%s, whose spec.consumers.namespaces (%s) does not let namespace %s in; its owners may let it in there",
		meta.GetExternalName(lb), lb.GetNamespace(), lb.GetName(), c.String(), ns))
}

// notOwned is a refusal of Check: the object belongs to another namespace.
type notOwned string

func (e notOwned) Error() string { return string(e) }

// notGranted is a refusal of Check: the object is untagged and no grant
// gives it to the namespace.
type notGranted string

func (e notGranted) Error() string { return string(e) }

// IsNotOwned reports whether err is (or wraps) a refusal of Check.
func IsNotOwned(err error) bool {
	var n notOwned
	var g notGranted
	return errors.As(err, &n) || errors.As(err, &g)
}

// IsNotGranted reports whether err is (or wraps) Check's refusal of an
// untagged object no grant gives: a platform team may still grant it, so
// what uses it waits rather than moving away.
func IsNotGranted(err error) bool {
	var g notGranted
	return errors.As(err, &g)
}

// Refuse is Observe's answer for err, an Owners refusal or any other
// error. While the resource is being deleted a refused object is reported
// gone, so that deleting the resource lets go of it and never calls the
// cloud; otherwise the error stands (Synced=False).
func Refuse(mg resource.Managed, err error) (managed.ExternalObservation, error) {
	if IsNotOwned(err) && meta.WasDeleted(mg) {
		return managed.ExternalObservation{}, nil
	}
	return managed.ExternalObservation{}, err
}
