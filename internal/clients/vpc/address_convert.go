package vpc

import (
	"fmt"
	"strings"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
)

const maxNameLength = 128

// AddressName is the address's name in the cloud: spec, or metadata.name
// cut to the cloud's 128 characters.
func AddressName(cr *v1alpha1.Address) string {
	if cr.Spec.ForProvider.Name != nil {
		return *cr.Spec.ForProvider.Name
	}
	n := cr.GetName()
	if len(n) > maxNameLength {
		n = n[:maxNameLength]
	}
	return n
}

// AllocateRequestOf is the allocation of cr, tagged with tags.
func AllocateRequestOf(cr *v1alpha1.Address, tags map[string]string) AllocateRequest {
	p := cr.Spec.ForProvider
	return AllocateRequest{
		Count: 1, Name: AddressName(cr), ISP: str(p.ISP), ChargeType: str(p.InternetChargeType), Bandwidth: derefInt(p.Bandwidth),
		// The UID makes a retried allocation return the same address, and
		// its tag finds an address whose id was never saved.
		Tags:        tags,
		ClientToken: string(cr.GetUID()),
	}
}

// boundTo is what status.atProvider.boundTo shows: eni-…/private IP, or
// "" when unbound.
func boundTo(a Address) string {
	if a.ENIID == "" {
		return ""
	}
	return a.ENIID + "/" + a.PrivateIP
}

// MatchesAssociation reports whether the observed binding is the one asked for. An
// address bound to an instance is bound to a private IP of one of its
// ENIs, so each kind of association compares only what it names.
func MatchesAssociation(as *v1alpha1.AddressAssociation, at v1alpha1.AddressObservation) bool {
	eni, ip, _ := strings.Cut(at.BoundTo, "/")
	switch {
	case as == nil:
		return at.BoundTo == "" && at.InstanceID == ""
	case as.InstanceID != nil:
		return *as.InstanceID == at.InstanceID
	default:
		return str(as.PrivateIPAddress) == ip && (as.NetworkInterfaceID == nil || *as.NetworkInterfaceID == eni)
	}
}

// wanted describes an association for diffs.
func wanted(as *v1alpha1.AddressAssociation) string {
	switch {
	case as == nil:
		return "unbound"
	case as.InstanceID != nil:
		return "instance " + *as.InstanceID
	case as.NetworkInterfaceID != nil:
		return *as.NetworkInterfaceID + "/" + str(as.PrivateIPAddress)
	default:
		return str(as.PrivateIPAddress)
	}
}

// ObserveAddress is the observation of a.
func ObserveAddress(a Address, task clbv1alpha1.TaskStatus) v1alpha1.AddressObservation {
	return v1alpha1.AddressObservation{
		AddressID: a.ID, Name: a.Name, PublicIP: a.PublicIP, Status: a.Status, BoundTo: boundTo(a), InstanceID: a.InstanceID,
		ISP: a.ISP, Bandwidth: a.Bandwidth, InternetChargeType: a.ChargeType, Tags: a.Tags, Task: task,
	}
}

// LateInitAddress fills unset parameters from the cloud; it reports whether
// anything changed. The association is not filled: unset means unbound.
func LateInitAddress(p *v1alpha1.AddressParameters, a Address) bool {
	changed := false
	fill := func(dst **string, v string) {
		if *dst == nil && v != "" {
			*dst, changed = ptr(v), true
		}
	}
	fill(&p.Name, a.Name)
	fill(&p.ISP, a.ISP)
	fill(&p.InternetChargeType, a.ChargeType)
	if p.Bandwidth == nil && a.Bandwidth > 0 {
		p.Bandwidth, changed = ptr(a.Bandwidth), true
	}
	return changed
}

// DiffAddress describes what Update would change, or "" when nothing.
func DiffAddress(cr *v1alpha1.Address) string {
	at := cr.Status.AtProvider
	var d []string
	if want := AddressName(cr); want != at.Name {
		d = append(d, fmt.Sprintf("name %q -> %q", at.Name, want))
	}
	if as := cr.Spec.ForProvider.Association; !MatchesAssociation(as, at) {
		d = append(d, fmt.Sprintf("binding %q (instance %q) -> %s", at.BoundTo, at.InstanceID, wanted(as)))
	}
	return strings.Join(d, "; ")
}
