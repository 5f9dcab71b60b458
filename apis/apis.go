// Package apis contains the Kubernetes API types of the provider.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkeextendv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	v1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	vpcv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
)

// AddToScheme adds every API group of the provider to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{
		v1alpha1.AddToScheme,
		clbv1alpha1.AddToScheme,
		networkv1alpha1.AddToScheme,
		clusterv1alpha1.AddToScheme,
		vpcv1alpha1.AddToScheme,
		tkeextendv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}
