package clb

import (
	"net/netip"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// backendTypeCVM is the Type of a target bound by instance id.
const backendTypeCVM = "CVM"

// NormalizeIP spells an address the way the cloud reports it.
func NormalizeIP(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	return a.String()
}

// BackendsOf returns the targets of the listener (locationID "") or of its
// rule, and whether that rule exists.
func BackendsOf(l *clbsdk.ListenerBackend, locationID string) ([]*clbsdk.Backend, bool) {
	if locationID == "" {
		return l.Targets, true
	}
	for _, r := range l.Rules {
		if r != nil && Deref(r.LocationId) == locationID {
			return r.Targets, true
		}
	}
	return nil, false
}

// ObserveTargets converts the cloud's targets, in the cloud's order. A CVM
// target keeps its instance id and its private IP; an ENI target its IP.
func ObserveTargets(bs []*clbsdk.Backend) []v1alpha1.TargetObservation {
	out := make([]v1alpha1.TargetObservation, 0, len(bs))
	for _, b := range bs {
		if b == nil {
			continue
		}
		o := v1alpha1.TargetObservation{Port: Deref(b.Port), Weight: Deref(b.Weight)}
		if len(b.PrivateIpAddresses) > 0 {
			o.IP = NormalizeIP(Deref(b.PrivateIpAddresses[0]))
		}
		typ, ins := Deref(b.Type), Deref(b.InstanceId)
		if typ == backendTypeCVM || (typ == "" && ins != "") {
			o.InstanceID = ins
		}
		out = append(out, o)
	}
	return out
}
