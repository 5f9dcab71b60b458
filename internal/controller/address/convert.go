package address

import (
	"fmt"
	"strings"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

const maxNameLength = 128

// name is the address's name in the cloud: spec, or metadata.name.
func name(cr *v1alpha1.Address) string {
	if cr.Spec.ForProvider.Name != nil {
		return *cr.Spec.ForProvider.Name
	}
	n := cr.GetName()
	if len(n) > maxNameLength {
		n = n[:maxNameLength]
	}
	return n
}

// AllocateRequest is the allocation of cr; tests replay it to simulate an
// allocation whose answer was lost.
func AllocateRequest(cr *v1alpha1.Address) vpc.AllocateRequest {
	p := cr.Spec.ForProvider
	return vpc.AllocateRequest{
		Count: 1, Name: name(cr), ISP: clb.Deref(p.ISP), ChargeType: clb.Deref(p.InternetChargeType), Bandwidth: clb.Deref(p.Bandwidth),
		// The UID makes a retried allocation return the same address, and
		// its tag finds an address whose id was never saved.
		Tags:        mr.OwnerTags(cr, p.Tags),
		ClientToken: string(cr.GetUID()),
	}
}

// boundTo is what status.atProvider.boundTo shows: eni-…/private IP, or
// "" when unbound.
func boundTo(a vpc.Address) string {
	if a.ENIID == "" {
		return ""
	}
	return a.ENIID + "/" + a.PrivateIP
}

// matches reports whether the observed binding is the one asked for. An
// address bound to an instance is bound to a private IP of one of its
// ENIs, so each kind of association compares only what it names.
func matches(as *v1alpha1.AddressAssociation, at v1alpha1.AddressObservation) bool {
	eni, ip, _ := strings.Cut(at.BoundTo, "/")
	switch {
	case as == nil:
		return at.BoundTo == "" && at.InstanceID == ""
	case as.InstanceID != nil:
		return *as.InstanceID == at.InstanceID
	default:
		return clb.Deref(as.PrivateIPAddress) == ip && (as.NetworkInterfaceID == nil || *as.NetworkInterfaceID == eni)
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
		return *as.NetworkInterfaceID + "/" + clb.Deref(as.PrivateIPAddress)
	default:
		return clb.Deref(as.PrivateIPAddress)
	}
}

func observe(a vpc.Address, task clbv1alpha1.TaskStatus) v1alpha1.AddressObservation {
	return v1alpha1.AddressObservation{
		AddressID: a.ID, Name: a.Name, PublicIP: a.PublicIP, Status: a.Status, BoundTo: boundTo(a), InstanceID: a.InstanceID,
		ISP: a.ISP, Bandwidth: a.Bandwidth, InternetChargeType: a.ChargeType, Tags: a.Tags, Task: task,
	}
}

// lateInitialize fills unset parameters from the cloud; it reports whether
// anything changed. The association is not filled: unset means unbound.
func lateInitialize(p *v1alpha1.AddressParameters, a vpc.Address) bool {
	changed := false
	fill := func(dst **string, v string) {
		if *dst == nil && v != "" {
			*dst, changed = clb.Ptr(v), true
		}
	}
	fill(&p.Name, a.Name)
	fill(&p.ISP, a.ISP)
	fill(&p.InternetChargeType, a.ChargeType)
	if p.Bandwidth == nil && a.Bandwidth > 0 {
		p.Bandwidth, changed = clb.Ptr(a.Bandwidth), true
	}
	return changed
}

// diff describes what Update would change, or "" when nothing.
func diff(cr *v1alpha1.Address) string {
	at := cr.Status.AtProvider
	var d []string
	if want := name(cr); want != at.Name {
		d = append(d, fmt.Sprintf("name %q -> %q", at.Name, want))
	}
	if as := cr.Spec.ForProvider.Association; !matches(as, at) {
		d = append(d, fmt.Sprintf("binding %q (instance %q) -> %s", at.BoundTo, at.InstanceID, wanted(as)))
	}
	return strings.Join(d, "; ")
}
