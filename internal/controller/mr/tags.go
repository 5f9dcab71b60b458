package mr

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
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

// OwnerRule is the rule CheckOwner enforces, and who can change the
// answer.
const OwnerRule = "a namespace imports, adopts, changes, deletes or builds on only cloud objects whose owner tags name it, or that carry none; " +
	"to hand one over, a platform admin changes its " + TagNamespace + " tag in the cloud"

// CheckOwner refuses a cloud object (what, e.g. "load balancer lb-1")
// whose owner tags name a namespace other than ns: a tenant could
// otherwise import it by id or name and change or delete it, or put
// listeners and targets on it. An untagged object is allowed.
func CheckOwner(ns, what string, tags map[string]string) error {
	owner, known := OwnerNamespace(tags)
	switch {
	case !known || owner == ns:
		return nil
	case owner == "" && tags[TagEIPOwner] != "":
		return notOwned(fmt.Sprintf("%s belongs to a PodAddress (tag %s) of no known namespace: %s", what, TagEIPOwner, OwnerRule))
	case owner == "":
		return notOwned(fmt.Sprintf("%s carries owner tags that name no namespace: %s", what, OwnerRule))
	}
	return notOwned(fmt.Sprintf("%s belongs to namespace %s, not %s: %s", what, owner, ns, OwnerRule))
}

// notOwned is CheckOwner's refusal.
type notOwned string

func (e notOwned) Error() string { return string(e) }

// IsNotOwned reports whether err is (or wraps) a refusal of CheckOwner.
func IsNotOwned(err error) bool {
	var n notOwned
	return errors.As(err, &n)
}

// Refuse is Observe's answer for err, a CheckOwner refusal or any other
// error. While the resource is being deleted a refused object is reported
// gone, so that deleting the resource lets go of it and never calls the
// cloud; otherwise the error stands (Synced=False).
func Refuse(mg resource.Managed, err error) (managed.ExternalObservation, error) {
	if IsNotOwned(err) && meta.WasDeleted(mg) {
		return managed.ExternalObservation{}, nil
	}
	return managed.ExternalObservation{}, err
}
