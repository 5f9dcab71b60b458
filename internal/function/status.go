package function

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/resource"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// readinessGateCondition is the Pod condition (and readiness gate) the
// provider sets once a Pod's addresses are bound.
const readinessGateCondition = podannotation.ConditionAddressReady

// readiness is a composed resource's: ready when its own Ready condition is
// True. A resource not created yet is not ready.
func readiness(observed map[resource.Name]resource.ObservedComposed, name resource.Name) resource.Ready {
	o, ok := observed[name]
	if !ok {
		return resource.ReadyFalse
	}
	if o.Resource.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
		return resource.ReadyTrue
	}
	return resource.ReadyFalse
}

// status aggregates the composite's status from its observed resources:
// the load balancers and ports of the pool, and the Pods of the policy.
// What is not observed yet counts as nothing.
func status(observed map[resource.Name]resource.ObservedComposed, spec *PodPublicAddressSpec) (*Status, error) {
	st := &Status{}
	if o, ok := observed[namePortPool]; ok {
		pool := &clbv1alpha1.PortPool{}
		if err := fromObserved(o, pool); err != nil {
			return nil, err
		}
		at := pool.Status.AtProvider
		st.AllocatedPorts, st.FreePorts = at.Allocated, at.Free
		for _, lb := range at.LoadBalancers {
			st.LoadBalancerIDs = appendNew(st.LoadBalancerIDs, lb.ID)
			st.VIPs = appendNew(st.VIPs, lb.VIPs...)
		}
	}
	// Load balancers the pool does not report yet (it waits for all of
	// them) still show their VIPs once observed.
	for i := range spec.LoadBalancers.Count {
		if err := addLoadBalancer(st, observed, nameCreatedLB(i)); err != nil {
			return nil, err
		}
	}
	for _, id := range spec.LoadBalancers.ExistingIDs {
		if err := addLoadBalancer(st, observed, nameExistingLB(id)); err != nil {
			return nil, err
		}
	}
	slices.Sort(st.LoadBalancerIDs)
	slices.Sort(st.VIPs)

	if o, ok := observed[namePolicy]; ok {
		policy := &networkv1alpha1.PodAddressPolicy{}
		if err := fromObserved(o, policy); err != nil {
			return nil, err
		}
		st.MatchedPods, st.BoundPods = policy.Status.MatchedPods, policy.Status.BoundPods
	}
	return st, nil
}

func addLoadBalancer(st *Status, observed map[resource.Name]resource.ObservedComposed, name resource.Name) error {
	o, ok := observed[name]
	if !ok {
		return nil
	}
	lb := &clbv1alpha1.LoadBalancer{}
	if err := fromObserved(o, lb); err != nil {
		return err
	}
	if lb.Status.AtProvider.ID != "" {
		st.LoadBalancerIDs = appendNew(st.LoadBalancerIDs, lb.Status.AtProvider.ID)
	}
	st.VIPs = appendNew(st.VIPs, lb.Status.AtProvider.VIPs...)
	return nil
}

func fromObserved(o resource.ObservedComposed, into runtime.Object) error {
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Resource.Object, into)
	return errors.Wrapf(err, "cannot read observed %s %s", o.Resource.GetKind(), o.Resource.GetName())
}

func appendNew(s []string, vs ...string) []string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}
