package loadbalancer

import (
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// CreateRequest is the CreateLoadBalancer request for cr, tagged with its
// owner and the spec's tags; tests replay it to simulate a create whose
// result was lost.
func CreateRequest(cr *v1alpha1.LoadBalancer) *clbsdk.CreateLoadBalancerRequest {
	return clb.CreateLoadBalancerRequest(cr, mr.OwnerTags(v1alpha1.LoadBalancerKind, cr, cr.Spec.ForProvider.Tags))
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
