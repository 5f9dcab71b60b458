package address

import (
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// AllocateRequest is the allocation of cr, tagged with its owner and the
// spec's tags; tests replay it to simulate an allocation whose answer was
// lost.
func AllocateRequest(cr *v1alpha1.Address) vpc.AllocateRequest {
	return vpc.AllocateRequestOf(cr, mr.OwnerTags(v1alpha1.AddressKind, cr, cr.Spec.ForProvider.Tags))
}
