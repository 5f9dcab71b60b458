package podaddress

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

const (
	bcsEnabled   = "portpools.networkextension.bkbcs.tencent.com"
	bcsPorts     = "ports.portpools.networkextension.bkbcs.tencent.com"
	bcsResult    = "poolbindings.portpool.networkextension.bkbcs.tencent.com"
	bcsStatus    = "status.portpools.networkextension.bkbcs.tencent.com"
	bcsReadiness = "readinessgate.portpools.networkextension.bkbcs.tencent.com"
	ourPorts     = "network.tencentcloud.crossplane.io/ports"
	ourResult    = "network.tencentcloud.crossplane.io/addresses"
	ourStatus    = "network.tencentcloud.crossplane.io/status"
	strategy     = "network.tencentcloud.crossplane.io/strategy"
	keep         = "network.tencentcloud.crossplane.io/keep-duration"
	condition    = corev1.PodConditionType("network.tencentcloud.crossplane.io/address-ready")
)

// TestBCSStatefulSet gives three StatefulSet-like Pods that use the bcs
// annotation syntax an address each, and checks the cloud and the Pods.
func TestBCSStatefulSet(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool1", []string{"lb"}, 31000, 31009)

	for i := range 3 {
		pod(t, ns, fmt.Sprintf("web-%d", i), fmt.Sprintf("10.1.0.%d", i+1), map[string]string{
			bcsEnabled:   "true",
			bcsPorts:     "pool1 TCP 7777",
			bcsReadiness: "true",
		})
	}
	seen := map[int32]bool{}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		pa := bound(t, ns, name)
		if len(pa.Status.Bindings) != 1 {
			t.Fatalf("%s: %d bindings, want 1", name, len(pa.Status.Bindings))
		}
		b := pa.Status.Bindings[0]
		if b.LoadBalancerID != lbID(l) || b.Port < 31000 || b.Port > 31009 || seen[b.Port] {
			t.Errorf("%s: binding %+v: want a unique port of 31000-31009 on %s", name, b, lbID(l))
		}
		seen[b.Port] = true
		// The emulator has exactly this Pod as the target of its listener.
		ip := fmt.Sprintf("10.1.0.%d:7777", i+1)
		if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); !slices.Equal(got, []string{ip}) {
			t.Errorf("%s: listener %s targets %v, want [%s]", name, b.ListenerIDs["TCP"], got, ip)
		}
		// The Pod is told, in the bcs dialect it used.
		p := &corev1.Pod{}
		eventually(t, name+" annotations", func() error {
			if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return err
			}
			if p.Annotations[bcsStatus] != "Ready" {
				return errors.Errorf("%s = %q", bcsStatus, p.Annotations[bcsStatus])
			}
			// The condition is written right after the annotations.
			if c := podCond(p); c == nil || c.Status != corev1.ConditionTrue {
				return errors.Errorf("condition %s = %+v, want True", condition, c)
			}
			return nil
		})
		var res []map[string]any
		if err := json.Unmarshal([]byte(p.Annotations[bcsResult]), &res); err != nil || len(res) != 1 {
			t.Fatalf("%s: %s = %q (%v)", name, bcsResult, p.Annotations[bcsResult], err)
		}
		if res[0]["poolName"] != "pool1" || res[0]["startPort"] != float64(b.Port) || res[0]["rsStartPort"] != float64(7777) {
			t.Errorf("%s: bcs result %v does not match binding %+v", name, res[0], b)
		}
		inv, _ := cloud.Inventory().LoadBalancer(lbID(l))
		if lbs, _ := res[0]["poolItemLoadBalancers"].([]any); len(lbs) != 1 || lbs[0].(map[string]any)["type"] != "OPEN" || lbs[0].(map[string]any)["loadbalancerName"] != inv.Name {
			t.Errorf("%s: bcs load balancers %v, want the OPEN load balancer named %q", name, res[0]["poolItemLoadBalancers"], inv.Name)
		}
	}
}

func podCond(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == condition {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestExhaustion lets a third Pod wait for a port of a two-port pool and
// get one as soon as another Pod leaves.
func TestExhaustion(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb", "BGP")
	pool(t, ns, "small", []string{"lb"}, 37000, 37001)
	ann := map[string]string{ourPorts: "7777 small"}
	a := pod(t, ns, "a", "10.7.0.1", ann)
	pod(t, ns, "b", "10.7.0.2", ann)
	bound(t, ns, "a")
	bound(t, ns, "b")
	pod(t, ns, "c", "10.7.0.3", ann)
	pa := state(t, ns, "c", v1alpha1.StateNoPortAvailable)
	if !strings.Contains(pa.Status.Message, "small") {
		t.Errorf("message %q should name the pool", pa.Status.Message)
	}
	deletePod(t, a)
	bound(t, ns, "c")
}

// TestAutoCreateGrows lets a full pool with autoCreate create a load
// balancer for the Pod that found no port.
func TestAutoCreateGrows(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	pp := &clbv1alpha1.PortPool{}
	pp.SetNamespace(ns)
	pp.SetName("grow")
	pp.Spec.ForProvider.StartPort, pp.Spec.ForProvider.EndPort = 43000, 43001
	pp.Spec.ForProvider.AutoCreate = &clbv1alpha1.PoolAutoCreate{
		MaxLoadBalancers: 2,
		Template:         clbv1alpha1.LoadBalancerParameters{Type: clb.Ptr("OPEN"), VipIsp: clb.Ptr("BGP")},
	}
	if err := kube.Create(context.Background(), pp); err != nil {
		t.Fatal(err)
	}
	ann := map[string]string{ourPorts: "7777 grow"}
	for i := range 3 {
		pod(t, ns, fmt.Sprintf("g-%d", i), fmt.Sprintf("10.40.0.%d", i+1), ann)
	}
	lbs := map[string]bool{}
	for i := range 3 {
		lbs[bound(t, ns, fmt.Sprintf("g-%d", i)).Status.Bindings[0].LoadBalancerID] = true
	}
	if len(lbs) != 2 {
		t.Errorf("3 Pods on a 2-port pool landed on %d load balancers, want 2 (one created when the first filled up)", len(lbs))
	}
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pp), pp); err != nil {
		t.Fatal(err)
	}
	auto := 0
	for _, l := range pp.Status.AtProvider.LoadBalancers {
		if l.AutoCreated {
			auto++
		}
	}
	if auto != 2 {
		t.Errorf("pool reports %d auto-created load balancers, want 2", auto)
	}
}

// TestRegistrationFailureRetried makes the cloud refuse the first target
// registrations; the Pods must still end up Bound.
func TestRegistrationFailureRetried(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	l := lb(t, ns, "lb", "BGP")
	pool(t, ns, "pool", []string{"lb"}, 44000, 44004)
	if err := cloud.SetFaults(emulator.Faults{Rules: []emulator.FaultRule{{Action: "BatchRegisterTargets", Code: "InternalError", Count: 3}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.SetFaults(emulator.Faults{}) })
	before := cloud.Calls()["BatchRegisterTargets"]["InternalError"]
	for i := range 2 {
		pod(t, ns, fmt.Sprintf("f-%d", i), fmt.Sprintf("10.50.0.%d", i+1), map[string]string{ourPorts: "7777 pool"})
	}
	for i := range 2 {
		b := bound(t, ns, fmt.Sprintf("f-%d", i)).Status.Bindings[0]
		if got := cloudTargets(lbID(l), b.ListenerIDs["TCP"]); !slices.Equal(got, []string{fmt.Sprintf("10.50.0.%d:7777", i+1)}) {
			t.Errorf("f-%d: targets %v", i, got)
		}
	}
	if n := cloud.Calls()["BatchRegisterTargets"]["InternalError"] - before; n == 0 {
		t.Error("the injected failures never happened; the test proves nothing")
	}
}
