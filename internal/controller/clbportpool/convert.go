package clbportpool

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
)

const (
	maxPort = 65535
	// maxAutoCreated is the PortPool's bound on autoCreate.maxLoadBalancers.
	maxAutoCreated = 100
)

// defaultProtocols are the listeners of a pool that does not say: a port
// of a tke-extend pool may be asked for as TCP, UDP or TCPUDP.
func defaultProtocols() []string { return []string{"TCP", "UDP"} }

// A mapping is the PortPool a CLBPortPool becomes, and what of the
// CLBPortPool it does not honour.
type mapping struct {
	params    clbv1alpha1.PortPoolParameters
	consumers clbv1alpha1.PoolConsumers
	// annotations of the PortPool: AnnotationActsFor for a
	// GameServerSet's pool, AnnotationTKESwitch and AnnotationTKEAutoCreated
	// for a pool switched from tke-extend.
	annotations map[string]string
	// policies of the PortPool: Observe only in a dry run of the switch
	// from tke-extend (AnnotationTKESwitch); nil otherwise.
	policies xpv2.ManagementPolicies
	ignored  []string
}

// toPortPool maps a CLBPortPool's spec (and its annotations) to a PortPool's.
// An error says why no PortPool can be made.
func toPortPool(cpp *v1alpha1.CLBPortPool) (mapping, error) {
	s := cpp.Spec
	m := mapping{consumers: consumers(cpp), annotations: actsFor(cpp)}
	if v, ok := cpp.Annotations[clbv1alpha1.AnnotationTKESwitch]; ok {
		if v != clbv1alpha1.TKESwitchDryRun {
			return m, fmt.Errorf("annotation %s: %q is not %s (remove it to make the switch)", clbv1alpha1.AnnotationTKESwitch, v, clbv1alpha1.TKESwitchDryRun)
		}
		if m.annotations == nil {
			m.annotations = map[string]string{}
		}
		m.annotations[clbv1alpha1.AnnotationTKESwitch] = v
		m.policies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	}
	if v := cpp.Annotations[v1alpha1.AnnotationTKEAutoCreated]; v != "" {
		// The PortPool tags them as its own once the switch is made.
		if m.annotations == nil {
			m.annotations = map[string]string{}
		}
		m.annotations[v1alpha1.AnnotationTKEAutoCreated] = v
	}
	protocols, err := poolProtocols(cpp, &m.ignored)
	if err != nil {
		return m, err
	}
	seg := int64(1)
	if s.SegmentLength != nil && *s.SegmentLength > 1 {
		seg = *s.SegmentLength
		for _, p := range protocols {
			if p != "TCP" && p != "UDP" {
				return m, fmt.Errorf("segmentLength %d: port segments are only for TCP and UDP listeners, not %s", seg, p)
			}
		}
	}
	end, err := endPort(s, seg, int64(len(protocols)), &m.ignored)
	if err != nil {
		return m, err
	}
	p := &m.params
	p.StartPort, p.EndPort = s.StartPort, end
	if seg > 1 {
		p.SegmentLength = ptr.To(seg)
	}
	p.Protocols = protocols
	for _, id := range withAutoCreated(cpp) {
		if s.Region != nil {
			id = *s.Region + ":" + id
		}
		p.LoadBalancerIDs = append(p.LoadBalancerIDs, id)
	}
	p.AllocationPolicy = ptr.To(allocationPolicy(s.LbPolicy))
	p.Blacklist = slices.Clone(s.LbBlacklist)
	if a := s.AutoCreate; a != nil && a.Enabled {
		if s.Region != nil {
			m.ignored = append(m.ignored, "autoCreate: load balancers are created in the provider config's region only, so not for a pool with region; none will be created")
		} else {
			p.AutoCreate = autoCreate(a, &m.ignored)
		}
	}
	if len(p.LoadBalancerIDs) == 0 && p.AutoCreate == nil {
		return m, fmt.Errorf("the pool has no load balancers: exsistedLoadBalancerIDs is empty and autoCreate cannot be used")
	}
	return m, nil
}

// actsFor marks the PortPool of a GameServerSet's CLBPortPool as acting
// for the GameServerSet's namespace: the load balancers its ClbIds names
// were chosen by that namespace's users, so the pool builds only on those
// the namespace may (mr.Owners). An admin's CLBPortPool, limited to a
// namespace or not, keeps the admin's choice.
func actsFor(cpp *v1alpha1.CLBPortPool) map[string]string {
	ns := cpp.Annotations[v1alpha1.AnnotationNamespace]
	if ns == "" || cpp.Labels[v1alpha1.LabelMadeFor] != v1alpha1.MadeForGameServerSet {
		return nil
	}
	return map[string]string{clbv1alpha1.AnnotationActsFor: ns}
}

// consumers: a CLBPortPool is an admin's cluster-wide object, so its pool
// serves every namespace, unless it is limited to one (a GameServerSet's).
func consumers(cpp *v1alpha1.CLBPortPool) clbv1alpha1.PoolConsumers {
	if ns := cpp.Annotations[v1alpha1.AnnotationNamespace]; ns != "" {
		return clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{
			From:     clbv1alpha1.ConsentSelector,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		}}
	}
	return clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
}

// poolProtocols: the annotation's, else listenerPrecreate's (the protocols
// with a count), else TCP and UDP.
func poolProtocols(cpp *v1alpha1.CLBPortPool, ignored *[]string) ([]string, error) {
	if v, ok := cpp.Annotations[v1alpha1.AnnotationProtocols]; ok {
		var out []string
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			switch p {
			case "TCP", "UDP", "TCP_SSL", "QUIC":
			default:
				return nil, fmt.Errorf("annotation %s %q: %q is not TCP, UDP, TCP_SSL or QUIC", v1alpha1.AnnotationProtocols, v, p)
			}
			if slices.Contains(out, p) {
				return nil, fmt.Errorf("annotation %s %q: %s twice", v1alpha1.AnnotationProtocols, v, p)
			}
			out = append(out, p)
		}
		if len(out) > 2 {
			return nil, fmt.Errorf("annotation %s %q: at most two protocols, one TCP-like and one UDP-like", v1alpha1.AnnotationProtocols, v)
		}
		slices.Sort(out)
		return out, nil
	}
	if lp := cpp.Spec.ListenerPrecreate; lp != nil && lp.Enabled {
		var out []string
		if ptr.Deref(lp.TCP, 0) > 0 {
			out = append(out, "TCP")
		}
		if ptr.Deref(lp.UDP, 0) > 0 {
			out = append(out, "UDP")
		}
		*ignored = append(*ignored, "listenerPrecreate.tcp, listenerPrecreate.udp: the counts are not kept; every port of the range gets one listener of each protocol with a count above 0")
		if len(out) > 0 {
			return out, nil
		}
	}
	return defaultProtocols(), nil
}

// endPort is the last port of the PortPool, a whole number of segments
// from startPort. Without endPort the pool reaches as far as tke-extend's
// would: listenerQuota listeners, or to 65535, where the PortPool's own
// cap by the cloud's listener quota applies.
func endPort(s v1alpha1.CLBPortPoolSpec, seg, protocols int64, notes *[]string) (int64, error) {
	last := int64(maxPort)
	switch {
	case s.EndPort != nil:
		last = *s.EndPort
	case s.ListenerQuota != nil:
		slots := *s.ListenerQuota / protocols
		if slots < 1 {
			return 0, fmt.Errorf("listenerQuota %d leaves no port: each port needs one listener for each of %d protocols", *s.ListenerQuota, protocols)
		}
		last = min(last, s.StartPort+slots*seg-1)
		*notes = append(*notes, "listenerQuota: sets the default endPort only; the listener quota is also read from the cloud and the smaller one holds")
	}
	segs := (last - s.StartPort + 1) / seg
	if segs < 1 {
		return 0, fmt.Errorf("ports %d-%d hold no segment of %d ports", s.StartPort, last, seg)
	}
	end := s.StartPort + segs*seg - 1
	if s.EndPort != nil && end != *s.EndPort {
		*notes = append(*notes, fmt.Sprintf("endPort: %d is used, the end of the last whole segment of %d ports", end, seg))
	}
	return end, nil
}

// allocationPolicy maps lbPolicy; tke-extend's default is Random.
func allocationPolicy(p *string) string {
	switch ptr.Deref(p, v1alpha1.LBPolicyRandom) {
	case v1alpha1.LBPolicyUniform:
		return clbv1alpha1.PolicyLeastUsed
	case v1alpha1.LBPolicyInOrder:
		return clbv1alpha1.PolicyInOrder
	default:
		return clbv1alpha1.PolicyRandom
	}
}

func autoCreate(a *v1alpha1.AutoCreateConfig, ignored *[]string) *clbv1alpha1.PoolAutoCreate {
	n := int64(maxAutoCreated)
	switch {
	case a.MaxLoadBalancers == nil:
		*ignored = append(*ignored, fmt.Sprintf("autoCreate.maxLoadBalancers: unset means no bound in tke-extend; here at most %d are created", maxAutoCreated))
	case *a.MaxLoadBalancers > maxAutoCreated:
		*ignored = append(*ignored, fmt.Sprintf("autoCreate.maxLoadBalancers: %d is above the bound of %d here", *a.MaxLoadBalancers, maxAutoCreated))
	default:
		n = *a.MaxLoadBalancers
	}
	return &clbv1alpha1.PoolAutoCreate{MaxLoadBalancers: n, Template: template(a.Parameters, ignored)}
}

// template maps the parameters of the load balancers to create; those
// with no counterpart are listed as ignored.
func template(p *v1alpha1.CreateLBParameters, ignored *[]string) clbv1alpha1.LoadBalancerParameters {
	t := clbv1alpha1.LoadBalancerParameters{}
	if p == nil {
		return t
	}
	ignore := func(field, why string) { *ignored = append(*ignored, "autoCreate.parameters."+field+": "+why) }
	t.VipIsp = p.VipIsp
	t.BandwidthPackageID = p.BandwidthPackageID
	if p.AddressIPVersion != nil {
		v := *p.AddressIPVersion
		if strings.EqualFold(v, "IPV4") || strings.EqualFold(v, "IPV6") {
			v = strings.ToUpper(v)
		}
		t.AddressIPVersion = ptr.To(v)
	}
	t.LoadBalancerPassToTarget = p.LoadBalancerPassToTarget
	t.VpcID = p.VpcID
	for _, tag := range p.Tags {
		if t.Tags == nil {
			t.Tags = map[string]string{}
		}
		t.Tags[tag.TagKey] = tag.TagValue
	}
	t.ProjectID = p.ProjectID
	t.Name = p.LoadBalancerName
	t.Type = p.LoadBalancerType
	t.MasterZoneID = p.MasterZoneID
	t.SubnetID = p.SubnetID
	t.SLAType = p.SlaType
	if ia := p.InternetAccessible; ia != nil {
		t.InternetAccessible = &clbv1alpha1.InternetAccessible{InternetMaxBandwidthOut: ia.InternetMaxBandwidthOut}
		if ct := ia.InternetChargeType; ct != nil {
			if *ct == "BANDWIDTH_PREPAID" {
				ignore("internetAccessible.internetChargeType", "BANDWIDTH_PREPAID is not supported; the cloud's default is used")
			} else {
				t.InternetAccessible.InternetChargeType = ct
			}
		}
		if ia.BandwidthpkgSubType != nil {
			ignore("internetAccessible.bandwidthpkgSubType", "not supported")
		}
	}
	if ptr.Deref(p.DynamicVip, false) {
		ignore("dynamicVip", "domain-name load balancers are not supported; load balancers with VIPs are created")
	}
	if p.Vip != nil {
		ignore("vip", "not supported; the cloud picks the VIP")
	}
	if p.ZoneID != nil {
		ignore("zoneId", "not supported; use masterZoneId")
	}
	if ptr.Deref(p.LBChargeType, "POSTPAID_BY_HOUR") != "POSTPAID_BY_HOUR" {
		ignore("lbChargeType", "only POSTPAID_BY_HOUR load balancers are created")
	}
	return t
}

// rememberAutoCreated records, in AnnotationTKEAutoCreated, the load
// balancers tke-extend created for the pool, read from the status it
// wrote: the provider's first status write replaces that status. Only a
// status the provider never wrote (no portPool) is read, once. It reports
// whether cpp changed.
func rememberAutoCreated(cpp *v1alpha1.CLBPortPool) bool {
	if cpp.Status.PortPool != "" {
		return false
	}
	if _, ok := cpp.Annotations[v1alpha1.AnnotationTKEAutoCreated]; ok {
		return false
	}
	var ids []string
	for _, lb := range cpp.Status.LoadbalancerStatuses {
		if ptr.Deref(lb.AutoCreated, false) && lb.LoadbalancerID != "" && !slices.Contains(ids, lb.LoadbalancerID) {
			ids = append(ids, lb.LoadbalancerID)
		}
	}
	if len(ids) == 0 {
		return false
	}
	if cpp.Annotations == nil {
		cpp.Annotations = map[string]string{}
	}
	cpp.Annotations[v1alpha1.AnnotationTKEAutoCreated] = strings.Join(ids, ",")
	return true
}

// withAutoCreated is exsistedLoadBalancerIDs and, after them, the load
// balancers tke-extend created for the pool (AnnotationTKEAutoCreated),
// so that the Pods it bound there keep their addresses. The PortPool,
// given the annotation too, tags them as its own once the switch is made
// (not in a dry run): then they are its auto-created load balancers.
func withAutoCreated(cpp *v1alpha1.CLBPortPool) []string {
	ids := slices.Clone(cpp.Spec.ExsistedLoadBalancerIDs)
	for _, id := range strings.Split(cpp.Annotations[v1alpha1.AnnotationTKEAutoCreated], ",") {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}
