package targetset

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

func TestInstanceID(t *testing.T) {
	for in, want := range map[string]string{
		"qcloud:///800002/ins-abcdefgh":             "ins-abcdefgh",
		"tencentcloud:///ap-guangzhou-3/ins-abc123": "ins-abc123",
		"ins-bare0001":                   "ins-bare0001",
		"":                               "",
		"kind://docker/kind/kind-worker": "",
		"qcloud:///800002/ins-":          "",
	} {
		got, ok := instanceID(in)
		if ok != (want != "") || (ok && got != want) {
			t.Errorf("instanceID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestIncluded(t *testing.T) {
	yes, no := clb.Ptr(true), clb.Ptr(false)
	for _, c := range []struct {
		cond            discoveryv1.EndpointConditions
		includeNotReady bool
		want            bool
	}{
		{discoveryv1.EndpointConditions{}, false, true}, // unknown counts as ready
		{discoveryv1.EndpointConditions{Ready: yes}, false, true},
		{discoveryv1.EndpointConditions{Ready: no}, false, false},
		{discoveryv1.EndpointConditions{Ready: no}, true, true},
		{discoveryv1.EndpointConditions{Ready: no, Serving: yes, Terminating: yes}, true, false},
	} {
		if got := included(c.cond, c.includeNotReady); got != c.want {
			t.Errorf("included(%+v, %v) = %v, want %v", c.cond, c.includeNotReady, got, c.want)
		}
	}
}

func TestSubsetWeight(t *testing.T) {
	b := v1alpha1.ServiceBackend{Weight: clb.Ptr(int64(7)), Subsets: []v1alpha1.WeightedSubset{
		{LabelSelector: map[string]string{"version": "v1", "zone": "a"}, Weight: 10},
		{LabelSelector: map[string]string{"version": "v1"}, Weight: 20},
	}}
	for _, c := range []struct {
		labels map[string]string
		want   int64
	}{
		{map[string]string{"version": "v1", "zone": "a"}, 10}, // the first match wins
		{map[string]string{"version": "v1", "zone": "b"}, 20},
		{map[string]string{"version": "v2"}, 7},
		{nil, 7},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: c.labels}}
		if got := subsetWeight(pod, b); got != c.want {
			t.Errorf("subsetWeight(%v) = %d, want %d", c.labels, got, c.want)
		}
	}
	if got := subsetWeight(&corev1.Pod{}, v1alpha1.ServiceBackend{}); got != defaultWeight {
		t.Errorf("no weight: %d, want %d", got, defaultWeight)
	}
}

func TestResolutionCondition(t *testing.T) {
	r := resolution{targets: make([]v1alpha1.Target, 3)}
	if c := r.condition(); c.Status != "True" || c.Message != "3 targets" {
		t.Errorf("nothing skipped: %+v", c)
	}
	for i := range 7 {
		r.skip("node-%d", i)
	}
	c := r.condition()
	if c.Status != "False" || !strings.Contains(c.Message, "7 left out") || !strings.Contains(c.Message, "node-4") ||
		strings.Contains(c.Message, "node-5") || !strings.Contains(c.Message, "and 2 more") {
		t.Errorf("7 skipped: %+v", c)
	}
}

func TestNodeUsers(t *testing.T) {
	n := newNodeUsers()
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	n.set(a, []string{"n1", "n2"})
	n.set(b, []string{"n2"})
	if got := n.get("n2"); len(got) != 2 {
		t.Errorf("n2 read by %v, want a and b", got)
	}
	n.set(a, []string{"n3"}) // a moved off n1 and n2
	if got := n.get("n1"); len(got) != 0 {
		t.Errorf("n1 read by %v, want none", got)
	}
	n.set(b, nil)
	if got := n.get("n2"); len(got) != 0 {
		t.Errorf("n2 read by %v after b forgot it, want none", got)
	}
	if got := n.get("n3"); len(got) != 1 || got[0] != a {
		t.Errorf("n3 read by %v, want a", got)
	}
}
