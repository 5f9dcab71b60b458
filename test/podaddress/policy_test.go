package podaddress

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// policyStatus waits until the policy reports matched and bound Pods and a
// Ready condition of the given status, and returns it.
func policyStatus(t *testing.T, pol *v1alpha1.PodAddressPolicy, matched, bound int64, ready corev1.ConditionStatus) *v1alpha1.PodAddressPolicy {
	t.Helper()
	eventually(t, "policy status", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pol), pol); err != nil {
			return err
		}
		c := pol.Status.GetCondition(xpv2.TypeReady)
		if pol.Status.MatchedPods != matched || pol.Status.BoundPods != bound || c.Status != ready {
			return errors.Errorf("matched %d, bound %d, Ready=%s %q; want %d, %d, %s",
				pol.Status.MatchedPods, pol.Status.BoundPods, c.Status, c.Message, matched, bound, ready)
		}
		return nil
	})
	return pol
}

// podAnnotation waits until the Pod's annotation key has the value want
// ("" for absent).
func podAnnotation(t *testing.T, p *corev1.Pod, key, want string) {
	t.Helper()
	eventually(t, p.Name+" annotation "+key, func() error {
		got := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if v, ok := got.Annotations[key]; v != want || (want == "" && ok) {
			return errors.Errorf("%q (present: %t), want %q", v, ok, want)
		}
		return nil
	})
}

// TestPolicyStatus counts a policy's Pods: three Pods of a three-port pool
// are all Bound and the policy Ready; a fourth waits for a port and the
// policy says so; when a Pod leaves, the fourth binds and the policy is
// Ready again. A Pod that asks by its own annotation is not the policy's.
// Each Pod also gets its address in the annotation the policy names, in
// tke-extend's "VIP:port" form, and a renamed annotation replaces the old.
func TestPolicyStatus(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb", "BGP")
	pool(t, ns, "three", []string{"lb"}, 39000, 39002)
	pool(t, ns, "other", []string{"lb"}, 39100, 39101)
	const named = "networking.cloud.tencent.com/external-address-7777"
	pol := &v1alpha1.PodAddressPolicy{}
	pol.SetNamespace(ns)
	pol.SetName("battle")
	pol.Spec.Selector.MatchLabels = map[string]string{"app": "battle"}
	pol.Spec.Ports = []v1alpha1.PortRequest{{Port: intOrName("game"), Pools: []v1alpha1.PoolRef{{Name: "three"}}, AddressAnnotation: named}}
	if err := kube.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	policyStatus(t, pol, 0, 0, corev1.ConditionTrue)

	var pods []*corev1.Pod
	for i, ip := range []string{"10.40.0.1", "10.40.0.2", "10.40.0.3"} {
		pods = append(pods, pod(t, ns, fmt.Sprintf("p-%d", i), ip, nil))
	}
	// Same labels, but it asks by annotation: not counted.
	pod(t, ns, "own", "10.40.0.9", map[string]string{ourPorts: "7777 other"})
	bound(t, ns, "own")
	c := policyStatus(t, pol, 3, 3, corev1.ConditionTrue).Status.GetCondition(xpv2.TypeReady)
	if c.Reason != v1alpha1.ReasonAllBound || c.Message != "3 of 3 Pods bound" {
		t.Errorf("Ready %s %q, want AllBound \"3 of 3 Pods bound\"", c.Reason, c.Message)
	}

	vipPort := regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+:390\d\d$`)
	for _, p := range pods {
		b := bound(t, ns, p.Name).Status.Bindings[0]
		if !vipPort.MatchString(b.Address) || b.Address != b.VIPs[0]+":"+strconv.Itoa(int(b.Port)) {
			t.Fatalf("%s: address %q is not VIP:port of %+v", p.Name, b.Address, b)
		}
		podAnnotation(t, p, named, b.Address)
		podAnnotation(t, p, podannotation.AnnotationNamedAddresses, named)
	}

	// A fourth Pod: no port left.
	late := pod(t, ns, "p-3", "10.40.0.4", nil)
	// Binding while its PodAddress is made, then BindFailed.
	eventually(t, "the policy says the fourth Pod has no port", func() error {
		pol = policyStatus(t, pol, 4, 3, corev1.ConditionFalse)
		c = pol.Status.GetCondition(xpv2.TypeReady)
		if c.Reason != v1alpha1.ReasonBindFailed || !strings.Contains(c.Message, "1 of 4 Pods not bound: 1 NoPortAvailable (p-3: ") {
			return errors.Errorf("Ready %s %q, want BindFailed naming one NoPortAvailable Pod", c.Reason, c.Message)
		}
		return nil
	})
	podAnnotation(t, late, named, "")

	// The annotation is renamed: the new name is written, the old removed.
	const renamed = "example.com/public-address"
	eventually(t, "rename the annotation", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pol), pol); err != nil {
			return err
		}
		pol.Spec.Ports[0].AddressAnnotation = renamed
		return kube.Update(context.Background(), pol)
	})
	b := bound(t, ns, "p-1").Status.Bindings[0]
	podAnnotation(t, pods[1], renamed, b.Address)
	podAnnotation(t, pods[1], named, "")
	podAnnotation(t, pods[1], podannotation.AnnotationNamedAddresses, renamed)

	// A Pod leaves: the waiting one takes its port.
	deletePod(t, pods[0])
	policyStatus(t, pol, 3, 3, corev1.ConditionTrue)
	lb := bound(t, ns, late.Name).Status.Bindings[0]
	podAnnotation(t, late, renamed, lb.Address)
}
