package ingress

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The scenarios of bcs-ingress-controller's "all use cases" that concern
// the Ingress (1-5, 7-9), each in its own namespace on its own load
// balancer, in parallel. The seed's YAML is read as it is (apiVersion
// changed) with the load balancer id and the namespaces replaced.

// TestScenario1NodePort: TCP 38080 forwards to the Service's NodePort on
// the nodes that run its Pods; Pods that come and go move the targets.
func TestScenario1NodePort(t *testing.T) {
	t.Parallel()
	ns, lb := "s1", existingLB(t, "s1")
	suite.Namespace(t, ns)
	node(t, "s1-a", "ins-s1a")
	node(t, "s1-b", "ins-s1b")
	node(t, "s1-c", "ins-s1c")
	svc := newService(t, ns, "test-svc", 8080, 8080)
	svc.add(t, "test-svc-0", "10.11.0.10", "s1-a", 0)
	svc.add(t, "test-svc-1", "10.11.0.11", "s1-b", 0)
	in := seed(t, "s1-nodeport.yaml", "lb-xxxxxxx", lb, "default", ns)
	apply(t, in)
	np := func(ins string) string { return fmt.Sprintf("%s:%d", ins, svc.nodePort) }
	waitView(t, "the NodePort on both nodes", lb, cloudView{"TCP 38080": {np("ins-s1a"): 10, np("ins-s1b"): 10}})

	svc.add(t, "test-svc-2", "10.11.0.12", "s1-c", 0)
	svc.drop(t, "test-svc-0")
	waitView(t, "targets follow the Pods", lb, cloudView{"TCP 38080": {np("ins-s1b"): 10, np("ins-s1c"): 10}})

	// The status says it as a kubectl get reader wants it.
	eventually(t, "status of the rule", func() error {
		st := ingressStatus(t, xrIngress, ns, in.GetName())
		rules, _, _ := unstructured.NestedSlice(st, "rules")
		if len(rules) != 1 {
			return fmt.Errorf("status %v", st)
		}
		ls, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "listeners")
		if len(ls) != 1 {
			return fmt.Errorf("status %v", st)
		}
		l := ls[0].(map[string]any)
		backends, _, _ := unstructured.NestedSlice(l, "backends")
		if l["listenerId"] == nil || len(backends) != 2 || st["listeners"] != int64(1) || st["backends"] != int64(2) {
			return fmt.Errorf("listener %v, counts %v/%v", l, st["listeners"], st["backends"])
		}
		return nil
	})
	remove(t, in, lb)
}

// TestScenario2Direct: straight to the Pod IPs and target port.
func TestScenario2Direct(t *testing.T) {
	t.Parallel()
	ns, lb := "s2", existingLB(t, "s2")
	suite.Namespace(t, ns)
	node(t, "s2-a", "ins-s2a")
	svc := newService(t, ns, "test-svc", 28080, 8080)
	svc.add(t, "test-svc-0", "10.12.0.10", "s2-a", 0)
	svc.add(t, "test-svc-1", "10.12.0.11", "s2-a", 0)
	in := seed(t, "s2-direct.yaml", "lb-xxxxxxx", lb, "default", ns)
	apply(t, in)
	waitView(t, "the Pods' IPs", lb, cloudView{"TCP 38080": {"10.12.0.10:8080": 10, "10.12.0.11:8080": 10}})
	svc.drop(t, "test-svc-1")
	waitView(t, "a deleted Pod leaves", lb, cloudView{"TCP 38080": {"10.12.0.10:8080": 10}})

	// A new port is a new listener; the old one, gone from the spec, is
	// deleted from the cloud.
	eventually(t, "move the rule to port 38081", func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(xrIngress)
		if err := kube.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: in.GetName()}, u); err != nil {
			return err
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		rules[0].(map[string]any)["port"] = int64(38081)
		if err := unstructured.SetNestedSlice(u.Object, rules, "spec", "rules"); err != nil {
			return err
		}
		return kube.Update(t.Context(), u)
	})
	// Crossplane deletes what left the spec in the foreground; the
	// garbage collector, which the local control plane lacks, then lets
	// it go (composed resources have no dependents).
	want := cloudView{"TCP 38081": {"10.12.0.10:8080": 10}}
	eventually(t, "only the new listener", func() error {
		if err := collectForeground(t, ns); err != nil {
			return err
		}
		return sameView(lb, want)
	})
	remove(t, in, lb)
}

// TestScenario3HostPort: to the nodes on the Pods' hostPort.
func TestScenario3HostPort(t *testing.T) {
	t.Parallel()
	ns, lb := "s3", existingLB(t, "s3")
	suite.Namespace(t, ns)
	node(t, "s3-a", "ins-s3a")
	node(t, "s3-b", "ins-s3b")
	svc := newService(t, ns, "test-svc", 28080, 8080)
	svc.add(t, "test-svc-0", "10.13.0.10", "s3-a", 18080)
	svc.add(t, "test-svc-1", "10.13.0.11", "s3-b", 18080)
	in := seed(t, "s3-hostport.yaml", "lb-xxxxxxx", lb, "default", ns)
	apply(t, in)
	waitView(t, "the nodes on hostPort 18080", lb, cloudView{"TCP 38080": {"ins-s3a:18080": 10, "ins-s3b:18080": 10}})
	remove(t, in, lb)
}

// TestScenario4HTTPS: an HTTPS listener with the certificate, a rule for
// the domain and path, the Service's NodePort behind it.
func TestScenario4HTTPS(t *testing.T) {
	t.Parallel()
	ns, lb := "s4", existingLB(t, "s4")
	suite.Namespace(t, ns)
	node(t, "s4-a", "ins-s4a")
	svc := newService(t, ns, "test-tcp", 8080, 8080)
	svc.add(t, "test-tcp-0", "10.14.0.10", "s4-a", 0)
	in := seed(t, "s4-https.yaml", "lb-xxxxxxx", lb, "default", ns)
	apply(t, in)
	waitView(t, "the route's targets", lb, cloudView{"HTTPS 443 www.qq.com/path1": {fmt.Sprintf("ins-s4a:%d", svc.nodePort): 10}})
	lbv, _ := suite.InventoryLB(lb)
	if c := lbv.Listeners[0]; c.Protocol != "HTTPS" {
		t.Errorf("listener %+v", c)
	}
	remove(t, in, lb)
}

// TestScenario5Segments: each of 6 StatefulSet Pods gets a UDP segment of
// 5 ports (a port-range listener) to its own ports; a Pod that goes away
// leaves its segment without a target.
func TestScenario5Segments(t *testing.T) {
	t.Parallel()
	ns, lb := "s5", existingLB(t, "s5")
	suite.Namespace(t, ns)
	for i := range 6 {
		readyPod(t, ns, fmt.Sprintf("gameserver-%d", i), fmt.Sprintf("10.15.0.%d", 10+i), "", map[string]string{"app": "gameserver"},
			corev1.ContainerPort{ContainerPort: int32(30000 + 5*i), Protocol: corev1.ProtocolUDP})
	}
	in := seed(t, "s5-segments.yaml", "lb-xxxxxxx", lb, "namespace: default", "namespace: "+ns, "workloadNamespace: game", "workloadNamespace: "+ns)
	apply(t, in)
	want := cloudView{}
	for i := range 6 {
		p := 30000 + 5*i
		want[fmt.Sprintf("UDP %d-%d", p, p+4)] = map[string]int{fmt.Sprintf("10.15.0.%d:%d", 10+i, p): 10}
	}
	waitView(t, "a segment per Pod", lb, want)

	if err := kube.Delete(t.Context(), &corev1.Pod{ObjectMeta: podMeta(ns, "gameserver-5")}); err != nil {
		t.Fatal(err)
	}
	want["UDP 30025-30029"] = map[string]int{}
	waitView(t, "the deleted Pod's segment is empty", lb, want)
	remove(t, in, lb)
}

// TestScenario7ServiceWeights: 80 % to svc1's nodes, 20 % to svc2's.
func TestScenario7ServiceWeights(t *testing.T) {
	t.Parallel()
	ns, lb := "s7", existingLB(t, "s7")
	suite.Namespace(t, ns)
	node(t, "s7-a", "ins-s7a")
	node(t, "s7-b", "ins-s7b")
	svc1, svc2 := newService(t, ns, "svc1", 8080, 8080), newService(t, ns, "svc2", 8080, 8080)
	svc1.add(t, "svc1-0", "10.17.0.10", "s7-a", 0)
	svc2.add(t, "svc2-0", "10.17.0.20", "s7-b", 0)
	in := seed(t, "s7-service-weights.yaml", "lb-xxxxxxx", lb, "default", ns)
	apply(t, in)
	waitView(t, "weights per Service", lb, cloudView{"TCP 38080": {
		fmt.Sprintf("ins-s7a:%d", svc1.nodePort): 80, fmt.Sprintf("ins-s7b:%d", svc2.nodePort): 20}})
	remove(t, in, lb)
}

// TestScenario8SubsetWeights: Pods of one Service weighted by their
// Deployment's labels.
func TestScenario8SubsetWeights(t *testing.T) {
	t.Parallel()
	ns, lb := "s8", existingLB(t, "s8")
	suite.Namespace(t, ns)
	node(t, "s8-a", "ins-s8a")
	svc := newService(t, ns, "nginx-v2", 8080, 8080)
	svc.add(t, "nginx-v2-1-a", "10.18.0.10", "s8-a", 0, "version", "v2-1")
	svc.add(t, "nginx-v2-1-b", "10.18.0.11", "s8-a", 0, "version", "v2-1")
	svc.add(t, "nginx-v2-2-a", "10.18.0.20", "s8-a", 0, "version", "v2-2")
	in := seed(t, "s8-subset-weights.yaml", "lb-7hxxxxx", lb, "ingress-test", ns)
	apply(t, in)
	waitView(t, "weights per subset", lb, cloudView{"TCP 8080": {"10.18.0.10:8080": 10, "10.18.0.11:8080": 10, "10.18.0.20:8080": 20}})
	svc.add(t, "nginx-v2-2-b", "10.18.0.21", "s8-a", 0, "version", "v2-2")
	waitView(t, "a new Pod of a subset takes its weight", lb, cloudView{"TCP 8080": {"10.18.0.10:8080": 10, "10.18.0.11:8080": 10, "10.18.0.20:8080": 20, "10.18.0.21:8080": 20}})
	remove(t, in, lb)
}

// TestScenario9HTTPSPerPod: one HTTPS listener per StatefulSet Pod with
// the route to that Pod.
func TestScenario9HTTPSPerPod(t *testing.T) {
	t.Parallel()
	ns, lb := "s9", existingLB(t, "s9")
	suite.Namespace(t, ns)
	for i := range 6 {
		readyPod(t, ns, fmt.Sprintf("gameserver-%d", i), fmt.Sprintf("10.19.0.%d", 10+i), "", map[string]string{"app": "gameserver"},
			corev1.ContainerPort{ContainerPort: int32(30000 + i)})
	}
	in := seed(t, "s9-https-per-pod.yaml", "lb-xxxxxxx", lb, "namespace: default", "namespace: "+ns, "workloadNamespace: game", "workloadNamespace: "+ns)
	apply(t, in)
	want := cloudView{}
	for i := range 6 {
		want[fmt.Sprintf("HTTPS %d www.qq.com/path2", 30000+i)] = map[string]int{fmt.Sprintf("10.19.0.%d:%d", 10+i, 30000+i): 10}
	}
	waitView(t, "a listener and route per Pod", lb, want)
	remove(t, in, lb)
}

// TestClaimByNameInAnotherRegion: the claim form, its load balancer named
// in lbnames with another region than the ProviderConfig's. The provider
// finds it by name there and creates the listener in that region.
func TestClaimByNameInAnotherRegion(t *testing.T) {
	t.Parallel()
	ns, name := "claims", "edge-shanghai"
	lb := suite.ExistingLB(t, "ap-shanghai", name)
	suite.Namespace(t, ns)
	node(t, "claims-a", "ins-claimsa")
	svc := newService(t, ns, "nginx", 8080, 80)
	svc.add(t, "nginx-0", "10.20.0.10", "claims-a", 0)
	in := seed(t, "qs2-direct.yaml", "apiVersion: workload.tencentcloud.crossplane.io", "apiVersion: claims.workload.tencentcloud.crossplane.io",
		"networkextension.bkbcs.tencent.com/lbids: lb-xxx", "networkextension.bkbcs.tencent.com/lbnames: ap-shanghai:"+name, "ingress-test", ns)
	apply(t, in)
	waitView(t, "the Pod behind the listener in ap-shanghai", lb, cloudView{"TCP 39090": {"10.20.0.10:80": 10}})
	eventually(t, "the claim reports the load balancer's id and the listener", func() error {
		st := ingressStatus(t, claimIngress, ns, in.GetName())
		lbs, _, _ := unstructured.NestedSlice(st, "loadBalancers")
		if len(lbs) != 1 || lbs[0].(map[string]any)["id"] != lb || st["listeners"] != int64(1) {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
	remove(t, in, lb)
}
