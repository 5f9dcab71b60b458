// Package controller registers every controller of the provider.
package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/config"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/listener"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/loadbalancer"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/portpool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/rule"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/targetset"
)

// Setup adds all controllers to the manager. They share pool, so that one
// cloud client per account, region and endpoint carries every call of the
// process and its rate limits hold across controllers.
func Setup(mgr ctrl.Manager, o controller.Options, pool *clb.Pool) error {
	if err := config.Setup(mgr, o); err != nil {
		return err
	}
	for _, setup := range []func(ctrl.Manager, controller.Options, *clb.Pool) error{
		loadbalancer.Setup,
		listener.Setup,
		rule.Setup,
		targetset.Setup,
		portpool.Setup,
		podaddress.Setup,
	} {
		if err := setup(mgr, o, pool); err != nil {
			return err
		}
	}
	return nil
}
