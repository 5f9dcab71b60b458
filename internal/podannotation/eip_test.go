package podannotation

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func TestParseEIP(t *testing.T) {
	eip := func(syntax string, e v1alpha1.EIPRequest, mods ...func(*Request)) *Request {
		r := request(syntax)
		r.Ports = nil
		r.EIP = &e
		for _, m := range mods {
			m(r)
		}
		return r
	}
	cases := map[string]struct {
		a    map[string]string
		want *Request
		err  string
	}{
		"defaults": {a: map[string]string{AnnotationEIP: " TRUE "}, want: eip(SyntaxNative, v1alpha1.EIPRequest{})},
		"every key, any separator, any case": {
			a: map[string]string{AnnotationEIP: "isp=ctcc, bandwidth=20;chargeType=bandwidth_postpaid_by_hour releasePolicy=never fallbackPool=ops/rooms providerConfig=team-a grant=games"},
			want: eip(SyntaxNative, v1alpha1.EIPRequest{
				ISP: "CTCC", Bandwidth: ptr.To[int64](20), InternetChargeType: "BANDWIDTH_POSTPAID_BY_HOUR", ReleasePolicy: v1alpha1.EIPReleaseNever,
				FallbackPool: &v1alpha1.PoolRef{Namespace: "ops", Name: "rooms"}, ProviderConfigRef: &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}, Grant: "games",
			}),
		},
		"with our options": {
			a: map[string]string{AnnotationEIP: "fallbackPool=rooms", AnnotationKeepDuration: "10m", AnnotationReadinessGate: "true"},
			want: eip(SyntaxNative, v1alpha1.EIPRequest{FallbackPool: &v1alpha1.PoolRef{Name: "rooms"}}, func(r *Request) {
				r.KeepDuration, r.ReadinessGate = &metav1.Duration{Duration: 10 * time.Minute}, true
			}),
		},
		"TKE": {
			a:    map[string]string{TKEAnnotationEIPAttributes: `{"InternetMaxBandwidthOut":"50","InternetChargeType":"TRAFFIC_POSTPAID_BY_HOUR","InternetServiceProvider":"BGP"}`, TKEAnnotationEIPClaimDeletePolicy: "Never"},
			want: eip(SyntaxTKE, v1alpha1.EIPRequest{ISP: "BGP", Bandwidth: ptr.To[int64](50), InternetChargeType: "TRAFFIC_POSTPAID_BY_HOUR", ReleasePolicy: v1alpha1.EIPReleaseNever}),
		},
		"TKE number, empty object": {a: map[string]string{TKEAnnotationEIPAttributes: `{}`}, want: eip(SyntaxTKE, v1alpha1.EIPRequest{})},
		"ports and EIP":            {a: map[string]string{AnnotationEIP: "true", AnnotationPorts: "80 pool"}, err: "ask for one of them"},
		"bcs and TKE EIP":          {a: map[string]string{TKEAnnotationEIPAttributes: "{}", BCSAnnotationEnabled: "true", BCSAnnotationPorts: "p TCP 80"}, err: "ask for one of them"},
		"both EIP syntaxes":        {a: map[string]string{TKEAnnotationEIPAttributes: "{}", AnnotationEIP: "true"}, err: "use one syntax"},
		"empty":                    {a: map[string]string{AnnotationEIP: " "}, err: `want "true" or key=value items`},
		"no value":                 {a: map[string]string{AnnotationEIP: "isp="}, err: `item "isp=": want key=value`},
		"unknown key":              {a: map[string]string{AnnotationEIP: "speed=10"}, err: `unknown key "speed"`},
		"bad ISP":                  {a: map[string]string{AnnotationEIP: "isp=CMNET"}, err: "must be one of BGP, CMCC, CTCC, CUCC"},
		"bandwidth 0":              {a: map[string]string{AnnotationEIP: "bandwidth=0"}, err: "want Mbps, 1-100000"},
		"bad grant":                {a: map[string]string{AnnotationEIP: "grant=Games!"}, err: "invalid EIPGrant name"},
		"bad pool":                 {a: map[string]string{AnnotationEIP: "fallbackPool=/x"}, err: "empty namespace"},
		"TKE bad JSON":             {a: map[string]string{TKEAnnotationEIPAttributes: "bandwidth=5"}, err: "want a JSON object"},
		"TKE bad policy":           {a: map[string]string{TKEAnnotationEIPAttributes: "{}", TKEAnnotationEIPClaimDeletePolicy: "Always"}, err: `only "Never" is known`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, asked, err := Parse(pod(tc.a))
			if !asked {
				t.Fatal("not asked")
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
		})
	}
}

func TestEIPResultAnnotations(t *testing.T) {
	got := EIPResultAnnotations("eip-1a2b3c4d", "1.2.3.4", "BGP", true)
	want := map[string]string{AnnotationAddresses: `[{"addressId":"eip-1a2b3c4d","address":"1.2.3.4","isp":"BGP"}]`, AnnotationStatus: StatusReady}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	if got := EIPResultAnnotations("eip-1a2b3c4d", "", "", false); got[AnnotationAddresses] != "[]" || got[AnnotationStatus] != StatusNotReady {
		t.Errorf("before an address: %v", got)
	}
}
