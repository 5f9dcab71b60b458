package function

import (
	"slices"
	"strings"

	"github.com/crossplane/function-sdk-go/resource"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// Health of a target as TargetSets report it.
const healthHealthy = "Healthy"

// ingressStatus reads the composed resources back in the spec's shape: per
// rule and per port-mapping Pod, each load balancer's listener with its
// id, addresses and backends. What is not observed yet is left out.
func ingressStatus(observed map[resource.Name]resource.ObservedComposed, plan *ingressPlan) (*IngressStatus, error) {
	st := &IngressStatus{}
	for _, lb := range plan.lbs {
		s := IngressLoadBalancerStatus{Ref: lb.ref, ID: lb.id, Region: lb.region}
		if o, ok := observed[lb.part]; ok {
			obs := &clbv1alpha1.LoadBalancer{}
			if err := fromObserved(o, obs); err != nil {
				return nil, err
			}
			if id := obs.Status.AtProvider.ID; id != "" {
				s.ID = id
			}
			s.VIPs = obs.Status.AtProvider.VIPs
			st.VIPs = appendNew(st.VIPs, s.VIPs...)
		}
		st.LoadBalancers = append(st.LoadBalancers, s)
	}
	slices.Sort(st.VIPs)

	for i, ls := range plan.rules {
		rs := IngressRuleStatus{}
		for _, l := range ls {
			ls, err := st.listener(observed, l)
			if err != nil {
				return nil, err
			}
			rs.Listeners = append(rs.Listeners, ls)
		}
		rs.Port, rs.Protocol = plan.ruleSpecs[i].Port, strings.ToUpper(plan.ruleSpecs[i].Protocol)
		st.Rules = append(st.Rules, rs)
	}
	for i, pods := range plan.mappings {
		ms := IngressPortMappingStatus{StartPort: plan.mappingSpecs[i].StartPort, Protocol: strings.ToUpper(plan.mappingSpecs[i].Protocol)}
		for _, p := range pods {
			ps := IngressPodStatus{Pod: p.pod}
			for _, l := range p.listeners {
				ls, err := st.listener(observed, l)
				if err != nil {
					return nil, err
				}
				ps.Listeners = append(ps.Listeners, ls)
			}
			ms.Pods = append(ms.Pods, ps)
		}
		st.PortMappings = append(st.PortMappings, ms)
	}
	return st, nil
}

// listener reads one planned listener, its rules and target sets, and
// counts it and its backends.
func (st *IngressStatus) listener(observed map[resource.Name]resource.ObservedComposed, l plannedListener) (IngressListenerStatus, error) {
	out := IngressListenerStatus{LoadBalancer: l.lb.ref, Port: l.port, EndPort: l.endPort}
	st.WantedListeners++
	if o, ok := observed[l.part]; ok {
		obs := &clbv1alpha1.Listener{}
		if err := fromObserved(o, obs); err != nil {
			return out, err
		}
		out.ListenerID, out.Addresses = obs.Status.AtProvider.ID, obs.Status.AtProvider.Addresses
		if out.ListenerID != "" {
			st.Listeners++
		}
	}
	var err error
	if l.targets != "" {
		if out.Backends, err = st.backends(observed, l.targets); err != nil {
			return out, err
		}
	}
	for _, r := range l.routes {
		rs := IngressRouteStatus{Domain: r.domain, Path: r.path}
		if o, ok := observed[r.part]; ok {
			obs := &clbv1alpha1.Rule{}
			if err := fromObserved(o, obs); err != nil {
				return out, err
			}
			rs.RuleID = obs.Status.AtProvider.ID
		}
		if rs.Backends, err = st.backends(observed, r.targets); err != nil {
			return out, err
		}
		out.Routes = append(out.Routes, rs)
	}
	return out, nil
}

func (st *IngressStatus) backends(observed map[resource.Name]resource.ObservedComposed, name resource.Name) ([]clbv1alpha1.TargetObservation, error) {
	o, ok := observed[name]
	if !ok {
		return nil, nil
	}
	obs := &clbv1alpha1.TargetSet{}
	if err := fromObserved(o, obs); err != nil {
		return nil, err
	}
	ts := obs.Status.AtProvider.Targets
	for _, t := range ts {
		st.Backends++
		if t.Health == healthHealthy {
			st.HealthyBackends++
		}
	}
	return ts, nil
}
