package function

import (
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Names of the composed resources within the pipeline (not their
// metadata.name). Existing load balancers are keyed by id so that adding or
// removing one leaves the others in place; created ones by index.
const (
	namePortPool = resource.Name("portpool")
	namePolicy   = resource.Name("podaddresspolicy")
)

func nameExistingLB(id string) resource.Name { return resource.Name("loadbalancer-" + id) }
func nameCreatedLB(i int64) resource.Name {
	return resource.Name("loadbalancer-" + strconv.FormatInt(i, 10))
}

// target is where the composed resources go: their namespace and the prefix
// of their names (the composite's name, unique in the namespace for v2 XRs,
// and unique cluster-wide for legacy XRs).
type target struct {
	namespace string
	name      string
}

// A part is a composed resource and the pipeline name it goes by.
type part struct {
	name resource.Name
	obj  runtime.Object
}

// compose turns a PodPublicAddress spec into the load balancers, pool and
// policy that implement it. Errors are the user's: a spec the resources
// below cannot express.
func compose(t target, s *PodPublicAddressSpec) ([]part, error) {
	if err := validate(s); err != nil {
		return nil, err
	}
	var out []part
	pool := &clbv1alpha1.PortPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: clbv1alpha1.SchemeGroupVersion.String(), Kind: clbv1alpha1.PortPoolKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: t.namespace, Name: t.name},
	}
	pp := &pool.Spec.ForProvider
	pool.Spec.ProviderConfigReference = s.ProviderConfigRef

	if s.Region != "" {
		// The pool reaches load balancers of another region by region:id;
		// a reference to a LoadBalancer would carry the id only.
		for _, id := range s.LoadBalancers.ExistingIDs {
			pp.LoadBalancerIDs = append(pp.LoadBalancerIDs, s.Region+":"+id)
		}
	} else {
		for _, id := range s.LoadBalancers.ExistingIDs {
			lb := loadBalancer(t, t.name+"-"+id, s.ProviderConfigRef)
			meta.SetExternalName(lb, id)
			// Observe only: never changed or deleted by us.
			lb.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
			out = append(out, part{name: nameExistingLB(id), obj: lb})
			pp.LoadBalancerIDRefs = append(pp.LoadBalancerIDRefs, xpv2.NamespacedReference{Name: lb.Name})
		}
	}
	for i := range s.LoadBalancers.Count {
		lb := loadBalancer(t, t.name+"-"+strconv.FormatInt(i, 10), s.ProviderConfigRef)
		lb.Spec.ForProvider = *s.LoadBalancers.Template.DeepCopy()
		out = append(out, part{name: nameCreatedLB(i), obj: lb})
		pp.LoadBalancerIDRefs = append(pp.LoadBalancerIDRefs, xpv2.NamespacedReference{Name: lb.Name})
	}

	pp.StartPort, pp.EndPort = s.PortRange.Start, s.PortRange.End
	pp.SegmentLength = s.SegmentLength
	pp.Protocols = listenerProtocols(s.Ports)
	pp.Listener = s.Listener
	pp.AllocationPolicy = s.AllocationPolicy
	if ac := s.LoadBalancers.AutoCreate; ac != nil {
		pp.AutoCreate = &clbv1alpha1.PoolAutoCreate{MaxLoadBalancers: ac.MaxLoadBalancers, MinFreeSlots: ac.MinFreeSlots}
		if s.LoadBalancers.Template != nil {
			pp.AutoCreate.Template = *s.LoadBalancers.Template.DeepCopy()
		}
	}
	out = append(out, part{name: namePortPool, obj: pool})

	policy := &networkv1alpha1.PodAddressPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: networkv1alpha1.SchemeGroupVersion.String(), Kind: networkv1alpha1.PodAddressPolicyKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: t.namespace, Name: t.name},
		Spec: networkv1alpha1.PodAddressPolicySpec{
			Selector:     *s.Selector.DeepCopy(),
			Strategy:     s.Strategy,
			KeepDuration: s.KeepDuration,
			Backend:      s.Backend,
		},
	}
	for _, p := range s.Ports {
		policy.Spec.Ports = append(policy.Spec.Ports, networkv1alpha1.PortRequest{
			Port:              p.Port,
			Protocol:          p.Protocol,
			Pools:             []networkv1alpha1.PoolRef{{Name: pool.Name}},
			AddressAnnotation: p.AddressAnnotation,
		})
	}
	out = append(out, part{name: namePolicy, obj: policy})
	return out, nil
}

func loadBalancer(t target, name string, pc *xpv2.ProviderConfigReference) *clbv1alpha1.LoadBalancer {
	lb := &clbv1alpha1.LoadBalancer{
		TypeMeta:   metav1.TypeMeta{APIVersion: clbv1alpha1.SchemeGroupVersion.String(), Kind: clbv1alpha1.LoadBalancerKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: t.namespace, Name: name},
	}
	lb.Spec.ProviderConfigReference = pc
	return lb
}

// listenerProtocols are the protocols of the pool's listeners: every
// protocol a port asks for, TCP_UDP being both TCP and UDP, in a fixed
// order so that the pool's spec does not churn.
func listenerProtocols(ports []Port) []string {
	var out []string
	for _, p := range ports {
		for _, proto := range networkv1alpha1.ListenerProtocols(p.Protocol) {
			if !slices.Contains(out, proto) {
				out = append(out, proto)
			}
		}
	}
	slices.Sort(out)
	return out
}

// validate refuses what the PortPool would refuse, with the composite's
// field names, so that the user sees the reason on the composite instead
// of a failed apply of a resource they did not write.
func validate(s *PodPublicAddressSpec) error {
	if len(s.Ports) == 0 {
		return fmt.Errorf("spec.ports: at least one port is needed")
	}
	lbs := s.LoadBalancers
	if lbs.Count > 0 && lbs.Template == nil {
		return fmt.Errorf("spec.loadBalancers.count needs spec.loadBalancers.template")
	}
	if lbs.AutoCreate != nil && lbs.Template == nil {
		return fmt.Errorf("spec.loadBalancers.autoCreate needs spec.loadBalancers.template")
	}
	if len(lbs.ExistingIDs) == 0 && lbs.Count == 0 && lbs.AutoCreate == nil {
		return fmt.Errorf("spec.loadBalancers: give existingIds, a template with a count, or autoCreate")
	}
	if lbs.Template != nil && lbs.Template.Region != nil {
		return fmt.Errorf("spec.loadBalancers.template.region is not supported: the pool finds its load balancers in the ProviderConfig's region; use a ProviderConfig of region %s", *lbs.Template.Region)
	}
	if s.Region != "" && lbs.Count > 0 {
		return fmt.Errorf("spec.region applies to existing load balancers only: load balancers are created in the ProviderConfig's region, so use a ProviderConfig of region %s instead", s.Region)
	}
	r := s.PortRange
	if r.Start < 1 || r.End > 65535 || r.End < r.Start {
		return fmt.Errorf("spec.portRange: %d-%d is not a range of ports within 1-65535", r.Start, r.End)
	}
	if seg := s.SegmentLength; seg != nil && *seg > r.End-r.Start+1 {
		return fmt.Errorf("spec.segmentLength %d is longer than spec.portRange %d-%d (%d ports): one segment is one port-range listener, whose ports end at 65535",
			*seg, r.Start, r.End, r.End-r.Start+1)
	}
	if seg := s.SegmentLength; seg != nil && *seg > 1 && (r.End-r.Start+1)%*seg != 0 {
		return fmt.Errorf("spec.portRange %d-%d is not a whole number of segments of %d ports", r.Start, r.End, *seg)
	}
	if n := len(listenerProtocols(s.Ports)); n > 2 {
		return fmt.Errorf("spec.ports ask for %d listener protocols (%v); one pool serves at most two", n, listenerProtocols(s.Ports))
	}
	return nil
}

// toComposed converts a typed object for the response. Status is dropped:
// a function states desired spec and metadata only.
func toComposed(o runtime.Object) (*composed.Unstructured, error) {
	u, err := composed.From(o)
	if err != nil {
		return nil, err
	}
	delete(u.Object, "status")
	return u, nil
}
