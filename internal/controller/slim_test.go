package controller

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
)

func bound(s *seal.Sealer, name string) *networkv1alpha1.PodAddress {
	pa := &networkv1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "game", Name: name, UID: types.UID("uid-" + name), Finalizers: []string{"f"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "provider"}}}}
	pa.Spec.Ports = []networkv1alpha1.PortRequest{{Protocol: "TCP", Pools: []networkv1alpha1.PoolRef{{Name: "pool-a"}}}}
	pa.Status.State = networkv1alpha1.StateBound
	pa.Status.SetConditions(xpv2.Available())
	pa.Status.Bindings = []networkv1alpha1.PortBinding{{Pool: "pool-a", Protocol: "TCP", LoadBalancerID: "lb-" + string([]byte("0001")),
		Region: "ap-guangzhou", VIPs: []string{"1.2.3.4"}, ListenerIDs: map[string]string{"TCP": "lbl-" + name}, Port: 7000, Address: "1.2.3.4:7000"}}
	if err := s.Seal(pa); err != nil {
		panic(err)
	}
	return pa
}

// TestInternPodAddressKeepsEverything: the cache's transform keeps every
// field of a PodAddress (the controller updates from the cached copy) but
// managed fields, and two PodAddresses share their load balancer's ID.
func TestInternPodAddressKeepsEverything(t *testing.T) {
	s := seal.Ephemeral()
	want := bound(s, "gs-0")
	want.ManagedFields = nil
	tr := CacheOptions(nil, s).DefaultTransform
	a, _ := tr(bound(s, "gs-0"))
	b, _ := tr(bound(s, "gs-1"))
	if d := cmp.Diff(want, a); d != "" {
		t.Fatalf("transform changed the PodAddress (-want +got):\n%s", d)
	}
	ida, idb := a.(*networkv1alpha1.PodAddress).Status.Bindings[0].LoadBalancerID, b.(*networkv1alpha1.PodAddress).Status.Bindings[0].LoadBalancerID
	if unsafe.StringData(ida) != unsafe.StringData(idb) {
		t.Error("the load balancer ID is held once per PodAddress")
	}
}

// TestCachedRecordsAreSealed: a PodAddress whose status the provider did
// not seal (here: sealed with another key, then one whose binding was
// changed after sealing) is cached without its records.
func TestCachedRecordsAreSealed(t *testing.T) {
	s := seal.Ephemeral()
	tr := CacheOptions(nil, s).DefaultTransform
	forged := map[string]*networkv1alpha1.PodAddress{"another key": bound(seal.Ephemeral(), "gs-0"), "changed after sealing": bound(s, "gs-1")}
	forged["changed after sealing"].Status.Bindings[0].LoadBalancerID = "lb-other"
	for name, pa := range forged {
		got, err := tr(pa)
		if err != nil {
			t.Fatal(err)
		}
		if st := got.(*networkv1alpha1.PodAddress).Status; len(st.Bindings) != 0 || st.State != "" {
			t.Errorf("%s: cached status %+v; want it dropped", name, st)
		}
		if _, ok := s.Ignored(pa.GetUID()); !ok {
			t.Errorf("%s: no reason kept for the controller's event", name)
		}
	}
}

// TestCacheOptionsByObjectBuiltIn: ByObject needs each kind's REST mapping
// when the manager is created, and under safe-start the provider starts
// before its own CRDs are active (it failed to start in the package e2e
// when PodAddress was listed there). Other objects lose their managed
// fields through the default transform.
func TestCacheOptionsByObjectBuiltIn(t *testing.T) {
	o := CacheOptions(nil, seal.Ephemeral())
	for obj := range o.ByObject {
		if p := reflect.TypeOf(obj).Elem().PkgPath(); strings.Contains(p, "provider-tencentcloud-network") {
			t.Errorf("ByObject lists %T, a kind of this provider", obj)
		}
	}
	lb := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Name: "lb", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	got, err := o.DefaultTransform(lb)
	if err != nil || got.(*clbv1alpha1.LoadBalancer).ManagedFields != nil || got.(*clbv1alpha1.LoadBalancer).Name != "lb" {
		t.Errorf("default transform of a LoadBalancer = %+v, %v; want it without managed fields", got, err)
	}
}
