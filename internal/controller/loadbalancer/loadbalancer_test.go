package loadbalancer

import (
	"context"
	"strings"
	"testing"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// sameNames answers a search by name with several load balancers, which
// the emulator (like the API) never lets exist: names are unique there.
type sameNames struct {
	api
	ids []string
}

func (s sameNames) FindLoadBalancersByName(context.Context, string) ([]*clbsdk.LoadBalancer, error) {
	out := make([]*clbsdk.LoadBalancer, 0, len(s.ids))
	for _, id := range s.ids {
		out = append(out, &clbsdk.LoadBalancer{LoadBalancerId: clb.Ptr(id), LoadBalancerName: clb.Ptr("dup")})
	}
	return out, nil
}

func TestImportByNameRefusesSeveral(t *testing.T) {
	cr := &v1alpha1.LoadBalancer{Spec: v1alpha1.LoadBalancerSpec{
		ManagedResourceSpec: xpv2.ManagedResourceSpec{ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve}},
		ForProvider:         v1alpha1.LoadBalancerParameters{Name: clb.Ptr("dup")},
	}}
	e := &external{c: sameNames{ids: []string{"lb-b", "lb-a"}}}
	_, err := e.Observe(context.Background(), cr)
	if err == nil || !strings.Contains(err.Error(), `2 load balancers are named "dup" (lb-a, lb-b)`) {
		t.Fatalf("Observe error %v, want one naming both ids", err)
	}
}
