package podannotation

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// bindings: a TCP_UDP port with one address per ISP (two pools), a UDP
// segment on an IPv6 VIP, and a binding with no address computed yet.
func bindings() []v1alpha1.PortBinding {
	return []v1alpha1.PortBinding{
		{Pool: "game/pool-v6", Protocol: "UDP", ContainerPort: 9000, LoadBalancerID: "lb-v6", Region: "ap-shanghai",
			VIPs: []string{"2402:4e00::1"}, Port: 31000, EndPort: 31004, ISP: "BGP"},
		{Pool: "game/pool-ctcc", Protocol: "TCP_UDP", ContainerPort: 8000, LoadBalancerID: "lb-ctcc", Region: "ap-nanjing",
			VIPs: []string{"1.1.1.1", "1.1.1.2"}, Port: 30001, Address: "1.1.1.1:30001", ISP: "CTCC", External: "room-a",
			ListenerIDs: map[string]string{"TCP": "lbl-1", "UDP": "lbl-2"}, TargetIP: "10.0.0.5", TargetPort: 8000},
		{Pool: "isp/pool-cmcc", Protocol: "TCP_UDP", ContainerPort: 8000, LoadBalancerID: "lb-cmcc", Region: "ap-nanjing",
			VIPs: []string{"2.2.2.2"}, Port: 30001, ISP: "CMCC"},
	}
}

func TestResultAnnotationsNative(t *testing.T) {
	got := ResultAnnotations(SyntaxNative, bindings(), true)
	if diff := cmp.Diff([]string{AnnotationAddresses, AnnotationStatus}, sortedKeys(got)); diff != "" {
		t.Fatalf("a native Pod gets our two annotations only: -want, +got:\n%s", diff)
	}
	if got[AnnotationStatus] != StatusReady {
		t.Errorf("status = %q, want Ready", got[AnnotationStatus])
	}
	addrs, err := ParseAddresses(got[AnnotationAddresses])
	if err != nil {
		t.Fatal(err)
	}
	want := []Address{
		{Pool: "game/pool-ctcc", Protocol: "TCP_UDP", ContainerPort: 8000, LoadBalancerID: "lb-ctcc",
			VIPs: []string{"1.1.1.1", "1.1.1.2"}, Port: 30001, Address: "1.1.1.1:30001", ISP: "CTCC", External: "room-a"},
		{Pool: "isp/pool-cmcc", Protocol: "TCP_UDP", ContainerPort: 8000, LoadBalancerID: "lb-cmcc",
			VIPs: []string{"2.2.2.2"}, Port: 30001, Address: "2.2.2.2:30001", ISP: "CMCC"},
		{Pool: "game/pool-v6", Protocol: "UDP", ContainerPort: 9000, LoadBalancerID: "lb-v6",
			VIPs: []string{"2402:4e00::1"}, Port: 31000, EndPort: 31004, Address: "[2402:4e00::1]:31000-31004", ISP: "BGP"},
	}
	if diff := cmp.Diff(want, addrs); diff != "" {
		t.Errorf("sorted by container port, then pool; missing addresses computed (IPv6 bracketed, segments as a range): -want, +got:\n%s", diff)
	}

	// The field names are the contract with applications.
	var raw []map[string]any
	if err := json.Unmarshal([]byte(got[AnnotationAddresses]), &raw); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"address", "containerPort", "external", "isp", "loadBalancerId", "pool", "port", "protocol", "vips"}
	if diff := cmp.Diff(wantKeys, sortedKeys(raw[0])); diff != "" {
		t.Errorf("JSON keys of an address: -want, +got:\n%s", diff)
	}
}

func TestResultAnnotationsBCS(t *testing.T) {
	got := ResultAnnotations(SyntaxBCS, bindings(), false)
	wantKeys := []string{AnnotationAddresses, AnnotationStatus, BCSAnnotationStatus, BCSAnnotationBindings}
	slices.Sort(wantKeys)
	if diff := cmp.Diff(wantKeys, sortedKeys(got)); diff != "" {
		t.Fatalf("a bcs Pod gets ours and the bcs ones: -want, +got:\n%s", diff)
	}
	if got[AnnotationStatus] != StatusNotReady || got[BCSAnnotationStatus] != StatusNotReady {
		t.Errorf("not ready: status %q, bcs status %q", got[AnnotationStatus], got[BCSAnnotationStatus])
	}

	// Compare as generic JSON, so that key names, zero values bcs always
	// wrote (endPort 0, poolItemName "") and number types are all checked.
	var raw any
	if err := json.Unmarshal([]byte(got[BCSAnnotationBindings]), &raw); err != nil {
		t.Fatal(err)
	}
	lb := func(id, region string, ips ...any) map[string]any {
		return map[string]any{"loadbalancerName": "", "loadbalancerID": id, "region": region, "type": "", "ips": ips}
	}
	entry := func(pool, ns, proto string, start, end, rs float64, lbs ...map[string]any) map[string]any {
		e := map[string]any{"poolName": pool, "poolNamespace": ns, "poolItemName": "", "protocol": proto,
			"startPort": start, "endPort": end, "rsStartPort": rs}
		var ids, items []any
		for _, l := range lbs {
			ids = append(ids, l["loadbalancerID"])
			items = append(items, l)
		}
		e["loadBalancerIDs"], e["poolItemLoadBalancers"] = ids, items
		return e
	}
	ctcc := entry("pool-ctcc", "game", "TCP", 30001, 0, 8000, lb("lb-ctcc", "ap-nanjing", "1.1.1.1", "1.1.1.2"))
	ctcc["external"] = "room-a"
	ctccUDP := entry("pool-ctcc", "game", "UDP", 30001, 0, 8000, lb("lb-ctcc", "ap-nanjing", "1.1.1.1", "1.1.1.2"))
	ctccUDP["external"] = "room-a"
	want := []any{
		ctcc,
		entry("pool-cmcc", "isp", "TCP", 30001, 0, 8000, lb("lb-cmcc", "ap-nanjing", "2.2.2.2")),
		ctccUDP,
		entry("pool-cmcc", "isp", "UDP", 30001, 0, 8000, lb("lb-cmcc", "ap-nanjing", "2.2.2.2")),
		entry("pool-v6", "game", "UDP", 31000, 31004, 9000, lb("lb-v6", "ap-shanghai", "2402:4e00::1")),
	}
	if diff := cmp.Diff(want, raw); diff != "" {
		t.Errorf("TCP_UDP split into TCP and UDP entries as bcs wrote them, sorted by container port and protocol: -want, +got:\n%s", diff)
	}
}

func TestBCSBindingsMergeLoadBalancers(t *testing.T) {
	// Two load balancers serving the same pool, port and public port are
	// one bcs entry, as a bcs pool item listing both was.
	in := []v1alpha1.PortBinding{
		{Pool: "ns/p", Protocol: "TCP", ContainerPort: 80, LoadBalancerID: "lb-b", VIPs: []string{"2.2.2.2"}, Port: 30000},
		{Pool: "ns/p", Protocol: "TCP", ContainerPort: 80, LoadBalancerID: "lb-a", VIPs: []string{"1.1.1.1"}, Port: 30000},
		{Pool: "p", Protocol: "TCP", ContainerPort: 81, LoadBalancerID: "lb-a", Port: 30001},
	}
	want := []BCSBinding{
		{PoolName: "p", PoolNamespace: "ns", LoadBalancerIDs: []string{"lb-a", "lb-b"}, Protocol: "TCP", StartPort: 30000, RsStartPort: 80,
			PoolItemLoadBalancers: []BCSLoadBalancer{{LoadBalancerID: "lb-a", IPs: []string{"1.1.1.1"}}, {LoadBalancerID: "lb-b", IPs: []string{"2.2.2.2"}}}},
		{PoolName: "p", LoadBalancerIDs: []string{"lb-a"}, Protocol: "TCP", StartPort: 30001, RsStartPort: 81,
			PoolItemLoadBalancers: []BCSLoadBalancer{{LoadBalancerID: "lb-a", IPs: []string{}}}},
	}
	if diff := cmp.Diff(want, BCSBindings(in)); diff != "" {
		t.Errorf("-want, +got:\n%s", diff)
	}
}

func TestResultAnnotationsStable(t *testing.T) {
	a := ResultAnnotations(SyntaxBCS, bindings(), true)
	rev := bindings()
	slices.Reverse(rev)
	b := ResultAnnotations(SyntaxBCS, rev, true)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("the order of the bindings must not change the text (or the Pod is patched for nothing): -first, +reversed:\n%s", diff)
	}
}

func TestResultAnnotationsEmpty(t *testing.T) {
	got := ResultAnnotations(SyntaxBCS, nil, false)
	want := map[string]string{
		AnnotationAddresses: "[]", AnnotationStatus: StatusNotReady,
		BCSAnnotationBindings: "[]", BCSAnnotationStatus: StatusNotReady,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("no bindings yet still give valid JSON arrays, not null: -want, +got:\n%s", diff)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
