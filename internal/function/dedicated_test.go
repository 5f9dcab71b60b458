package function

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

func TestDedicatedCLBServiceMapping(t *testing.T) {
	cases := map[string]struct {
		in           DedicatedCLBServiceSpec
		wantRange    PortRange
		wantRegion   string
		wantExisting []string
		wantAuto     bool
		wantWarnings []string
	}{
		"defaults": {
			in:        DedicatedCLBServiceSpec{Selector: map[string]string{"app": "gs"}, Ports: []DedicatedCLBServicePort{{Protocol: "TCP", TargetPort: 9000}}, ExistedLbIDs: []string{"lb-1"}},
			wantRange: PortRange{Start: 500, End: 50000}, wantExisting: []string{"lb-1"},
		},
		"maxPod cuts the range: two ports per Pod": {
			in: DedicatedCLBServiceSpec{Selector: map[string]string{"app": "gs"}, MinPort: ptr(int64(501)), MaxPort: ptr(int64(600)), MaxPod: ptr(int64(10)),
				Ports: []DedicatedCLBServicePort{{Protocol: "TCP", TargetPort: 9000}, {Protocol: "UDP", TargetPort: 8000}}, LbRegion: "ap-chengdu", ExistedLbIDs: []string{"lb-1"}},
			wantRange: PortRange{Start: 501, End: 520}, wantRegion: "ap-chengdu", wantExisting: []string{"lb-1"},
		},
		"maxPod above the range keeps maxPort": {
			in:        DedicatedCLBServiceSpec{Selector: map[string]string{"app": "gs"}, MinPort: ptr(int64(501)), MaxPort: ptr(int64(600)), MaxPod: ptr(int64(1000)), Ports: []DedicatedCLBServicePort{{Protocol: "TCP", TargetPort: 9000}}, ExistedLbIDs: []string{"lb-1"}},
			wantRange: PortRange{Start: 501, End: 600}, wantExisting: []string{"lb-1"},
		},
		"auto create with unsupported parameters": {
			in: DedicatedCLBServiceSpec{Selector: map[string]string{"app": "gs"}, Ports: []DedicatedCLBServicePort{{Protocol: "UDP", TargetPort: 5000}},
				ListenerExtensiveParameters: `{"Scheduler":"WRR","DeregisterTargetRst":true,"HealthCheck":{"HealthSwitch":0,"SourceIpType":1}}`,
				LbAutoCreate:                &LbAutoCreate{Enable: true, ExtensiveParameters: `{"VipIsp":"CTCC","ZoneId":"ap-x-1","InternetAccessible":{"InternetMaxBandwidthOut":10,"BandwidthpkgSubType":"SINGLEISP"}}`}},
			wantRange: PortRange{Start: 500, End: 50000}, wantAuto: true,
			wantWarnings: []string{
				"spec.listenerExtensiveParameters: DeregisterTargetRst, HealthCheck.SourceIpType not supported, ignored",
				"spec.lbAutoCreate.extensiveParameters: ZoneId, InternetAccessible.BandwidthpkgSubType not supported, ignored",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, ws, err := fromDedicated(&tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if s.PortRange != tc.wantRange || s.Region != tc.wantRegion {
				t.Errorf("range %+v region %q, want %+v %q", s.PortRange, s.Region, tc.wantRange, tc.wantRegion)
			}
			if diff := cmp.Diff(tc.wantExisting, s.LoadBalancers.ExistingIDs); diff != "" {
				t.Errorf("existing ids (-want +got):\n%s", diff)
			}
			if (s.LoadBalancers.AutoCreate != nil) != tc.wantAuto {
				t.Errorf("autoCreate %+v, want %v", s.LoadBalancers.AutoCreate, tc.wantAuto)
			}
			if diff := cmp.Diff(tc.wantWarnings, ws); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if s.Selector.MatchLabels["app"] != "gs" || len(s.Ports) != len(tc.in.Ports) {
				t.Errorf("selector or ports not mapped: %+v", s)
			}
			for i, p := range tc.in.Ports {
				if s.Ports[i].Port.IntValue() != int(p.TargetPort) || s.Ports[i].Protocol != p.Protocol || s.Ports[i].AddressAnnotation != p.AddressPodAnnotation {
					t.Errorf("port %d: %+v from %+v", i, s.Ports[i], p)
				}
			}
		})
	}
}

func TestDedicatedCLBServiceParameters(t *testing.T) {
	s, _, err := fromDedicated(&DedicatedCLBServiceSpec{
		Selector: map[string]string{"app": "gs"}, Ports: []DedicatedCLBServicePort{{Protocol: "UDP", TargetPort: 5000, AddressPodAnnotation: "a/b"}},
		ListenerExtensiveParameters: `{"SessionExpireTime":30,"HealthCheck":{"HealthSwitch":1,"IntervalTime":5,"CheckType":"TCP"}}`,
		LbAutoCreate: &LbAutoCreate{Enable: true, ExtensiveParameters: `{"LoadBalancerType":"INTERNAL","VpcId":"vpc-1","SubnetId":"subnet-1",` +
			`"InternetAccessible":{"InternetChargeType":"TRAFFIC_POSTPAID_BY_HOUR","InternetMaxBandwidthOut":100},"Tags":[{"TagKey":"team","TagValue":"meeting"}]}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantListener := &clbv1alpha1.PoolListenerSettings{SessionExpireTime: ptr(int64(30)),
		HealthCheck: &clbv1alpha1.HealthCheck{Enabled: ptr(true), IntervalSeconds: ptr(int64(5)), CheckType: ptr("TCP")}}
	if diff := cmp.Diff(wantListener, s.Listener); diff != "" {
		t.Errorf("listener (-want +got):\n%s", diff)
	}
	wantTemplate := &clbv1alpha1.LoadBalancerParameters{Type: ptr("INTERNAL"), VpcID: ptr("vpc-1"), SubnetID: ptr("subnet-1"),
		InternetAccessible: &clbv1alpha1.InternetAccessible{InternetChargeType: ptr("TRAFFIC_POSTPAID_BY_HOUR"), InternetMaxBandwidthOut: ptr(int64(100))},
		Tags:               map[string]string{"team": "meeting"}}
	if diff := cmp.Diff(wantTemplate, s.LoadBalancers.Template); diff != "" {
		t.Errorf("template (-want +got):\n%s", diff)
	}
	if s.LoadBalancers.AutoCreate.MaxLoadBalancers != dedicatedMaxAutoCreated {
		t.Errorf("autoCreate bound %d", s.LoadBalancers.AutoCreate.MaxLoadBalancers)
	}
}

func TestDedicatedCLBServiceErrors(t *testing.T) {
	ok := DedicatedCLBServiceSpec{Selector: map[string]string{"app": "gs"}, Ports: []DedicatedCLBServicePort{{Protocol: "TCP", TargetPort: 9000}}, ExistedLbIDs: []string{"lb-1"}}
	cases := map[string]struct {
		mutate func(*DedicatedCLBServiceSpec)
		want   string
	}{
		"empty selector":  {func(s *DedicatedCLBServiceSpec) { s.Selector = nil }, "spec.selector"},
		"listener params": {func(s *DedicatedCLBServiceSpec) { s.ListenerExtensiveParameters = "{" }, "spec.listenerExtensiveParameters"},
		"load balancer params": {func(s *DedicatedCLBServiceSpec) {
			s.LbAutoCreate = &LbAutoCreate{Enable: true, ExtensiveParameters: "[]"}
		}, "spec.lbAutoCreate.extensiveParameters"},
		"maxPod zero": {func(s *DedicatedCLBServiceSpec) { s.MaxPod = ptr(int64(0)) }, "spec.maxPod"},
		"port zero":   {func(s *DedicatedCLBServiceSpec) { s.Ports[0].TargetPort = 0 }, "targetPort"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := ok
			in.Ports = append([]DedicatedCLBServicePort(nil), ok.Ports...)
			tc.mutate(&in)
			if _, _, err := fromDedicated(&in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one about %s", err, tc.want)
			}
		})
	}
}

func TestDedicatedCLBServiceWarningsReachTheClaim(t *testing.T) {
	xr := `{"apiVersion": "claims.workload.tencentcloud.crossplane.io/v1alpha1", "kind": "XDedicatedCLBService",
	 "metadata": {"name": "meeting-abcde", "labels": {"crossplane.io/claim-namespace": "demo"}},
	 "spec": {"selector": {"app": "meeting"}, "ports": [{"protocol": "UDP", "targetPort": 5000}],
	  "lbAutoCreate": {"enable": true, "extensiveParameters": "{\"Number\": 3}"}}}`
	rsp := run(t, xr, nil)
	d := desired(t, rsp)
	if d[namePolicy].Resource.GetNamespace() != "demo" {
		t.Errorf("namespace %q, want the claim's (from the claim-namespace label)", d[namePolicy].Resource.GetNamespace())
	}
	var found bool
	for _, r := range rsp.GetResults() {
		if strings.Contains(r.GetMessage(), "Number not supported") {
			found = r.GetTarget() == fnv1.Target_TARGET_COMPOSITE_AND_CLAIM
		}
	}
	if !found {
		t.Errorf("want a warning about Number for the composite and the claim, got %v", rsp.GetResults())
	}
}
