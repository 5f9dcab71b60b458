package controller

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/intern"
)

func bound(name string) *networkv1alpha1.PodAddress {
	pa := &networkv1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: name, Finalizers: []string{"f"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "provider"}}}}
	pa.Spec.Ports = []networkv1alpha1.PortRequest{{Protocol: "TCP", Pools: []networkv1alpha1.PoolRef{{Name: "pool-a"}}}}
	pa.Status.State = networkv1alpha1.StateBound
	pa.Status.SetConditions(xpv2.Available())
	pa.Status.Bindings = []networkv1alpha1.PortBinding{{Pool: "pool-a", Protocol: "TCP", LoadBalancerID: "lb-" + string([]byte("0001")),
		Region: "ap-guangzhou", VIPs: []string{"1.2.3.4"}, ListenerIDs: map[string]string{"TCP": "lbl-" + name}, Port: 7000, Address: "1.2.3.4:7000"}}
	return pa
}

// TestInternPodAddressKeepsEverything: the PodAddress cache's transform
// keeps every field (the controller updates from the cached copy) but
// managed fields, and two PodAddresses share their load balancer's ID.
func TestInternPodAddressKeepsEverything(t *testing.T) {
	want := bound("gs-0")
	want.ManagedFields = nil
	tr := internPodAddress(intern.New())
	a, _ := tr(bound("gs-0"))
	b, _ := tr(bound("gs-1"))
	if d := cmp.Diff(want, a); d != "" {
		t.Fatalf("transform changed the PodAddress (-want +got):\n%s", d)
	}
	ida, idb := a.(*networkv1alpha1.PodAddress).Status.Bindings[0].LoadBalancerID, b.(*networkv1alpha1.PodAddress).Status.Bindings[0].LoadBalancerID
	if unsafe.StringData(ida) != unsafe.StringData(idb) {
		t.Error("the load balancer ID is held once per PodAddress")
	}
}
