package function

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// ingressXR is a namespaced Ingress with the lbids annotation and spec.
func ingressXR(t *testing.T, lbids string, spec string) string {
	t.Helper()
	ann := map[string]string{}
	if lbids != "" {
		ann[AnnotationLBIDs] = lbids
	}
	a, err := json.Marshal(ann)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1", "kind": "Ingress",
 "metadata": {"name": "gs", "namespace": "game", "annotations": %s}, "spec": %s}`, a, spec)
}

func TestIngressRefusesBadInput(t *testing.T) {
	const tcp = `{"port": 80, "protocol": "TCP", "services": [{"serviceName": "a", "servicePort": 80}]}`
	cases := map[string]struct {
		lbids, spec, want string
	}{
		"no load balancer": {"", `{"rules": [` + tcp + `]}`, "set networkextension.bkbcs.tencent.com/lbids"},
		"a name in lbids":  {"my-lb", `{"rules": [` + tcp + `]}`, `"my-lb" is not a load balancer id`},
		"port conflict between rules": {"lb-1", `{"rules": [` + tcp + `, {"port": 80, "protocol": "HTTP", "layer7Routes": [{"domain": "a.com"}]}]}`,
			"spec.rules[1] (HTTP 80) conflicts with spec.rules[0] (TCP 80)"},
		"port conflict with a mapping": {"lb-1", `{"rules": [{"port": 30003, "protocol": "UDP", "services": [{"serviceName": "a", "servicePort": 80}]}],
			"portMappings": [{"startPort": 30000, "protocol": "UDP", "startIndex": 0, "endIndex": 2, "segmentLength": 5, "workloadKind": "StatefulSet", "workloadName": "gs"}]}`,
			"spec.portMappings[0] (UDP 30000-30009) conflicts with spec.rules[0] (UDP 30003)"},
		"endIndex not above startIndex": {"lb-1", `{"portMappings": [{"startPort": 30000, "protocol": "UDP", "startIndex": 3, "endIndex": 3, "workloadKind": "StatefulSet", "workloadName": "gs"}]}`,
			"spec.portMappings[0]: endIndex 3 must be greater than startIndex 3"},
		"HTTPS without certificate": {"lb-1", `{"rules": [{"port": 443, "protocol": "HTTPS", "layer7Routes": [{"domain": "a.com"}]}]}`,
			"spec.rules[0]: an HTTPS listener needs a certificate"},
		"unknown protocol": {"lb-1", `{"rules": [{"port": 80, "protocol": "SCTP"}]}`,
			`spec.rules[0].protocol "SCTP": want one of TCP, UDP, HTTP, HTTPS, TCP_SSL, QUIC`},
		"mutual without CA": {"lb-1", `{"rules": [{"port": 443, "protocol": "HTTPS", "certificate": {"mode": "MUTUAL", "certID": "c"}, "layer7Routes": [{"domain": "a.com"}]}]}`,
			"mode MUTUAL needs certCaID"},
		"services on an HTTP rule": {"lb-1", `{"rules": [{"port": 80, "protocol": "HTTP", "services": [{"serviceName": "a", "servicePort": 80}]}]}`,
			"put its services in layer7Routes[].services"},
		"mapping beyond 65535": {"lb-1", `{"portMappings": [{"startPort": 65530, "protocol": "TCP", "startIndex": 0, "endIndex": 3, "segmentLength": 5, "workloadKind": "StatefulSet", "workloadName": "gs"}]}`,
			"end at 65544, beyond 65535"},
		"hostPort on a port range": {"lb-1", `{"portMappings": [{"startPort": 30000, "protocol": "TCP", "startIndex": 0, "endIndex": 3, "segmentLength": 5, "hostPort": true, "workloadKind": "StatefulSet", "workloadName": "gs"}]}`,
			"needs ignoreSegment: true"},
		"unknown workload kind": {"lb-1", `{"portMappings": [{"startPort": 30000, "protocol": "TCP", "startIndex": 0, "endIndex": 3, "workloadKind": "Deployment", "workloadName": "gs"}]}`,
			`workloadKind "Deployment": want StatefulSet or GameStatefulSet`},
		"HTTPS mapping without routes": {"lb-1", `{"portMappings": [{"startPort": 30000, "protocol": "HTTPS", "certificate": {"certID": "c"}, "startIndex": 0, "endIndex": 3, "workloadKind": "StatefulSet", "workloadName": "gs"}]}`,
			"needs routes"},
		"weight above 100": {"lb-1", `{"rules": [{"port": 80, "protocol": "TCP", "services": [{"serviceName": "a", "servicePort": 80, "weight": {"value": 101}}]}]}`,
			"spec.rules[0].services[0].weight.value 101 is not within 0-100"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, ingressXR(t, tc.lbids, tc.spec), nil)
			msg := fatal(rsp)
			if !strings.HasPrefix(msg, "invalid Ingress: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("fatal result %q, want one saying %q", msg, tc.want)
			}
			if len(rsp.GetDesired().GetResources()) != 0 {
				t.Errorf("composed %d resources for an invalid Ingress", len(rsp.GetDesired().GetResources()))
			}
		})
	}
}

// listeners returns the composed listeners by metadata.name, and the
// target sets by the name of their listener or rule.
func ingressParts(t *testing.T, xr string) (map[string]*clbv1alpha1.Listener, map[string]*clbv1alpha1.TargetSet, map[string]*clbv1alpha1.Rule) {
	t.Helper()
	ls, tss, rs := map[string]*clbv1alpha1.Listener{}, map[string]*clbv1alpha1.TargetSet{}, map[string]*clbv1alpha1.Rule{}
	for _, d := range desired(t, run(t, xr, nil)) {
		switch d.Resource.GetKind() {
		case clbv1alpha1.ListenerKind:
			l := &clbv1alpha1.Listener{}
			as(t, d, l)
			ls[l.Name] = l
		case clbv1alpha1.TargetSetKind:
			ts := &clbv1alpha1.TargetSet{}
			as(t, d, ts)
			tss[ts.Name] = ts
		case clbv1alpha1.RuleKind:
			r := &clbv1alpha1.Rule{}
			as(t, d, r)
			rs[r.Name] = r
		}
	}
	return ls, tss, rs
}

// TestIngressPortMappings checks the ports of each Pod's listener and
// target: segments as port ranges, one listener per port with
// ignoreSegment, rsStartPort shifted per Pod or fixed, and ordinals from
// startIndex.
func TestIngressPortMappings(t *testing.T) {
	type lt struct {
		listener      string
		port, endPort int64
		pod           string
		podPort       int64
		backend       string
		domains       []string
	}
	cases := map[string]struct {
		mapping string
		want    []lt
	}{
		"quick start: segments of 2 from rsStartPort 80": {
			`{"startPort": 30000, "protocol": "TCP", "startIndex": 0, "endIndex": 3, "segmentLength": 2, "workloadKind": "StatefulSet", "workloadName": "nginx-sts", "rsStartPort": 80}`,
			[]lt{{"gs-lb-1-tcp-30000", 30000, 30001, "nginx-sts-0", 80, "PodIP", nil}, {"gs-lb-1-tcp-30002", 30002, 30003, "nginx-sts-1", 82, "PodIP", nil}, {"gs-lb-1-tcp-30004", 30004, 30005, "nginx-sts-2", 84, "PodIP", nil}},
		},
		"ordinals from startIndex, ports from startPort, target the listener port": {
			`{"startPort": 40000, "protocol": "udp", "startIndex": 2, "endIndex": 4, "workloadKind": "gamestatefulset", "workloadName": "gs"}`,
			[]lt{{"gs-lb-1-udp-40000", 40000, 0, "gs-2", 40000, "PodIP", nil}, {"gs-lb-1-udp-40001", 40001, 0, "gs-3", 40001, "PodIP", nil}},
		},
		"ignoreSegment, fixed rs ports, hostPort": {
			`{"startPort": 30000, "protocol": "TCP", "startIndex": 0, "endIndex": 2, "segmentLength": 2, "ignoreSegment": true, "isRsPortFixed": true, "rsStartPort": 7000, "hostPort": true, "workloadKind": "StatefulSet", "workloadName": "gs"}`,
			[]lt{{"gs-lb-1-tcp-30000", 30000, 0, "gs-0", 7000, "HostPort", nil}, {"gs-lb-1-tcp-30001", 30001, 0, "gs-0", 7001, "HostPort", nil},
				{"gs-lb-1-tcp-30002", 30002, 0, "gs-1", 7000, "HostPort", nil}, {"gs-lb-1-tcp-30003", 30003, 0, "gs-1", 7001, "HostPort", nil}},
		},
		"HTTPS one listener per Pod with its routes": {
			`{"startPort": 30000, "protocol": "HTTPS", "certificate": {"certID": "c"}, "startIndex": 0, "endIndex": 2, "workloadKind": "StatefulSet", "workloadName": "gs", "routes": [{"domain": "www.qq.com", "path": "/path2"}]}`,
			[]lt{{"gs-lb-1-https-30000", 30000, 0, "gs-0", 30000, "PodIP", []string{"www.qq.com/path2"}}, {"gs-lb-1-https-30001", 30001, 0, "gs-1", 30001, "PodIP", []string{"www.qq.com/path2"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ls, tss, rs := ingressParts(t, ingressXR(t, "lb-1", `{"portMappings": [`+tc.mapping+`]}`))
			if len(ls) != len(tc.want) {
				t.Fatalf("%d listeners %v, want %d", len(ls), keysOf(ls), len(tc.want))
			}
			for _, w := range tc.want {
				l, ok := ls[w.listener]
				if !ok {
					t.Fatalf("no listener %s in %v", w.listener, keysOf(ls))
				}
				if got := l.Spec.ForProvider; got.Port != w.port || deref(got.EndPort) != w.endPort || got.LoadBalancerIDRef.Name != "gs-lb-1" {
					t.Errorf("listener %s: port %d-%d on %v, want %d-%d on gs-lb-1", w.listener, got.Port, deref(got.EndPort), got.LoadBalancerIDRef, w.port, w.endPort)
				}
				// A layer-4 listener's targets share its name; a route's
				// its rule's.
				tsName := w.listener
				var domains []string
				for _, r := range rs {
					if r.Spec.ForProvider.ListenerIDRef.Name == w.listener {
						domains = append(domains, r.Spec.ForProvider.Domain+r.Spec.ForProvider.URL)
						tsName = r.Name
					}
				}
				if diff := cmp.Diff(w.domains, domains); diff != "" {
					t.Errorf("listener %s routes (-want +got):\n%s", w.listener, diff)
				}
				ts, ok := tss[tsName]
				if !ok {
					t.Fatalf("no target set %s", tsName)
				}
				want := []clbv1alpha1.PodBackend{{Name: w.pod, Port: w.podPort, Backend: w.backend}}
				if diff := cmp.Diff(want, ts.Spec.ForProvider.Source.Pods); diff != "" {
					t.Errorf("target set %s pods (-want +got):\n%s", tsName, diff)
				}
			}
		})
	}
}

// TestIngressServiceBackends checks how bcs's service fields land on the
// target source: the backend kind, weights (10 when unset) and subsets.
func TestIngressServiceBackends(t *testing.T) {
	spec := `{"rules": [{"port": 38080, "protocol": "TCP", "listenerAttribute": {"lbPolicy": "least_conn", "sessionTime": 100, "healthCheck": {"enabled": true, "intervalTime": 15}},
  "services": [
   {"serviceName": "svc1", "serviceNamespace": "default", "servicePort": 8080, "weight": {"value": 80}},
   {"serviceName": "svc2", "servicePort": 8080},
   {"serviceName": "direct", "servicePort": 28080, "isDirectConnect": true, "subsets": [{"labelSelector": {"version": "v2-1"}, "weight": {"value": 20}}, {"labelSelector": {"version": "v2-2"}}]},
   {"serviceName": "host", "servicePort": 28080, "isDirectConnect": true, "hostPort": true, "weight": {"value": 0}}]}]}`
	ls, tss, _ := ingressParts(t, ingressXR(t, "lb-1, ap-shanghai:lb-2", spec))
	for lb, wantRegion := range map[string]string{"lb-1": "", "ap-shanghai-lb-2": "ap-shanghai"} {
		l := ls["gs-"+lb+"-tcp-38080"]
		if l == nil {
			t.Fatalf("no listener on %s: %v", lb, keysOf(ls))
		}
		p := l.Spec.ForProvider
		if deref(p.Scheduler) != "LEAST_CONN" || deref(p.SessionExpireTime) != 100 || p.HealthCheck == nil || !*p.HealthCheck.Enabled || deref(p.HealthCheck.IntervalSeconds) != 15 {
			t.Errorf("listener attributes not mapped: %+v", p)
		}
		ts := tss["gs-"+lb+"-tcp-38080"]
		if ts == nil || ts.Spec.ForProvider.ListenerIDRef.Name != l.Name {
			t.Fatalf("no target set of listener %s", l.Name)
		}
		// Resources on a load balancer of another region name it.
		if deref(p.Region) != wantRegion || deref(ts.Spec.ForProvider.Region) != wantRegion {
			t.Errorf("on %s: listener region %q, target set region %q, want %q", lb, deref(p.Region), deref(ts.Spec.ForProvider.Region), wantRegion)
		}
		w := func(v int64) *int64 { return &v }
		want := []clbv1alpha1.ServiceBackend{
			{Name: "svc1", Namespace: "default", Port: intOrString(8080), Backend: "NodePort", Weight: w(80)},
			{Name: "svc2", Port: intOrString(8080), Backend: "NodePort", Weight: w(10)},
			{Name: "direct", Port: intOrString(28080), Backend: "PodIP", Weight: w(10), Subsets: []clbv1alpha1.WeightedSubset{
				{LabelSelector: map[string]string{"version": "v2-1"}, Weight: 20}, {LabelSelector: map[string]string{"version": "v2-2"}, Weight: 10}}},
			{Name: "host", Port: intOrString(28080), Backend: "HostPort", Weight: w(0)},
		}
		if diff := cmp.Diff(want, ts.Spec.ForProvider.Source.Services); diff != "" {
			t.Errorf("services on %s (-want +got):\n%s", lb, diff)
		}
	}
}

func TestIngressLoadBalancers(t *testing.T) {
	lbs, err := parseLoadBalancers(map[string]string{AnnotationLBIDs: "lb-1, ap-shanghai:lb-3", AnnotationLBNames: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if len(lbs) != 2 || lbs[0].id != "lb-1" || lbs[0].region != "" || lbs[1].id != "lb-3" || lbs[1].region != "ap-shanghai" || lbs[1].key != "ap-shanghai-lb-3" {
		t.Errorf("lbids parsed as %+v %+v", lbs[0], lbs[1])
	}
	// Names may hold what a resource name cannot; two that clean up alike
	// keep distinct keys.
	lbs, err = parseLoadBalancers(map[string]string{AnnotationLBNames: "My_LB,my-lb,ap-guangzhou:my.lb"})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, lb := range lbs {
		if lb.id != "" || lb.name == "" || keys[lb.key] || strings.Trim(lb.key, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			t.Errorf("name %q: key %q (keys so far %v)", lb.ref, lb.key, keys)
		}
		keys[lb.key] = true
	}
	if lbs[2].region != "ap-guangzhou" || lbs[2].name != "my.lb" {
		t.Errorf("region:name parsed as %+v", lbs[2])
	}
}

func TestObjectNameIsShortAndStable(t *testing.T) {
	long := strings.Repeat("a", 50)
	a, b := objectName(long, "ap-shanghai-lb-12345678", "tcp", "30000"), objectName(long, "ap-shanghai-lb-12345678", "tcp", "30001")
	if len(a) > maxNameLength || len(b) > maxNameLength || a == b {
		t.Errorf("names %q and %q: want distinct, at most %d characters", a, b, maxNameLength)
	}
	if a != objectName(long, "ap-shanghai-lb-12345678", "tcp", "30000") {
		t.Error("the same parts give another name")
	}
	if n := objectName("web", "lb-1", "tcp", "80"); n != "web-lb-1-tcp-80" {
		t.Errorf("a short name is %q, want it as it is", n)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func intOrString(v int32) intstr.IntOrString { return intstr.FromInt32(v) }
