package clb

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// Load balancer states as the provider reports them.
const (
	LoadBalancerCreating = "Creating"
	LoadBalancerNormal   = "Normal"
)

const defaultLoadBalancerType = "OPEN"

// LoadBalancerName is the load balancer's name in the cloud: spec, or
// metadata.name cut to the cloud's 60 characters.
func LoadBalancerName(cr *v1alpha1.LoadBalancer) string {
	if cr.Spec.ForProvider.Name != nil {
		return *cr.Spec.ForProvider.Name
	}
	n := cr.GetName()
	if len(n) > 60 {
		n = n[:60]
	}
	return n
}

// CreateLoadBalancerRequest is the CreateLoadBalancer request for cr,
// tagged with tags (the spec's own are the caller's to include).
func CreateLoadBalancerRequest(cr *v1alpha1.LoadBalancer, tags map[string]string) *clbsdk.CreateLoadBalancerRequest {
	p := cr.Spec.ForProvider
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerName = Ptr(LoadBalancerName(cr))
	req.LoadBalancerType = Ptr(defaultLoadBalancerType)
	if p.Type != nil {
		req.LoadBalancerType = p.Type
	}
	req.VpcId = p.VpcID
	req.SubnetId = p.SubnetID
	req.VipIsp = p.VipIsp
	req.AddressIPVersion = p.AddressIPVersion
	req.SlaType = p.SLAType
	req.ProjectId = p.ProjectID
	req.MasterZoneId = p.MasterZoneID
	req.BandwidthPackageId = p.BandwidthPackageID
	req.LoadBalancerPassToTarget = p.LoadBalancerPassToTarget
	if ia := p.InternetAccessible; ia != nil {
		req.InternetAccessible = &clbsdk.InternetAccessible{InternetChargeType: ia.InternetChargeType, InternetMaxBandwidthOut: ia.InternetMaxBandwidthOut}
	}
	// The UID makes a retried create return the same load balancer, and its
	// tag finds a load balancer whose id was never saved.
	req.ClientToken = Ptr(string(cr.GetUID()))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		req.Tags = append(req.Tags, &clbsdk.TagInfo{TagKey: Ptr(k), TagValue: Ptr(tags[k])})
	}
	return req
}

// ObserveLoadBalancer is the observation of lb.
func ObserveLoadBalancer(lb *clbsdk.LoadBalancer, task v1alpha1.TaskStatus) v1alpha1.LoadBalancerObservation {
	o := v1alpha1.LoadBalancerObservation{
		ID:          Deref(lb.LoadBalancerId),
		Name:        Deref(lb.LoadBalancerName),
		Type:        Deref(lb.LoadBalancerType),
		AddressIPv6: Deref(lb.AddressIPv6),
		Domain:      Deref(lb.LoadBalancerDomain),
		Status:      LoadBalancerCreating,
		VpcID:       Deref(lb.VpcId),
		SubnetID:    Deref(lb.SubnetId),
		VipIsp:      Deref(lb.VipIsp),
		CreateTime:  Deref(lb.CreateTime),
		Task:        task,
	}
	if o.Domain == "" {
		o.Domain = Deref(lb.Domain)
	}
	if Deref(lb.Status) == 1 {
		o.Status = LoadBalancerNormal
	}
	o.VIPs = LoadBalancerVIPs(lb)
	o.Tags = LoadBalancerTags(lb)
	return o
}

// LoadBalancerVIPs are the addresses lb is reached at: LoadBalancerVips,
// or for an IPv6 load balancer (IPV6 NAT64 or IPv6FullChain), whose
// LoadBalancerVips the cloud leaves empty, AddressIPv6.
func LoadBalancerVIPs(lb *clbsdk.LoadBalancer) []string {
	var out []string
	for _, v := range lb.LoadBalancerVips {
		out = append(out, Deref(v))
	}
	if len(out) == 0 && Deref(lb.AddressIPv6) != "" {
		out = []string{*lb.AddressIPv6}
	}
	return out
}

// IPv6Mode values of an IPv6 load balancer as the cloud answers them.
const (
	IPv6ModeNAT64     = "IPv6Nat64"
	IPv6ModeFullChain = "IPv6FullChain"
)

// IsFullChain reports whether lb is an IPv6FullChain load balancer, the
// kind that forwards to IPv6 targets (an IPv6 NAT64 one, to IPv4 ones).
func IsFullChain(lb *clbsdk.LoadBalancer) bool {
	return strings.EqualFold(Deref(lb.IPv6Mode), IPv6ModeFullChain)
}

// LoadBalancerTags are the tags of lb; nil when it has none.
func LoadBalancerTags(lb *clbsdk.LoadBalancer) map[string]string {
	if len(lb.Tags) == 0 {
		return nil
	}
	tags := make(map[string]string, len(lb.Tags))
	for _, t := range lb.Tags {
		tags[Deref(t.TagKey)] = Deref(t.TagValue)
	}
	return tags
}

// LateInitLoadBalancer fills the unset fields of p from the cloud and
// reports whether it changed anything. Set fields are never overwritten, so it
// converges after one pass. Tags are left alone: the cloud's include the
// provider's own.
func LateInitLoadBalancer(p *v1alpha1.LoadBalancerParameters, lb *clbsdk.LoadBalancer) bool {
	changed := anyOf(
		lateInitString(&p.Name, lb.LoadBalancerName),
		lateInitString(&p.Type, lb.LoadBalancerType),
		lateInitString(&p.VpcID, lb.VpcId),
		lateInitString(&p.SubnetID, lb.SubnetId),
		lateInitString(&p.VipIsp, lb.VipIsp),
		lateInitString(&p.AddressIPVersion, addressIPVersion(lb)),
		lateInitString(&p.SLAType, lb.SlaType),
		lateInitValue(&p.LoadBalancerPassToTarget, lb.LoadBalancerPassToTarget))
	if lb.MasterZone != nil && lateInitString(&p.MasterZoneID, lb.MasterZone.Zone) {
		changed = true
	}
	if p.ProjectID == nil && lb.ProjectId != nil {
		p.ProjectID = Ptr(int64(*lb.ProjectId)) //nolint:gosec // G115: project ids are small.
		changed = true
	}
	if na := lb.NetworkAttributes; na != nil && (na.InternetChargeType != nil || na.InternetMaxBandwidthOut != nil) {
		if p.InternetAccessible == nil {
			p.InternetAccessible = &v1alpha1.InternetAccessible{}
		}
		ia := p.InternetAccessible
		if anyOf(lateInitString(&ia.InternetChargeType, na.InternetChargeType), lateInitValue(&ia.InternetMaxBandwidthOut, na.InternetMaxBandwidthOut)) {
			changed = true
		}
		if ia.InternetChargeType == nil && ia.InternetMaxBandwidthOut == nil {
			p.InternetAccessible = nil
		}
	}
	return changed
}

// addressIPVersion maps the cloud's lowercase answer (ipv4, ipv6 plus an
// IPv6 mode) to the spelling CreateLoadBalancer documents and the CRD takes.
func addressIPVersion(lb *clbsdk.LoadBalancer) *string {
	v := strings.ToUpper(Deref(lb.AddressIPVersion))
	switch {
	case v == "":
		return nil
	case v == "IPV6" && IsFullChain(lb):
		return Ptr("IPv6FullChain")
	case v == "IPV6FULLCHAIN":
		return Ptr("IPv6FullChain")
	}
	return &v
}

// DiffLoadBalancer describes, one field a line, how the mutable fields of p differ from
// the cloud; empty means up to date. Immutable fields are enforced by the
// API server and not compared.
func DiffLoadBalancer(p v1alpha1.LoadBalancerParameters, lb *clbsdk.LoadBalancer) string {
	var d []string
	add := func(field string, want, got any) {
		d = append(d, fmt.Sprintf("%s: want %v, got %v", field, want, got))
	}
	if p.Name != nil && *p.Name != Deref(lb.LoadBalancerName) {
		add("name", *p.Name, Deref(lb.LoadBalancerName))
	}
	if p.LoadBalancerPassToTarget != nil && *p.LoadBalancerPassToTarget != Deref(lb.LoadBalancerPassToTarget) {
		add("loadBalancerPassToTarget", *p.LoadBalancerPassToTarget, Deref(lb.LoadBalancerPassToTarget))
	}
	if ia := p.InternetAccessible; ia != nil {
		na := lb.NetworkAttributes
		if na == nil {
			na = &clbsdk.InternetAccessible{}
		}
		if ia.InternetChargeType != nil && *ia.InternetChargeType != Deref(na.InternetChargeType) {
			add("internetAccessible.internetChargeType", *ia.InternetChargeType, Deref(na.InternetChargeType))
		}
		if ia.InternetMaxBandwidthOut != nil && *ia.InternetMaxBandwidthOut != Deref(na.InternetMaxBandwidthOut) {
			add("internetAccessible.internetMaxBandwidthOut", *ia.InternetMaxBandwidthOut, Deref(na.InternetMaxBandwidthOut))
		}
	}
	return strings.Join(d, "; ")
}

// ModifyLoadBalancerRequest sets every mutable field the spec sets; sending unchanged
// values is harmless and keeps Update free of a second describe.
func ModifyLoadBalancerRequest(id string, p v1alpha1.LoadBalancerParameters) *clbsdk.ModifyLoadBalancerAttributesRequest {
	req := clbsdk.NewModifyLoadBalancerAttributesRequest()
	req.LoadBalancerId = Ptr(id)
	req.LoadBalancerName = p.Name
	req.LoadBalancerPassToTarget = p.LoadBalancerPassToTarget
	if ia := p.InternetAccessible; ia != nil {
		req.InternetChargeInfo = &clbsdk.InternetAccessible{InternetChargeType: ia.InternetChargeType, InternetMaxBandwidthOut: ia.InternetMaxBandwidthOut}
	}
	return req
}
