package controller

import (
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/intern"
)

// internPA strips pa's managed fields (as every cached object's) and
// interns the strings that many PodAddresses share. Nothing is dropped:
// the controller updates PodAddresses from their cached copies.
func internPA(t *intern.Table, pa *networkv1alpha1.PodAddress) {
	pa.ManagedFields = nil
	t.Meta(&pa.ObjectMeta)
	s := &pa.Spec
	s.Strategy, s.Backend, s.Source = intern.Of(t, s.Strategy), intern.Of(t, s.Backend), intern.Of(t, s.Source)
	for i := range s.Ports {
		p := &s.Ports[i]
		p.Protocol, p.Backend = intern.Of(t, p.Protocol), intern.Of(t, p.Backend)
		p.Port.StrVal = intern.Of(t, p.Port.StrVal)
		for j := range p.Pools {
			p.Pools[j].Name, p.Pools[j].Namespace = intern.Of(t, p.Pools[j].Name), intern.Of(t, p.Pools[j].Namespace)
		}
	}
	st := &pa.Status
	st.State = intern.Of(t, st.State)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status, c.Reason = intern.Of(t, c.Type), intern.Of(t, c.Status), intern.Of(t, c.Reason)
	}
	for i := range st.Bindings {
		b := &st.Bindings[i]
		b.Pool, b.Protocol = intern.Of(t, b.Pool), intern.Of(t, b.Protocol)
		b.LoadBalancerID, b.LoadBalancerName = intern.Of(t, b.LoadBalancerID), intern.Of(t, b.LoadBalancerName)
		b.LoadBalancerType, b.Region, b.ISP = intern.Of(t, b.LoadBalancerType), intern.Of(t, b.Region), intern.Of(t, b.ISP)
		b.InstanceID, b.AddressIPVersion, b.IPv6Mode = intern.Of(t, b.InstanceID), intern.Of(t, b.AddressIPVersion), intern.Of(t, b.IPv6Mode)
		t.Strings(b.VIPs)
		// Listener IDs are one per port: only the protocol keys repeat.
		t.Keys(b.ListenerIDs, false)
	}
	if e := st.EIP; e != nil {
		e.State, e.WarmPool, e.ISP = intern.Of(t, e.State), intern.Of(t, e.WarmPool), intern.Of(t, e.ISP)
	}
}
