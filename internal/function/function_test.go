package function

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// run calls the function with an observed composite and observed composed
// resources (pipeline name → JSON).
func run(t *testing.T, xr string, observed map[string]string) *fnv1.RunFunctionResponse {
	t.Helper()
	f, err := New(logging.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{
		Composite: &fnv1.Resource{Resource: resource.MustStructJSON(xr)},
		Resources: map[string]*fnv1.Resource{},
	}}
	for name, js := range observed {
		req.Observed.Resources[name] = &fnv1.Resource{Resource: resource.MustStructJSON(js)}
	}
	rsp, err := f.RunFunction(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rsp
}

// desired returns the desired composed resources of a response, failing
// the test on a fatal result.
func desired(t *testing.T, rsp *fnv1.RunFunctionResponse) map[resource.Name]*resource.DesiredComposed {
	t.Helper()
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			t.Fatalf("fatal result: %s", r.GetMessage())
		}
	}
	d, err := request.GetDesiredComposedResources(&fnv1.RunFunctionRequest{Desired: rsp.GetDesired()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func as(t *testing.T, d *resource.DesiredComposed, into runtime.Object) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Resource.Object, into); err != nil {
		t.Fatal(err)
	}
}

func keys[V any](m map[resource.Name]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, string(k))
	}
	slices.Sort(out)
	return out
}

const templateXR = `{
 "apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1", "kind": "PodPublicAddress",
 "metadata": {"name": "battle", "namespace": "games"},
 "spec": {
  "selector": {"matchLabels": {"app": "battle"}},
  "ports": [{"port": 9000, "protocol": "TCP", "addressAnnotation": "game.example.com/address"}, {"port": "voice", "protocol": "UDP"}],
  "loadBalancers": {"template": {"type": "OPEN", "vipIsp": "BGP"}, "count": 2, "autoCreate": {"maxLoadBalancers": 3}},
  "portRange": {"start": 30000, "end": 30099},
  "allocationPolicy": "InOrder", "strategy": "Dynamic", "keepDuration": "5m",
  "providerConfigRef": {"kind": "ProviderConfig", "name": "team-a"}
 }}`

func TestTemplateComposesLoadBalancersPoolAndPolicy(t *testing.T) {
	d := desired(t, run(t, templateXR, nil))
	if diff := cmp.Diff([]string{"loadbalancer-0", "loadbalancer-1", "podaddresspolicy", "portpool"}, keys(d)); diff != "" {
		t.Fatalf("composed resources (-want +got):\n%s", diff)
	}
	for name, r := range d {
		if r.Ready != resource.ReadyFalse {
			t.Errorf("%s: nothing is observed yet, want not ready, got %s", name, r.Ready)
		}
		if r.Resource.GetNamespace() != "games" {
			t.Errorf("%s: namespace %q, want the XR's", name, r.Resource.GetNamespace())
		}
		if _, ok := r.Resource.Object["status"]; ok {
			t.Errorf("%s: a desired resource must not carry status", name)
		}
	}

	lb := &clbv1alpha1.LoadBalancer{}
	as(t, d["loadbalancer-1"], lb)
	if lb.Name != "battle-1" || lb.Spec.ForProvider.Type == nil || *lb.Spec.ForProvider.Type != "OPEN" ||
		lb.Spec.ProviderConfigReference == nil || lb.Spec.ProviderConfigReference.Name != "team-a" || len(lb.Spec.ManagementPolicies) != 0 {
		t.Errorf("created load balancer: got %+v", lb)
	}

	pool := &clbv1alpha1.PortPool{}
	as(t, d[namePortPool], pool)
	pp := pool.Spec.ForProvider
	if pool.Name != "battle" || pp.StartPort != 30000 || pp.EndPort != 30099 {
		t.Errorf("pool name or range: %s %d-%d", pool.Name, pp.StartPort, pp.EndPort)
	}
	if diff := cmp.Diff([]string{"TCP", "UDP"}, pp.Protocols); diff != "" {
		t.Errorf("pool protocols (-want +got):\n%s", diff)
	}
	var refs []string
	for _, r := range pp.LoadBalancerIDRefs {
		refs = append(refs, r.Name)
	}
	if diff := cmp.Diff([]string{"battle-0", "battle-1"}, refs); diff != "" {
		t.Errorf("pool load balancer references (-want +got):\n%s", diff)
	}
	if pp.AutoCreate == nil || pp.AutoCreate.MaxLoadBalancers != 3 || pp.AutoCreate.Template.VipIsp == nil || *pp.AutoCreate.Template.VipIsp != "BGP" {
		t.Errorf("pool autoCreate: got %+v", pp.AutoCreate)
	}
	if pp.AllocationPolicy == nil || *pp.AllocationPolicy != "InOrder" || pool.Spec.ProviderConfigReference.Name != "team-a" {
		t.Errorf("pool policy or provider config: %+v", pool.Spec)
	}

	policy := &networkv1alpha1.PodAddressPolicy{}
	as(t, d[namePolicy], policy)
	if policy.Name != "battle" || policy.Spec.Selector.MatchLabels["app"] != "battle" || policy.Spec.KeepDuration.Minutes() != 5 {
		t.Errorf("policy: got %+v", policy.Spec)
	}
	if len(policy.Spec.Ports) != 2 || policy.Spec.Ports[0].Port.IntValue() != 9000 || policy.Spec.Ports[1].Port.String() != "voice" ||
		policy.Spec.Ports[0].AddressAnnotation != "game.example.com/address" || policy.Spec.Ports[1].Pools[0].Name != "battle" {
		t.Errorf("policy ports: got %+v", policy.Spec.Ports)
	}
}

func TestExistingLoadBalancersAreObservedOnly(t *testing.T) {
	xr := `{"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1", "kind": "PodPublicAddress",
	 "metadata": {"name": "rooms", "namespace": "games"},
	 "spec": {"selector": {"matchLabels": {"app": "rooms"}}, "ports": [{"port": 7000, "protocol": "TCP_UDP"}],
	  "loadBalancers": {"existingIds": ["lb-aaa", "lb-bbb"]}, "portRange": {"start": 40000, "end": 40999}}}`
	d := desired(t, run(t, xr, nil))
	lb := &clbv1alpha1.LoadBalancer{}
	as(t, d["loadbalancer-lb-bbb"], lb)
	if lb.Name != "rooms-lb-bbb" || lb.Annotations["crossplane.io/external-name"] != "lb-bbb" {
		t.Errorf("existing load balancer is not imported by id: %+v", lb.ObjectMeta)
	}
	if diff := cmp.Diff([]string{"Observe"}, []string{string(lb.Spec.ManagementPolicies[0])}); diff != "" || len(lb.Spec.ManagementPolicies) != 1 {
		t.Errorf("management policies %v, want only Observe", lb.Spec.ManagementPolicies)
	}
	pool := &clbv1alpha1.PortPool{}
	as(t, d[namePortPool], pool)
	if len(pool.Spec.ForProvider.LoadBalancerIDRefs) != 2 || pool.Spec.ForProvider.AutoCreate != nil {
		t.Errorf("pool: %+v", pool.Spec.ForProvider)
	}
	if diff := cmp.Diff([]string{"TCP", "UDP"}, pool.Spec.ForProvider.Protocols); diff != "" {
		t.Errorf("TCP_UDP needs both listeners (-want +got):\n%s", diff)
	}
}

func TestRegionGivesIDsToThePool(t *testing.T) {
	xr := `{"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1", "kind": "PodPublicAddress",
	 "metadata": {"name": "rooms", "namespace": "games"},
	 "spec": {"selector": {"matchLabels": {"app": "rooms"}}, "ports": [{"port": 7000, "protocol": "TCP"}], "region": "ap-chengdu",
	  "loadBalancers": {"existingIds": ["lb-aaa"]}, "portRange": {"start": 40000, "end": 40999}}}`
	d := desired(t, run(t, xr, nil))
	if _, ok := d["loadbalancer-lb-aaa"]; ok {
		t.Error("a load balancer of another region cannot be a LoadBalancer resource")
	}
	pool := &clbv1alpha1.PortPool{}
	as(t, d[namePortPool], pool)
	if diff := cmp.Diff([]string{"ap-chengdu:lb-aaa"}, pool.Spec.ForProvider.LoadBalancerIDs); diff != "" {
		t.Errorf("pool ids (-want +got):\n%s", diff)
	}
}

func TestLegacyXRComposesInTheClaimNamespace(t *testing.T) {
	xr := `{"apiVersion": "claims.workload.tencentcloud.crossplane.io/v1alpha1", "kind": "XPodPublicAddress",
	 "metadata": {"name": "rooms-x7k2p"},
	 "spec": {"claimRef": {"apiVersion": "claims.workload.tencentcloud.crossplane.io/v1alpha1", "kind": "PodPublicAddress", "name": "rooms", "namespace": "team-a"},
	  "selector": {"matchLabels": {"app": "rooms"}}, "ports": [{"port": 7000, "protocol": "TCP"}],
	  "loadBalancers": {"existingIds": ["lb-aaa"]}, "portRange": {"start": 40000, "end": 40999}}}`
	d := desired(t, run(t, xr, nil))
	for name, r := range d {
		if r.Resource.GetNamespace() != "team-a" {
			t.Errorf("%s: namespace %q, want the claim's team-a", name, r.Resource.GetNamespace())
		}
	}
	if n := d[namePolicy].Resource.GetName(); n != "rooms-x7k2p" {
		t.Errorf("policy name %q, want the XR's name", n)
	}

	orphan := strings.Replace(xr, `"claimRef": {"apiVersion": "claims.workload.tencentcloud.crossplane.io/v1alpha1", "kind": "PodPublicAddress", "name": "rooms", "namespace": "team-a"},`, "", 1)
	if got := fatal(run(t, orphan, nil)); !strings.Contains(got, "through a claim") {
		t.Errorf("a legacy XR without a claim: fatal %q", got)
	}
}

func fatal(rsp *fnv1.RunFunctionResponse) string {
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return r.GetMessage()
		}
	}
	return ""
}

func warnings(rsp *fnv1.RunFunctionResponse) []string {
	var out []string
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING {
			out = append(out, r.GetMessage())
		}
	}
	return out
}

func TestInvalidSpecsAreFatal(t *testing.T) {
	base := `{"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1", "kind": "PodPublicAddress",
	 "metadata": {"name": "x", "namespace": "games"}, "spec": SPEC}`
	cases := map[string]struct{ spec, want string }{
		"count without template":   {`{"selector": {}, "ports": [{"port": 1, "protocol": "TCP"}], "loadBalancers": {"count": 1}, "portRange": {"start": 1, "end": 2}}`, "needs spec.loadBalancers.template"},
		"no load balancers":        {`{"selector": {}, "ports": [{"port": 1, "protocol": "TCP"}], "loadBalancers": {}, "portRange": {"start": 1, "end": 2}}`, "give existingIds"},
		"region with created":      {`{"selector": {}, "ports": [{"port": 1, "protocol": "TCP"}], "region": "ap-x", "loadBalancers": {"template": {}, "count": 1}, "portRange": {"start": 1, "end": 2}}`, "existing load balancers only"},
		"template region":          {`{"selector": {}, "ports": [{"port": 1, "protocol": "TCP"}], "loadBalancers": {"template": {"region": "ap-shanghai"}, "autoCreate": {"maxLoadBalancers": 1}}, "portRange": {"start": 1, "end": 2}}`, "template.region is not supported"},
		"partial segment":          {`{"selector": {}, "ports": [{"port": 1, "protocol": "TCP"}], "loadBalancers": {"existingIds": ["lb-a"]}, "portRange": {"start": 1, "end": 25}, "segmentLength": 10}`, "whole number of segments"},
		"segment beyond the range": {`{"selector": {}, "ports": [{"port": 1, "protocol": "UDP"}], "loadBalancers": {"existingIds": ["lb-a"]}, "portRange": {"start": 60000, "end": 65535}, "segmentLength": 10001}`, "is longer than spec.portRange 60000-65535 (5536 ports)"},
		"three protocols":          {`{"selector": {}, "ports": [{"port": 1, "protocol": "TCP_UDP"}, {"port": 2, "protocol": "QUIC"}], "loadBalancers": {"existingIds": ["lb-a"]}, "portRange": {"start": 1, "end": 2}}`, "at most two"},
		"no ports":                 {`{"selector": {}, "ports": [], "loadBalancers": {"existingIds": ["lb-a"]}, "portRange": {"start": 1, "end": 2}}`, "at least one port"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, strings.Replace(base, "SPEC", tc.spec, 1), nil)
			if got := fatal(rsp); !strings.Contains(got, tc.want) {
				t.Errorf("fatal %q, want it to say %q", got, tc.want)
			}
			if len(rsp.GetDesired().GetResources()) != 0 {
				t.Error("an invalid spec must compose nothing")
			}
		})
	}
}

func TestUnknownKindIsFatal(t *testing.T) {
	xr := `{"apiVersion": "example.org/v1", "kind": "PodPublicAddress", "metadata": {"name": "x", "namespace": "n"}, "spec": {}}`
	if got := fatal(run(t, xr, nil)); !strings.Contains(got, "not a composite kind") {
		t.Errorf("fatal %q", got)
	}
}

func TestReadinessGateWarns(t *testing.T) {
	xr := strings.Replace(templateXR, `"strategy": "Dynamic"`, `"strategy": "Dynamic", "readinessGate": true`, 1)
	ws := warnings(run(t, xr, nil))
	if len(ws) != 1 || !strings.Contains(ws[0], readinessGateCondition) {
		t.Errorf("warnings %q, want one naming the readiness gate condition", ws)
	}
}

func TestStatusAndReadinessFromObservedResources(t *testing.T) {
	observed := map[string]string{
		"loadbalancer-0": `{"apiVersion": "clb.tencentcloud.m.crossplane.io/v1alpha1", "kind": "LoadBalancer", "metadata": {"name": "battle-0", "namespace": "games"},
		  "status": {"atProvider": {"id": "lb-0001", "vips": ["203.0.113.10"]}, "conditions": [{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}`,
		"loadbalancer-1": `{"apiVersion": "clb.tencentcloud.m.crossplane.io/v1alpha1", "kind": "LoadBalancer", "metadata": {"name": "battle-1", "namespace": "games"},
		  "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Creating", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}`,
		"portpool": `{"apiVersion": "clb.tencentcloud.m.crossplane.io/v1alpha1", "kind": "PortPool", "metadata": {"name": "battle", "namespace": "games"},
		  "status": {"atProvider": {"allocated": 7, "free": 193, "bindings": 4, "loadBalancers": [
		    {"id": "lb-0001", "vips": ["203.0.113.10"], "state": "Ready", "listenersReady": 200, "listenersWanted": 200, "allocated": 7, "free": 93},
		    {"id": "lb-auto1", "vips": ["203.0.113.5"], "state": "Ready", "listenersReady": 200, "listenersWanted": 200, "allocated": 0, "free": 100}]},
		   "conditions": [{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}`,
		"podaddresspolicy": `{"apiVersion": "network.tencentcloud.m.crossplane.io/v1alpha1", "kind": "PodAddressPolicy", "metadata": {"name": "battle", "namespace": "games"},
		  "status": {"matchedPods": 4, "boundPods": 3, "conditions": [{"type": "Ready", "status": "False", "reason": "Binding", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}`,
	}
	rsp := run(t, templateXR, observed)
	d := desired(t, rsp)
	want := map[string]resource.Ready{"loadbalancer-0": resource.ReadyTrue, "loadbalancer-1": resource.ReadyFalse, "portpool": resource.ReadyTrue, "podaddresspolicy": resource.ReadyFalse}
	for name, r := range want {
		if got := d[resource.Name(name)].Ready; got != r {
			t.Errorf("%s: ready %s, want %s (its Ready condition)", name, got, r)
		}
	}
	dxr, err := request.GetDesiredCompositeResource(&fnv1.RunFunctionRequest{Desired: rsp.GetDesired()})
	if err != nil {
		t.Fatal(err)
	}
	got := Status{}
	if err := dxr.Resource.GetValueInto("status", &got); err != nil {
		t.Fatal(err)
	}
	wantStatus := Status{
		LoadBalancerIDs: []string{"lb-0001", "lb-auto1"},
		VIPs:            []string{"203.0.113.10", "203.0.113.5"},
		AllocatedPorts:  7, FreePorts: 193, MatchedPods: 4, BoundPods: 3,
	}
	if diff := cmp.Diff(wantStatus, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}
