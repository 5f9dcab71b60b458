package address

import (
	"fmt"
	"strings"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

const maxNameLength = 128

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

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
		Count: 1, Name: name(cr), ISP: deref(p.ISP), ChargeType: deref(p.InternetChargeType), Bandwidth: deref(p.Bandwidth),
		// The UID makes a retried allocation return the same address, and
		// its tag finds an address whose id was never saved.
		Tags:        mr.OwnerTags(cr, p.Tags),
		ClientToken: string(cr.GetUID()),
	}
}

// boundTo formats a binding as status.atProvider.boundTo shows it:
// eni-…/private IP, or ins-…; "" for none.
func boundTo(as *v1alpha1.AddressAssociation) string {
	switch {
	case as == nil:
		return ""
	case as.InstanceID != nil:
		return *as.InstanceID
	default:
		return deref(as.NetworkInterfaceID) + "/" + deref(as.PrivateIPAddress)
	}
}

// observedBoundTo is boundTo of what the cloud reports. An address bound to
// an instance names the instance, whatever ENI carries it.
func observedBoundTo(a vpc.Address) string {
	switch {
	case a.InstanceID != "":
		return a.InstanceID
	case a.ENIID != "":
		return a.ENIID + "/" + a.PrivateIP
	default:
		return ""
	}
}

func observe(a vpc.Address) v1alpha1.AddressObservation {
	return v1alpha1.AddressObservation{
		AddressID: a.ID, Name: a.Name, PublicIP: a.PublicIP, Status: a.Status, BoundTo: observedBoundTo(a),
		ISP: a.ISP, Bandwidth: a.Bandwidth, InternetChargeType: a.ChargeType, Tags: a.Tags,
	}
}

// lateInitialize fills unset parameters from the cloud; it reports whether
// anything changed. The association is not filled: unset means unbound.
func lateInitialize(p *v1alpha1.AddressParameters, a vpc.Address) bool {
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

// diff describes what Update would change, or "" when nothing.
func diff(cr *v1alpha1.Address, a vpc.Address) string {
	var d []string
	if want := name(cr); want != a.Name {
		d = append(d, fmt.Sprintf("name %q -> %q", a.Name, want))
	}
	if want, got := boundTo(cr.Spec.ForProvider.Association), observedBoundTo(a); want != got {
		d = append(d, fmt.Sprintf("binding %q -> %q", got, want))
	}
	return strings.Join(d, "; ")
}
