package controller

import (
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/intern"
)

// internPodAddress is the PodAddress cache's transform: managed fields
// stripped (as every cached object's), and the strings that many
// PodAddresses share interned. Nothing is dropped: the controller updates
// PodAddresses from their cached copies.
func internPodAddress(in any) (any, error) {
	pa, ok := in.(*networkv1alpha1.PodAddress)
	if !ok {
		return in, nil
	}
	pa.ManagedFields = nil
	intern.Meta(&pa.ObjectMeta)
	s := &pa.Spec
	s.Strategy, s.Backend, s.Source = intern.String(s.Strategy), intern.String(s.Backend), intern.String(s.Source)
	for i := range s.Ports {
		p := &s.Ports[i]
		p.Protocol, p.Backend = intern.String(p.Protocol), intern.String(p.Backend)
		p.Port.StrVal = intern.String(p.Port.StrVal)
		for j := range p.Pools {
			p.Pools[j].Name, p.Pools[j].Namespace = intern.String(p.Pools[j].Name), intern.String(p.Pools[j].Namespace)
		}
	}
	st := &pa.Status
	st.State = intern.String(st.State)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status, c.Reason = intern.String(c.Type), intern.String(c.Status), intern.String(c.Reason)
	}
	for i := range st.Bindings {
		b := &st.Bindings[i]
		b.Pool, b.Protocol = intern.String(b.Pool), intern.String(b.Protocol)
		b.LoadBalancerID, b.LoadBalancerName = intern.String(b.LoadBalancerID), intern.String(b.LoadBalancerName)
		b.LoadBalancerType, b.Region, b.ISP = intern.String(b.LoadBalancerType), intern.String(b.Region), intern.String(b.ISP)
		b.InstanceID = intern.String(b.InstanceID)
		intern.Strings(b.VIPs)
		// Listener IDs are one per port: only the protocol keys repeat.
		intern.Keys(b.ListenerIDs, false)
	}
	if e := st.EIP; e != nil {
		e.State, e.WarmPool, e.ISP = intern.String(e.State), intern.String(e.WarmPool), intern.String(e.ISP)
	}
	return pa, nil
}
