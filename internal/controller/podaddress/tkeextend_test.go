package podaddress

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// tkeSwitchPool is PortPool tke-port-pools/pool-a as its controller sees
// a cluster tke-extend bound: on lb-1, tke-extend's listener of port 100
// (lbl-100) forwards to the Pod alone, listed in a dry run, taken over
// (inherited: no binding records it yet) once switched; port 101 has the
// pool's own listener.
func tkeSwitchPool(annotations map[string]string) *clbv1alpha1.PortPool {
	pp := portPool()
	pp.Namespace, pp.Name, pp.Annotations = podannotation.TKEPoolNamespace, "pool-a", annotations
	pp.Spec.Consumers = &clbv1alpha1.PoolConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}}
	lb := &pp.Status.AtProvider.LoadBalancers[0]
	lb.State = clbv1alpha1.PoolLBCreating
	l := []clbv1alpha1.TKEListener{{Key: "TCP/100", ID: listenerOf(100), Targets: []string{podIP + ":80"}}}
	if clbv1alpha1.TakesOverAllTKE(pp) {
		lb.Listeners["TCP/100"], lb.Adopted, lb.Inherited = listenerOf(100), map[string]string{"TCP/100": listenerOf(100)}, l
		return pp
	}
	delete(lb.Listeners, "TCP/100")
	lb.TKEListeners = l
	return pp
}

// tkeBoundPod is a Pod tke-extend bound on lb-1:100 (listener lbl-100),
// its result naming target ip.
func tkeBoundPod(t *testing.T, ip string) []string {
	t.Helper()
	v, err := json.Marshal([]podannotation.TKEPortMapping{{Port: 80, Protocol: "TCP", Pool: "pool-a", Region: "ap-guangzhou",
		LoadbalancerID: lb1, LoadbalancerPort: 100, ListenerID: listenerOf(100), IPs: []string{vip}, Address: vip + ":100"}})
	if err != nil {
		t.Fatal(err)
	}
	return []string{podannotation.TKEAnnotationEnableMapping, "true", podannotation.TKEAnnotationPortMapping, "80 TCP pool-a",
		podannotation.TKEAnnotationMappingResult, string(v), podannotation.TKEAnnotationMappingStatus, podannotation.StatusReady}
}

// TestKeepTKEAddress: a Pod tke-extend bound keeps its slot and listener,
// recorded with its target in the PodAddress's create and no registration
// sent; its result annotation is written back unchanged. A Pod whose
// result names a listener that does not forward to it alone gets another
// port, registered as any, and a Warning. In a dry run nothing is written:
// no PodAddress, no cloud call, an Event saying what would be kept.
func TestKeepTKEAddress(t *testing.T) {
	cases := map[string]struct {
		reason   string
		ip       string
		pool     map[string]string
		port     int32
		register bool
		event    string
		dryRun   bool
	}{
		"Kept": {
			reason: "The result names tke-extend's listener whose only target is the Pod.",
			ip:     podIP, port: 100, event: "Normal TKEExtendAddressKept",
		},
		"NotKept": {
			reason: "The result names a listener that forwards to another Pod: refused, a new port.",
			ip:     "10.0.0.77", port: 101, register: true, event: "Warning TKEExtendAddressNotKept",
		},
		"DryRun": {
			reason: "In a dry run the Pod is told what would be kept and nothing is written.",
			ip:     podIP, pool: map[string]string{clbv1alpha1.AnnotationTKESwitch: clbv1alpha1.TKESwitchDryRun},
			event: "Normal TKEExtendSwitchDryRun", dryRun: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tkePod(tc.ip, tkeBoundPod(t, podIP)[4:]...)
			p.Annotations[podannotation.TKEAnnotationPortMapping] = "80 TCP pool-a"
			p.Status.HostIP = "10.1.0.1" // running on its node, as every Pod tke-extend bound
			before := p.Annotations[podannotation.TKEAnnotationMappingResult]
			w := newWorld(t, nil, p, tkeSwitchPool(tc.pool))
			if _, err := w.reconcile(t); err != nil {
				t.Fatal(err)
			}
			events := strings.Join(w.events.take(), "; ")
			if !strings.Contains(events, tc.event) {
				t.Errorf("%s\nevents %q, want %s", tc.reason, events, tc.event)
			}
			registered := slices.ContainsFunc(w.cloud.Log(), func(s string) bool { return strings.Contains(s, "Register") })
			if tc.dryRun {
				if pa := w.podAddress(t); pa != nil || len(w.cloud.Log()) > 0 {
					t.Errorf("%s\nthe dry run wrote a PodAddress %v or to the cloud %v", tc.reason, pa != nil, w.cloud.Log())
				}
				return
			}
			pa := w.podAddress(t)
			if pa == nil || pa.Status.State != v1alpha1.StateBound || len(pa.Status.Bindings) != 1 {
				t.Fatalf("%s\nPodAddress %+v, want Bound with one binding", tc.reason, pa)
			}
			b := pa.Status.Bindings[0]
			if b.LoadBalancerID != lb1 || b.Port != tc.port || b.ListenerIDs["TCP"] != listenerOf(tc.port) || b.TargetIP != tc.ip {
				t.Errorf("%s\nbinding %+v, want %s:%d on %s to %s", tc.reason, b, lb1, tc.port, listenerOf(tc.port), tc.ip)
			}
			if registered != tc.register {
				t.Errorf("%s\ncloud writes %v, want a registration: %v", tc.reason, w.cloud.Log(), tc.register)
			}
			if tc.register {
				return
			}
			now := &corev1.Pod{}
			if err := w.kube.Get(context.Background(), key, now); err != nil {
				t.Fatal(err)
			}
			if got := now.Annotations[podannotation.TKEAnnotationMappingResult]; got != before {
				t.Errorf("%s\nresult rewritten:\n%s\nwas\n%s", tc.reason, got, before)
			}
		})
	}
}

// TestDryRunWritesNothing: every Pod that names a pool in a dry run of
// the switch is left unwritten, whatever it asks: with no tke-extend
// result (no PodAddress, also at admission), with an invalid request (no
// condition on the Pod, the dry-run Event saying what would be reported),
// and before the pool's PortPool is made (its CLBPortPool asks for the dry
// run). Without the dry run the invalid request is reported on the Pod.
func TestDryRunWritesNothing(t *testing.T) {
	dry := map[string]string{clbv1alpha1.AnnotationTKESwitch: clbv1alpha1.TKESwitchDryRun}
	cases := map[string]struct {
		reason    string
		lines     string
		pool      map[string]string // the PortPool's annotations; nil: no PortPool
		clb       map[string]string // the CLBPortPool's annotations; nil: no CLBPortPool
		event     string
		condition bool
	}{
		"NoResult": {
			reason: "A Pod of a pool in dry run with no tke-extend result gets no PodAddress, and an Event saying it would get a new address.",
			lines:  "80 TCP pool-a", pool: dry, event: "Normal TKEExtendSwitchDryRun",
		},
		"Invalid": {
			reason: "An invalid request naming a pool in dry run is told by the dry-run Event only.",
			lines:  "80 TCP pool-a bogus", pool: dry, event: "Normal TKEExtendSwitchDryRun",
		},
		"PoolNotMadeYet": {
			reason: "Before its PortPool is made, the CLBPortPool's dry run holds the Pod.",
			lines:  "80 TCP pool-a", clb: dry,
		},
		"InvalidNotDryRun": {
			reason: "Without a dry run the invalid request is reported on the Pod.",
			lines:  "80 TCP pool-a bogus", pool: map[string]string{}, event: "Warning InvalidAddressRequest", condition: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tkePod(podIP)
			p.Annotations[podannotation.TKEAnnotationPortMapping] = tc.lines
			p.Status.HostIP = "10.1.0.1"
			objs := []client.Object{p}
			if tc.pool != nil {
				objs = append(objs, tkeSwitchPool(tc.pool))
			}
			if tc.clb != nil {
				objs = append(objs, &tkev1alpha1.CLBPortPool{ObjectMeta: metav1.ObjectMeta{Name: "pool-a", Annotations: tc.clb}})
			}
			w := newWorld(t, nil, objs...)
			before := &corev1.Pod{}
			if err := w.kube.Get(context.Background(), key, before); err != nil {
				t.Fatal(err)
			}
			if _, err := w.reconcile(t); err != nil {
				t.Fatal(err)
			}
			if tc.event != "" {
				if events := strings.Join(w.events.take(), "; "); !strings.Contains(events, tc.event) {
					t.Errorf("%s\nevents %q, want %s", tc.reason, events, tc.event)
				}
			}
			now := &corev1.Pod{}
			if err := w.kube.Get(context.Background(), key, now); err != nil {
				t.Fatal(err)
			}
			if tc.condition {
				if podCondition(now, conditionAddressReady) == nil {
					t.Errorf("%s\nno address condition on the Pod", tc.reason)
				}
				return
			}
			if now.ResourceVersion != before.ResourceVersion {
				t.Errorf("%s\nthe dry run wrote the Pod: conditions %+v, annotations %v", tc.reason, now.Status.Conditions, now.Annotations)
			}
			if bs, _ := w.r.AllocateAtAdmission(context.Background(), now, now.CreationTimestamp.Add(2*time.Hour)); len(bs) > 0 {
				t.Errorf("%s\nadmission allocated %v", tc.reason, bs)
			}
			if pa := w.podAddress(t); pa != nil || len(w.cloud.Log()) > 0 {
				t.Errorf("%s\nthe dry run wrote a PodAddress %v or to the cloud %v", tc.reason, pa != nil, w.cloud.Log())
			}
		})
	}
}
