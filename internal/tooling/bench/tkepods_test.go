package bench

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

func tkeRun() Run {
	return Run{Mode: Mode{Name: "LeastUsed", Policy: clbv1alpha1.PolicyLeastUsed}, Namespace: "bench-leastused-x7k2p",
		Cloud: Cloud{LoadBalancerIDs: []string{"lb-0001", "lb-0002"}, StartPort: 40000, EndPort: 40049}}
}

// TestTKEPodsServeThePeersPods: the provider is given the peer's Pods,
// byte for byte, and the pool those Pods name is the one Prepare makes.
func TestTKEPodsServeThePeersPods(t *testing.T) {
	r := tkeRun()
	ours, err := yaml.Marshal((&TKEPods{}).Pod(r, "gs-00042"))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := yaml.Marshal((&Peer{}).Pod(r, "gs-00042"))
	if err != nil {
		t.Fatal(err)
	}
	if string(ours) != string(theirs) {
		t.Fatalf("the provider's Pod differs from the peer's:\n%s\nthe peer's:\n%s", ours, theirs)
	}

	// The Pod asks the tke-extend way, and nothing else.
	pod := (&TKEPods{}).Pod(r, "gs-00042")
	want := map[string]string{
		"networking.cloud.tencent.com/enable-clb-port-mapping": "true",
		"networking.cloud.tencent.com/clb-port-mapping":        "7777 TCP peer-bench-leastused-x7k2p",
	}
	if !maps.Equal(pod.Annotations, want) || pod.Namespace != r.Namespace || pod.Name != "gs-00042" {
		t.Errorf("Pod %s/%s annotations %v, want %v", pod.Namespace, pod.Name, pod.Annotations, want)
	}

	// The provider reads it as tke-extend's syntax, from the pool Prepare
	// creates: the peer's pool name, in the tke-extend pool namespace,
	// open to the run's namespace, over the run's load balancers and ports.
	req, asked, err := podannotation.Parse(pod)
	if err != nil || !asked {
		t.Fatalf("Parse: asked %v, %v", asked, err)
	}
	pp := tkePool(r)
	wantPools := []networkv1alpha1.PoolRef{{Namespace: pp.Namespace, Name: pp.Name}}
	if req.Syntax != podannotation.SyntaxTKEExtend || len(req.Ports) != 1 || req.Ports[0].Port.IntValue() != 7777 ||
		req.Ports[0].Protocol != "TCP" || len(req.Ports[0].Pools) != 1 || req.Ports[0].Pools[0] != wantPools[0] {
		t.Errorf("request %+v, want 7777/TCP in %v, syntax %s", req, wantPools, podannotation.SyntaxTKEExtend)
	}
	if pp.Namespace != "tke-port-pools" {
		t.Errorf("pool namespace %q, want tke-port-pools", pp.Namespace)
	}
	if pp.Spec.Consumers == nil || pp.Spec.Consumers.Namespaces.From != clbv1alpha1.ConsentAll {
		t.Errorf("pool consumers %+v, want All", pp.Spec.Consumers)
	}
	if !consentAll(pp) {
		t.Errorf("pool %s/%s does not let namespace %s bind", pp.Namespace, pp.Name, r.Namespace)
	}
	fp := pp.Spec.ForProvider
	if strings.Join(fp.LoadBalancerIDs, ",") != "lb-0001,lb-0002" || fp.StartPort != 40000 || fp.EndPort != 40049 ||
		fp.AllocationPolicy == nil || *fp.AllocationPolicy != clbv1alpha1.PolicyLeastUsed {
		t.Errorf("pool parameters %+v, want the run's load balancers, ports 40000-40049, LeastUsed", fp)
	}
}

// consentAll asks the pool's own consent rule about another namespace.
func consentAll(pp *clbv1alpha1.PortPool) bool {
	ns := &corev1.Namespace{}
	ns.Name = tkeRun().Namespace
	return pp.Spec.Consumers.Namespaces.Allows(pp.Namespace, ns)
}

// TestTKEPodsPublished: a Pod is published for the provider exactly when
// the peer's test says so, on tke-extend's status and result; the
// provider's own annotations do not count.
func TestTKEPodsPublished(t *testing.T) {
	r := tkeRun()
	pod := (&TKEPods{}).Pod(r, "gs-00001")
	req, _, err := podannotation.Parse(pod)
	if err != nil {
		t.Fatal(err)
	}
	bindings := []networkv1alpha1.PortBinding{{Pool: podannotation.TKEPoolNamespace + "/" + poolFor(r), Protocol: "TCP", ContainerPort: 7777,
		LoadBalancerID: "lb-0001", Region: "ap-guangzhou", VIPs: []string{"203.0.113.7"}, Port: 40003, ListenerIDs: map[string]string{"TCP": "lbl-0003"}}}
	ready := podannotation.TKEResultAnnotations(req.Ports, networkv1alpha1.BackendPodIP, bindings, true)
	notReady := podannotation.TKEResultAnnotations(req.Ports, networkv1alpha1.BackendPodIP, bindings, false)
	withAnnotations := func(extra ...map[string]string) *corev1.Pod {
		p := pod.DeepCopy()
		for _, e := range extra {
			maps.Copy(p.Annotations, e)
		}
		return p
	}
	without := func(m map[string]string, key string) map[string]string {
		m = maps.Clone(m)
		delete(m, key)
		return m
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"as created", withAnnotations(), false},
		{"the provider's tke-extend result, Ready", withAnnotations(ready), true},
		{"the provider's tke-extend result, NotReady", withAnnotations(notReady), false},
		{"Ready without the result", withAnnotations(without(ready, podannotation.TKEAnnotationMappingResult)), false},
		{"only the provider's own annotations Ready", withAnnotations(map[string]string{
			podannotation.AnnotationStatus: podannotation.StatusReady, podannotation.AnnotationAddresses: "203.0.113.7:40003"}), false},
	} {
		ours, theirs := (&TKEPods{}).Published(tc.pod), (&Peer{}).Published(tc.pod)
		if ours != tc.want || theirs != tc.want {
			t.Errorf("%s: published for the provider %v, for the peer %v, want %v", tc.name, ours, theirs, tc.want)
		}
	}
}

// TestTKEPodsMarkdown: the page sets the peer's runs and ours on its Pods
// side by side, with the ratio, and says nothing of it without that run.
func TestTKEPodsMarkdown(t *testing.T) {
	r := peerResults(10, 1, 50, 30)
	md := Markdown(r, "results.json", "performance", nil)
	if strings.Contains(md, "same tke-extend-annotated workload") || strings.Contains(md, "next section") {
		t.Errorf("the page speaks of the same workload without that run")
	}
	r.Systems = append(r.Systems, &SystemResult{Name: TKEPodsName, Runs: []*RunResult{
		{Mode: "LeastUsed", Bind: &Phase{Pods: 10, Done: 10, Seconds: 12.5, P50: 1.1, P99: 2.2}, Delete: &Phase{Pods: 10, Done: 10, Seconds: 4}}}})
	md = Markdown(r, "results.json", "performance", nil)
	for _, want := range []string{
		"## The same tke-extend-annotated workload: the peer and us",
		"| tke-extend-network-controller v2.5.2 | tke-extend's | defaults | 50.0 s |",
		"| tke-extend-network-controller v2.5.2 | tke-extend's | best | 30.0 s |",
		"| provider-tencentcloud-network | tke-extend's (the peer's Pods) | LeastUsed | 12.5 s | 1.10 s / 2.20 s |",
		"| provider-tencentcloud-network | its own (for reference) | LeastUsed | 10.0 s |",
		"ours (LeastUsed) vs the peer's defaults: 12.5 s vs 50.0 s: 4.00× faster",
		"ours (LeastUsed) vs the peer's best: 12.5 s vs 30.0 s: 2.40× faster",
		"what its CLBPortPool controller makes of one: a PortPool of the pool's name in namespace `tke-port-pools`",
		"The provider serves these very Pods too, in the next section.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(md, "not idle") {
		t.Errorf("the page calls an idle machine's run shared")
	}
	r.Machine.Note = "load average 13-22 from other work"
	if md := Markdown(r, "results.json", "performance", nil); !strings.Contains(md, "**The machine was not idle during this run**: load average 13-22 from other work.") {
		t.Errorf("the page does not say the machine was shared")
	}
	// The peer cut off by the phase's bound: its time is a lower bound.
	r.Systems[1].Runs[0].Bind.Done = 8
	if md := Markdown(r, "results.json", "performance", nil); !strings.Contains(md, "12.5 s vs ≥ 50.0 s (8/10 published)") {
		t.Errorf("a peer run cut off is not marked as a lower bound")
	}
	// The issue-10 goals stay the provider's own runs'.
	for _, g := range Goals(r) {
		if strings.HasPrefix(g.Figure, "same tke-extend") && g.Met != nil {
			t.Errorf("%s judged; it is set beside the peer, not a goal", g.Figure)
		}
	}
}
