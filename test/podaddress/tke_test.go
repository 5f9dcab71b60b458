package podaddress

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// TestTKEExtendAnnotations: a Pod annotated as tke-extend v2's guide shows
// ("8000 UDP pool-test" and "7000 TCPUDP pool-test"), in its own
// namespace, binds in PortPool pool-test of tke-port-pools (which serves
// every namespace by its spec.consumers), and carries tke-extend's status
// and result annotations, which name the listeners that forward to it.
// enable-clb-port-mapping "false" then isolates it: targets gone, ports
// kept.
func TestTKEExtendAnnotations(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	poolName := "pool-test-" + ns // the pool namespace is shared by the suite's tests
	lbName := "lb-" + ns
	l := lb(t, podannotation.TKEPoolNamespace, lbName, "BGP")
	pool(t, podannotation.TKEPoolNamespace, poolName, []string{lbName}, 30000, 30009, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.Protocols = []string{"TCP", "UDP"}
		pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	})

	const ip = "10.26.0.1"
	p := pod(t, ns, "gameserver-0", ip, map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   fmt.Sprintf("8000 UDP %s\n7000 TCPUDP %s", poolName, poolName),
	},
		corev1.ContainerPort{ContainerPort: 8000, Protocol: corev1.ProtocolUDP},
		corev1.ContainerPort{ContainerPort: 7000, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{ContainerPort: 7000, Protocol: corev1.ProtocolUDP})
	pa := bound(t, ns, p.Name)
	if pa.Spec.Source != "annotation/"+podannotation.SyntaxTKEExtend || len(pa.Status.Bindings) != 2 {
		t.Fatalf("source %q, %d bindings; want annotation/tke-extend and 2", pa.Spec.Source, len(pa.Status.Bindings))
	}

	podAnnotation(t, p, podannotation.TKEAnnotationMappingStatus, "Ready")
	got := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[podannotation.TKEAnnotationHostPortMappingResult]; ok {
		t.Errorf("a Pod without hostPort lines got %s", podannotation.TKEAnnotationHostPortMappingResult)
	}
	var res []podannotation.TKEPortMapping
	if err := json.Unmarshal([]byte(got.Annotations[podannotation.TKEAnnotationMappingResult]), &res); err != nil {
		t.Fatalf("%s %q: %v", podannotation.TKEAnnotationMappingResult, got.Annotations[podannotation.TKEAnnotationMappingResult], err)
	}
	type key struct {
		port     int32
		protocol string
	}
	entries := map[key]podannotation.TKEPortMapping{}
	for _, m := range res {
		entries[key{m.Port, m.Protocol}] = m
	}
	if len(res) != 3 || len(entries) != 3 {
		t.Fatalf("result %+v, want 8000/UDP, 7000/TCP and 7000/UDP", res)
	}
	for _, b := range pa.Status.Bindings {
		for _, proto := range v1alpha1.ListenerProtocols(b.Protocol) {
			m, ok := entries[key{b.ContainerPort, proto}]
			want := podannotation.TKEPortMapping{Port: b.ContainerPort, Protocol: proto, Pool: poolName, Region: b.Region,
				LoadbalancerID: lbID(l), LoadbalancerPort: b.Port, ListenerID: b.ListenerIDs[proto], IPs: b.VIPs,
				Address: fmt.Sprintf("%s:%d", b.VIPs[0], b.Port)}
			if !ok || m.Pool != want.Pool || m.LoadbalancerID != want.LoadbalancerID || m.LoadbalancerPort != want.LoadbalancerPort ||
				m.ListenerID != want.ListenerID || m.Address != want.Address || m.Region == "" || m.Hostname != "" || !slices.Equal(m.IPs, want.IPs) {
				t.Errorf("entry %d/%s: %+v, want %+v", b.ContainerPort, proto, m, want)
			}
			target := fmt.Sprintf("%s:%d", ip, b.ContainerPort)
			if ts := cloudTargets(lbID(l), m.ListenerID); !slices.Equal(ts, []string{target}) {
				t.Errorf("listener %s of %d/%s forwards to %v, want %s", m.ListenerID, b.ContainerPort, proto, ts, target)
			}
		}
	}

	// tke-extend's switch off: isolated, targets gone, ports kept.
	setAnnotations(t, p, map[string]string{podannotation.TKEAnnotationEnableMapping: "false"})
	pa = state(t, ns, p.Name, v1alpha1.StateIsolated)
	if len(pa.Status.Bindings) != 2 {
		t.Fatalf("isolated: %d bindings, want the 2 kept", len(pa.Status.Bindings))
	}
	// Ours says NotReady; tke-extend's keep Ready and the result, as
	// tke-extend leaves them (OpenKruiseGame keeps the address).
	podAnnotation(t, p, podannotation.AnnotationStatus, podannotation.StatusNotReady)
	isolated := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(p), isolated); err != nil {
		t.Fatal(err)
	}
	if isolated.Annotations[podannotation.TKEAnnotationMappingStatus] != "Ready" ||
		isolated.Annotations[podannotation.TKEAnnotationMappingResult] != got.Annotations[podannotation.TKEAnnotationMappingResult] {
		t.Errorf("isolated: %s %q and result %s, want Ready and the result as it was", podannotation.TKEAnnotationMappingStatus,
			isolated.Annotations[podannotation.TKEAnnotationMappingStatus], isolated.Annotations[podannotation.TKEAnnotationMappingResult])
	}
	for _, b := range pa.Status.Bindings {
		for _, proto := range v1alpha1.ListenerProtocols(b.Protocol) {
			eventually(t, "targets of an isolated Pod deregistered", func() error {
				if ts := cloudTargets(lbID(l), b.ListenerIDs[proto]); len(ts) != 0 {
					return errors.Errorf("listener %s still forwards to %v", b.ListenerIDs[proto], ts)
				}
				return nil
			})
		}
	}
}

// TestTKEHostname: a Pod bound on a domain-based load balancer (created
// with DynamicVip, so DescribeLoadBalancers gives its Domain) is told, as
// tke-extend tells it, the hostname and "hostname:port", without ips.
func TestTKEHostname(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podannotation.TKEPoolNamespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	sdk := emulatortest.ConsoleClient(t, cloud.Endpoint(), emulator.DefaultRegion)
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.LoadBalancerName, req.DynamicVip = clb.Ptr("OPEN"), clb.Ptr("dyn-"+ns), clb.Ptr(true)
	var id string
	eventually(t, "a domain-based load balancer", func() error {
		resp, err := sdk.CreateLoadBalancer(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LoadBalancerIds[0]
		return nil
	})
	poolName := "pool-dyn-" + ns
	pool(t, podannotation.TKEPoolNamespace, poolName, nil, 30100, 30101, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ForProvider.LoadBalancerIDs = []string{id}
		pp.Spec.ForProvider.Protocols = []string{"UDP"}
		pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	})
	p := pod(t, ns, "gameserver-0", "10.26.0.3", map[string]string{
		podannotation.TKEAnnotationEnableMapping: "true",
		podannotation.TKEAnnotationPortMapping:   "8000 UDP " + poolName,
	}, corev1.ContainerPort{ContainerPort: 8000, Protocol: corev1.ProtocolUDP})
	pa := bound(t, ns, p.Name)
	inv, _ := cloud.Inventory().LoadBalancer(id)
	if inv.Domain == "" || len(pa.Status.Bindings) != 1 || pa.Status.Bindings[0].Hostname != inv.Domain {
		t.Fatalf("bindings %+v, want one with hostname %q", pa.Status.Bindings, inv.Domain)
	}
	podAnnotation(t, p, podannotation.TKEAnnotationMappingStatus, "Ready")
	got := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	var res []podannotation.TKEPortMapping
	if err := json.Unmarshal([]byte(got.Annotations[podannotation.TKEAnnotationMappingResult]), &res); err != nil {
		t.Fatal(err)
	}
	b := pa.Status.Bindings[0]
	want := fmt.Sprintf("%s:%d", inv.Domain, b.Port)
	if len(res) != 1 || res[0].Hostname != inv.Domain || res[0].Address != want || len(res[0].IPs) != 0 {
		t.Errorf("result %+v, want hostname %s, address %s and no ips", res, inv.Domain, want)
	}
}
