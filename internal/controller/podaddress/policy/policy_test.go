package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func TestPolicyReady(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		p := &corev1.Pod{}
		p.SetName(name)
		p.SetUID(types.UID("uid-" + name))
		return p
	}
	pa := func(name, state, msg string) *v1alpha1.PodAddress {
		a := &v1alpha1.PodAddress{}
		a.Spec.PodUID = "uid-" + name
		a.Status.State, a.Status.Message = state, msg
		return a
	}
	cases := map[string]struct {
		reason  string
		add     func(*tally)
		status  corev1.ConditionStatus
		creason xpv2.ConditionReason
		message string
	}{
		"None": {
			reason:  "A policy that matches no Pod has nothing to wait for.",
			add:     func(*tally) {},
			status:  corev1.ConditionTrue,
			creason: v1alpha1.ReasonAllBound,
			message: "0 of 0 Pods bound",
		},
		"AllBound": {
			reason: "Every matched Pod Bound.",
			add: func(t *tally) {
				t.add(pod("a"), pa("a", v1alpha1.StateBound, ""))
				t.add(pod("b"), pa("b", v1alpha1.StateBound, ""))
			},
			status:  corev1.ConditionTrue,
			creason: v1alpha1.ReasonAllBound,
			message: "2 of 2 Pods bound",
		},
		"Binding": {
			reason: "Pods under way, one without a PodAddress, one whose PodAddress still serves the Pod it replaced.",
			add: func(t *tally) {
				t.add(pod("a"), pa("a", v1alpha1.StateBound, ""))
				t.add(pod("b"), pa("b", v1alpha1.StateWaitBackend, "waiting for the Pod's IP"))
				t.add(pod("c"), nil)
				t.add(pod("d"), pa("old-d", v1alpha1.StateBound, ""))
			},
			status:  corev1.ConditionFalse,
			creason: v1alpha1.ReasonBinding,
			message: "3 of 4 Pods not bound: 1 WaitBackend (b: waiting for the Pod's IP); 2 without a PodAddress yet",
		},
		"BindFailed": {
			reason: "One Pod that cannot bind makes the reason BindFailed; one example per state.",
			add: func(t *tally) {
				t.add(pod("a"), pa("a", v1alpha1.StateNoPortAvailable, "pool g/p: no port available"))
				t.add(pod("b"), pa("b", v1alpha1.StateNoPortAvailable, "pool g/p: no port available"))
				t.add(pod("c"), pa("c", v1alpha1.StateAllocated, "registering"))
			},
			status:  corev1.ConditionFalse,
			creason: v1alpha1.ReasonBindFailed,
			message: "3 of 3 Pods not bound: 1 Allocated (c: registering); 2 NoPortAvailable (a: pool g/p: no port available)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var tl tally
			tc.add(&tl)
			c := tl.ready()
			if c.Status != tc.status || c.Reason != tc.creason || c.Message != tc.message {
				t.Errorf("%s\nReady %s %s %q; want %s %s %q", tc.reason, c.Status, c.Reason, c.Message, tc.status, tc.creason, tc.message)
			}
		})
	}
}

func TestServingPolicy(t *testing.T) {
	pol := func(name string, sel map[string]string) v1alpha1.PodAddressPolicy {
		p := v1alpha1.PodAddressPolicy{}
		p.SetName(name)
		p.Spec.Selector = metav1.LabelSelector{MatchLabels: sel}
		return p
	}
	pod := &corev1.Pod{}
	pod.SetLabels(map[string]string{"app": "battle", "tier": "a"})
	pols := []v1alpha1.PodAddressPolicy{
		pol("zeta", map[string]string{"app": "battle"}),
		pol("alpha", map[string]string{"app": "other"}),
		pol("beta", map[string]string{"tier": "a"}),
		pol("all", nil), // an empty selector selects nothing
	}
	if got := Serving(pols, pod); got == nil || got.GetName() != "beta" {
		t.Errorf("servingPolicy = %v, want beta: the first by name that matches", got)
	}
	if got := Serving(pols[1:2], pod); got != nil {
		t.Errorf("servingPolicy = %s, want none", got.GetName())
	}
}
