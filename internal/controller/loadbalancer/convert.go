package loadbalancer

import (
	"fmt"
	"sort"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// Load balancer states as the provider reports them.
const (
	statusCreating = "Creating"
	statusNormal   = "Normal"
)

const defaultType = "OPEN"

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

// name is the load balancer's name in the cloud: spec, or metadata.name.
func name(cr *v1alpha1.LoadBalancer) string {
	if cr.Spec.ForProvider.Name != nil {
		return *cr.Spec.ForProvider.Name
	}
	n := cr.GetName()
	if len(n) > 60 {
		n = n[:60]
	}
	return n
}

// CreateRequest is the CreateLoadBalancer request for cr; tests replay it to
// simulate a create whose result was lost.
func CreateRequest(cr *v1alpha1.LoadBalancer) *clbsdk.CreateLoadBalancerRequest {
	p := cr.Spec.ForProvider
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerName = ptr(name(cr))
	req.LoadBalancerType = ptr(defaultType)
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
	uid := string(cr.GetUID())
	req.ClientToken = ptr(uid)
	tags := mr.OwnerTags(cr, p.Tags)
	for _, k := range sortedKeys(tags) {
		req.Tags = append(req.Tags, &clbsdk.TagInfo{TagKey: ptr(k), TagValue: ptr(tags[k])})
	}
	return req
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func observe(lb *clbsdk.LoadBalancer, task v1alpha1.TaskStatus) v1alpha1.LoadBalancerObservation {
	o := v1alpha1.LoadBalancerObservation{
		ID:          deref(lb.LoadBalancerId),
		Name:        deref(lb.LoadBalancerName),
		Type:        deref(lb.LoadBalancerType),
		AddressIPv6: deref(lb.AddressIPv6),
		Domain:      deref(lb.LoadBalancerDomain),
		Status:      statusCreating,
		VpcID:       deref(lb.VpcId),
		SubnetID:    deref(lb.SubnetId),
		VipIsp:      deref(lb.VipIsp),
		CreateTime:  deref(lb.CreateTime),
		Task:        task,
	}
	if o.Domain == "" {
		o.Domain = deref(lb.Domain)
	}
	if deref(lb.Status) == 1 {
		o.Status = statusNormal
	}
	for _, v := range lb.LoadBalancerVips {
		o.VIPs = append(o.VIPs, deref(v))
	}
	if len(lb.Tags) > 0 {
		o.Tags = map[string]string{}
		for _, t := range lb.Tags {
			o.Tags[deref(t.TagKey)] = deref(t.TagValue)
		}
	}
	return o
}

// lateInitialize fills the unset fields of p from the cloud and reports
// whether it changed anything. Set fields are never overwritten, so it
// converges after one pass. Tags are left alone: the cloud's include the
// provider's own.
func lateInitialize(p *v1alpha1.LoadBalancerParameters, lb *clbsdk.LoadBalancer) bool {
	changed := false
	str := func(dst **string, v *string) {
		if *dst == nil && v != nil && *v != "" {
			*dst = ptr(*v)
			changed = true
		}
	}
	str(&p.Name, lb.LoadBalancerName)
	str(&p.Type, lb.LoadBalancerType)
	str(&p.VpcID, lb.VpcId)
	str(&p.SubnetID, lb.SubnetId)
	str(&p.VipIsp, lb.VipIsp)
	str(&p.AddressIPVersion, addressIPVersion(lb))
	str(&p.SLAType, lb.SlaType)
	if p.MasterZoneID == nil && lb.MasterZone != nil && deref(lb.MasterZone.Zone) != "" {
		p.MasterZoneID = ptr(*lb.MasterZone.Zone)
		changed = true
	}
	if p.ProjectID == nil && lb.ProjectId != nil {
		p.ProjectID = ptr(int64(*lb.ProjectId)) //nolint:gosec // G115: project ids are small.
		changed = true
	}
	if p.LoadBalancerPassToTarget == nil && lb.LoadBalancerPassToTarget != nil {
		p.LoadBalancerPassToTarget = ptr(*lb.LoadBalancerPassToTarget)
		changed = true
	}
	if na := lb.NetworkAttributes; na != nil && (na.InternetChargeType != nil || na.InternetMaxBandwidthOut != nil) {
		if p.InternetAccessible == nil {
			p.InternetAccessible = &v1alpha1.InternetAccessible{}
		}
		ia := p.InternetAccessible
		if ia.InternetChargeType == nil && deref(na.InternetChargeType) != "" {
			ia.InternetChargeType = ptr(*na.InternetChargeType)
			changed = true
		}
		if ia.InternetMaxBandwidthOut == nil && na.InternetMaxBandwidthOut != nil {
			ia.InternetMaxBandwidthOut = ptr(*na.InternetMaxBandwidthOut)
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
	v := strings.ToUpper(deref(lb.AddressIPVersion))
	switch {
	case v == "":
		return nil
	case v == "IPV6" && strings.EqualFold(deref(lb.IPv6Mode), "IPv6FullChain"):
		return ptr("IPv6FullChain")
	case v == "IPV6FULLCHAIN":
		return ptr("IPv6FullChain")
	}
	return &v
}

// diff describes, one field a line, how the mutable fields of p differ from
// the cloud; empty means up to date. Immutable fields are enforced by the
// API server and not compared.
func diff(p v1alpha1.LoadBalancerParameters, lb *clbsdk.LoadBalancer) string {
	var d []string
	add := func(field string, want, got any) {
		d = append(d, fmt.Sprintf("%s: want %v, got %v", field, want, got))
	}
	if p.Name != nil && *p.Name != deref(lb.LoadBalancerName) {
		add("name", *p.Name, deref(lb.LoadBalancerName))
	}
	if p.LoadBalancerPassToTarget != nil && *p.LoadBalancerPassToTarget != deref(lb.LoadBalancerPassToTarget) {
		add("loadBalancerPassToTarget", *p.LoadBalancerPassToTarget, deref(lb.LoadBalancerPassToTarget))
	}
	if ia := p.InternetAccessible; ia != nil {
		na := lb.NetworkAttributes
		if na == nil {
			na = &clbsdk.InternetAccessible{}
		}
		if ia.InternetChargeType != nil && *ia.InternetChargeType != deref(na.InternetChargeType) {
			add("internetAccessible.internetChargeType", *ia.InternetChargeType, deref(na.InternetChargeType))
		}
		if ia.InternetMaxBandwidthOut != nil && *ia.InternetMaxBandwidthOut != deref(na.InternetMaxBandwidthOut) {
			add("internetAccessible.internetMaxBandwidthOut", *ia.InternetMaxBandwidthOut, deref(na.InternetMaxBandwidthOut))
		}
	}
	return strings.Join(d, "; ")
}

// modifyRequest sets every mutable field the spec sets; sending unchanged
// values is harmless and keeps Update free of a second describe.
func modifyRequest(id string, p v1alpha1.LoadBalancerParameters) *clbsdk.ModifyLoadBalancerAttributesRequest {
	req := clbsdk.NewModifyLoadBalancerAttributesRequest()
	req.LoadBalancerId = ptr(id)
	req.LoadBalancerName = p.Name
	req.LoadBalancerPassToTarget = p.LoadBalancerPassToTarget
	if ia := p.InternetAccessible; ia != nil {
		req.InternetChargeInfo = &clbsdk.InternetAccessible{InternetChargeType: ia.InternetChargeType, InternetMaxBandwidthOut: ia.InternetMaxBandwidthOut}
	}
	return req
}

func connectionDetails(o v1alpha1.LoadBalancerObservation) managed.ConnectionDetails {
	cd := managed.ConnectionDetails{}
	if len(o.VIPs) > 0 {
		cd[ConnVIP] = []byte(o.VIPs[0])
	}
	if o.Domain != "" {
		cd[ConnDomain] = []byte(o.Domain)
	}
	return cd
}
