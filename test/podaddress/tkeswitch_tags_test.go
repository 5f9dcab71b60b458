package podaddress

import (
	"context"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// poolUIDTag is the crossplane-portpool-uid tag of load balancer id in
// the emulated cloud, "" when it has none.
func poolUIDTag(t *testing.T, id string) string {
	t.Helper()
	lb, ok := cloud.Inventory().LoadBalancer(id)
	if !ok {
		t.Fatalf("no load balancer %s", id)
	}
	return lb.Tags[mr.TagPoolUID]
}

// notTakenOverYet: in the dry run the load balancer tke-extend created for
// the pool carries no tag of the pool's (tkestandin.SwitchWrites holds TagResources).
func notTakenOverYet(t *testing.T, autoID string) {
	t.Helper()
	if uid := poolUIDTag(t, autoID); uid != "" {
		t.Errorf("in the dry run the load balancer tke-extend created carries %s=%s", mr.TagPoolUID, uid)
	}
}

// takenOver: after the switch the pool tags the load balancer tke-extend
// created for it as its own, its PortPool lists it autoCreated, and the
// CLBPortPool's status says autoCreated again, as tke-extend's did.
func takenOver(t *testing.T, pp *clbv1alpha1.PortPool, cpp *tkev1alpha1.CLBPortPool, autoID string) {
	t.Helper()
	eventually(t, "the pool tags the load balancer tke-extend created as its own", func() error {
		if uid := poolUIDTag(t, autoID); uid != string(pp.UID) {
			return errors.Errorf("%s=%q, want the PortPool's UID %s", mr.TagPoolUID, uid, pp.UID)
		}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		for _, st := range pp.Status.AtProvider.LoadBalancers {
			if st.ID == autoID && !st.AutoCreated {
				return errors.Errorf("the PortPool's status of %s says not autoCreated", autoID)
			}
		}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(cpp), cpp); err != nil {
			return err
		}
		for _, st := range cpp.Status.LoadbalancerStatuses {
			if st.LoadbalancerID == autoID && !ptr.Deref(st.AutoCreated, false) {
				return errors.Errorf("the CLBPortPool's status of %s says not autoCreated", autoID)
			}
		}
		return nil
	})
}
