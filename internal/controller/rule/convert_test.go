package rule

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

// cloudRule is a rule as DescribeListeners reports it with the cloud's
// defaults.
func cloudRule(mods ...func(*clbsdk.RuleOutput)) *clbsdk.RuleOutput {
	r := &clbsdk.RuleOutput{
		LocationId:        clb.Ptr("loc-1"),
		Domain:            clb.Ptr("www.example.com"),
		Url:               clb.Ptr("/"),
		Scheduler:         clb.Ptr("WRR"),
		SessionExpireTime: clb.Ptr(int64(0)),
		ForwardType:       clb.Ptr("HTTP"),
		HealthCheck: &clbsdk.HealthCheck{
			HealthSwitch: clb.Ptr(int64(1)), TimeOut: clb.Ptr(int64(2)), IntervalTime: clb.Ptr(int64(5)),
			HealthNum: clb.Ptr(int64(3)), UnHealthNum: clb.Ptr(int64(3)), HttpCheckPath: clb.Ptr("/"),
		},
	}
	for _, m := range mods {
		m(r)
	}
	return r
}

func TestDiff(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      v1alpha1.RuleParameters
		r      *clbsdk.RuleOutput
		want   string
	}{
		"UpToDate": {
			reason: "A spec that sets only domain and url matches the cloud's defaults.",
			p:      v1alpha1.RuleParameters{Domain: "www.example.com", URL: "/"},
			r:      cloudRule(),
			want:   "",
		},
		"AllFieldsMatch": {
			reason: "Every mutable field set to the cloud's value is up to date.",
			p: v1alpha1.RuleParameters{
				Domain: "www.example.com", URL: "/", Scheduler: clb.Ptr("WRR"), SessionExpireTime: clb.Ptr(int64(0)),
				ForwardType: clb.Ptr("HTTP"),
				HealthCheck: &v1alpha1.HealthCheck{Enabled: clb.Ptr(true), IntervalSeconds: clb.Ptr(int64(5)), HTTPCheckPath: clb.Ptr("/")},
			},
			r:    cloudRule(),
			want: "",
		},
		"URL": {
			reason: "A changed url is drift.",
			p:      v1alpha1.RuleParameters{Domain: "www.example.com", URL: "/api"},
			r:      cloudRule(),
			want:   "url: want /api, got /",
		},
		"SchedulerAndSession": {
			reason: "Scheduler and session persistence are compared when set.",
			p: v1alpha1.RuleParameters{Domain: "www.example.com", URL: "/", Scheduler: clb.Ptr("IP_HASH"),
				SessionExpireTime: clb.Ptr(int64(60))},
			r:    cloudRule(),
			want: "scheduler: want IP_HASH, got WRR; sessionExpireTime: want 60, got 0",
		},
		"ForwardType": {
			reason: "The protocol towards targets is compared when set.",
			p:      v1alpha1.RuleParameters{Domain: "www.example.com", URL: "/", ForwardType: clb.Ptr("GRPC")},
			r:      cloudRule(),
			want:   "forwardType: want GRPC, got HTTP",
		},
		"HealthCheck": {
			reason: "Health check fields are compared one by one.",
			p: v1alpha1.RuleParameters{Domain: "www.example.com", URL: "/", HealthCheck: &v1alpha1.HealthCheck{
				Enabled: clb.Ptr(false), HTTPCheckPath: clb.Ptr("/healthz"),
			}},
			r:    cloudRule(),
			want: "healthCheck.enabled: want false, got true; healthCheck.httpCheckPath: want /healthz, got /",
		},
		"CloudReportsNothing": {
			reason: "Fields the cloud leaves out compare against their zero value.",
			p:      v1alpha1.RuleParameters{Domain: "www.example.com", URL: "/", Scheduler: clb.Ptr("WRR")},
			r:      &clbsdk.RuleOutput{LocationId: clb.Ptr("loc-1"), Url: clb.Ptr("/")},
			want:   "scheduler: want WRR, got ",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, clb.DiffRule(tc.p, tc.r)); d != "" {
				t.Errorf("%s\ndiff(...): -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func TestLateInitialize(t *testing.T) {
	cases := map[string]struct {
		reason  string
		p       v1alpha1.RuleParameters
		r       *clbsdk.RuleOutput
		want    v1alpha1.RuleParameters
		changed bool
	}{
		"FillsUnset": {
			reason: "Unset fields take the cloud's values.",
			p:      v1alpha1.RuleParameters{Domain: "www.example.com", URL: "/"},
			r:      cloudRule(),
			want: v1alpha1.RuleParameters{
				Domain: "www.example.com", URL: "/", Scheduler: clb.Ptr("WRR"), SessionExpireTime: clb.Ptr(int64(0)),
				ForwardType: clb.Ptr("HTTP"),
				HealthCheck: &v1alpha1.HealthCheck{
					Enabled: clb.Ptr(true), TimeoutSeconds: clb.Ptr(int64(2)), IntervalSeconds: clb.Ptr(int64(5)),
					HealthyThreshold: clb.Ptr(int64(3)), UnhealthyThreshold: clb.Ptr(int64(3)),
				},
			},
			changed: true,
		},
		"NeverOverwrites": {
			reason: "Fields the user set keep their values, even when the cloud differs.",
			p: v1alpha1.RuleParameters{
				Domain: "www.example.com", URL: "/", Scheduler: clb.Ptr("IP_HASH"), SessionExpireTime: clb.Ptr(int64(60)),
				ForwardType: clb.Ptr("GRPC"), HealthCheck: &v1alpha1.HealthCheck{Enabled: clb.Ptr(false)},
			},
			r: cloudRule(),
			want: v1alpha1.RuleParameters{
				Domain: "www.example.com", URL: "/", Scheduler: clb.Ptr("IP_HASH"), SessionExpireTime: clb.Ptr(int64(60)),
				ForwardType: clb.Ptr("GRPC"), HealthCheck: &v1alpha1.HealthCheck{Enabled: clb.Ptr(false)},
			},
			changed: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.p
			changed := clb.LateInitRule(&got, tc.r)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s\nlateInitialize(...): -want, +got:\n%s", tc.reason, d)
			}
			if changed != tc.changed {
				t.Errorf("%s\nlateInitialize(...) = %v, want %v", tc.reason, changed, tc.changed)
			}
		})
	}
}

func TestModifyRequest(t *testing.T) {
	p := v1alpha1.RuleParameters{Domain: "www.example.com", URL: "/api", Scheduler: clb.Ptr("LEAST_CONN")}
	got := clb.ModifyRuleRequest("lb-1", "lbl-1", "loc-1", p)
	want := clbsdk.NewModifyRuleRequest()
	want.LoadBalancerId, want.ListenerId, want.LocationId = clb.Ptr("lb-1"), clb.Ptr("lbl-1"), clb.Ptr("loc-1")
	want.Url, want.Scheduler = clb.Ptr("/api"), clb.Ptr("LEAST_CONN")
	if d := cmp.Diff(want.ToJsonString(), got.ToJsonString()); d != "" {
		t.Errorf("clb.ModifyRuleRequest(...): -want, +got:\n%s", d)
	}
}
