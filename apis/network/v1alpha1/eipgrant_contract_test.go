package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

func grant(name string, mut func(*EIPGrantSpec)) EIPGrant {
	g := EIPGrant{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: EIPGrantSpec{
		ProviderConfigRef: xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
		Namespaces:        GrantNamespaces{Names: []string{"team-a"}},
		MaxBandwidth:      10, MaxEIPs: 5,
	}}
	if mut != nil {
		mut(&g.Spec)
	}
	return g
}

func TestEIPGrantCovers(t *testing.T) {
	sel := grant("sel", func(s *EIPGrantSpec) {
		s.Namespaces = GrantNamespaces{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"eips": "yes"}}}
	})
	all := grant("all", func(s *EIPGrantSpec) { s.Namespaces = GrantNamespaces{Selector: &metav1.LabelSelector{}} })
	none := grant("none", func(s *EIPGrantSpec) { s.Namespaces = GrantNamespaces{} })
	named := grant("named", nil)
	for _, tc := range []struct {
		g      EIPGrant
		ns     string
		labels map[string]string
		want   bool
	}{
		{named, "team-a", nil, true},
		{named, "team-b", nil, false},
		{sel, "team-b", map[string]string{"eips": "yes"}, true},
		{sel, "team-b", map[string]string{"eips": "no"}, false},
		{all, "anything", nil, true},
		{none, "team-a", map[string]string{"eips": "yes"}, false},
	} {
		if got := tc.g.Covers(tc.ns, tc.labels); got != tc.want {
			t.Errorf("%s covers %s %v = %v, want %v", tc.g.Name, tc.ns, tc.labels, got, tc.want)
		}
	}
}

func TestEIPGrantAdmits(t *testing.T) {
	g := grant("games", nil)
	for name, tc := range map[string]struct {
		req  *EIPRequest
		want string
	}{
		"defaults":           {req: &EIPRequest{}},
		"nil request":        {req: nil},
		"at the bandwidth":   {req: &EIPRequest{Bandwidth: ptr.To[int64](10)}},
		"over bandwidth":     {req: &EIPRequest{Bandwidth: ptr.To[int64](100000)}, want: "EIPGrant games: bandwidth 100000 Mbps is over its maxBandwidth 10"},
		"charge type":        {req: &EIPRequest{InternetChargeType: "BANDWIDTH_POSTPAID_BY_HOUR"}, want: "charge type BANDWIDTH_POSTPAID_BY_HOUR is not among its chargeTypes [TRAFFIC_POSTPAID_BY_HOUR]"},
		"ISP":                {req: &EIPRequest{ISP: "CMCC"}, want: "ISP CMCC is not among its isps [BGP]"},
		"release Never":      {req: &EIPRequest{ReleasePolicy: EIPReleaseNever}, want: "release policy Never is not among its releasePolicies [AfterKeepDuration]"},
		"same config":        {req: &EIPRequest{ProviderConfigRef: &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}}},
		"another config":     {req: &EIPRequest{ProviderConfigRef: &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "mine"}}, want: "the request names ProviderConfig mine, the grant allocates through ClusterProviderConfig default"},
		"everything at once": {req: &EIPRequest{Bandwidth: ptr.To[int64](11), ISP: "CTCC"}, want: "maxBandwidth 10; ISP CTCC"},
	} {
		err := g.Admits(tc.req)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want admitted", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	wide := grant("wide", func(s *EIPGrantSpec) {
		s.ChargeTypes, s.ISPs, s.ReleasePolicies = []string{"BANDWIDTH_POSTPAID_BY_HOUR"}, []string{"CMCC"}, []string{EIPReleaseNever}
	})
	if err := wide.Admits(&EIPRequest{InternetChargeType: "BANDWIDTH_POSTPAID_BY_HOUR", ISP: "CMCC", ReleasePolicy: EIPReleaseNever}); err != nil {
		t.Errorf("listed values: %v", err)
	}
	if err := wide.Admits(&EIPRequest{ISP: "CMCC", ReleasePolicy: EIPReleaseNever}); err == nil {
		t.Error("the default charge type was admitted by a grant that lists only another one")
	}
}

func TestChooseGrant(t *testing.T) {
	small := grant("a-small", nil)
	big := grant("b-big", func(s *EIPGrantSpec) { s.MaxBandwidth = 100 })
	other := grant("c-other", func(s *EIPGrantSpec) { s.Namespaces.Names = []string{"team-b"} })
	grants := []EIPGrant{other, big, small}
	for name, tc := range map[string]struct {
		ns   string
		req  *EIPRequest
		want string // grant, or the error's text
		err  bool
	}{
		"first by name":              {ns: "team-a", req: &EIPRequest{}, want: "a-small"},
		"first that admits":          {ns: "team-a", req: &EIPRequest{Bandwidth: ptr.To[int64](50)}, want: "b-big"},
		"named":                      {ns: "team-a", req: &EIPRequest{Grant: "b-big"}, want: "b-big"},
		"named, over its limit":      {ns: "team-a", req: &EIPRequest{Grant: "a-small", Bandwidth: ptr.To[int64](50)}, err: true, want: "refused: EIPGrant a-small: bandwidth 50 Mbps is over its maxBandwidth 10"},
		"named, not covering":        {ns: "team-a", req: &EIPRequest{Grant: "c-other"}, err: true, want: "EIPGrant c-other does not cover namespace team-a"},
		"named, missing":             {ns: "team-a", req: &EIPRequest{Grant: "nope"}, err: true, want: "no EIPGrant nope"},
		"none covers":                {ns: "team-z", req: &EIPRequest{}, err: true, want: "no EIPGrant covers namespace team-z"},
		"every covering one refuses": {ns: "team-a", req: &EIPRequest{Bandwidth: ptr.To[int64](1000)}, err: true, want: "EIPGrant a-small: bandwidth 1000 Mbps is over its maxBandwidth 10; EIPGrant b-big: bandwidth 1000 Mbps is over its maxBandwidth 100"},
	} {
		g, err := ChooseGrant(grants, tc.ns, nil, tc.req)
		switch {
		case tc.err && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want error %q", name, err, tc.want)
		case !tc.err && (err != nil || g.Name != tc.want):
			t.Errorf("%s: %v %v, want %s", name, g, err, tc.want)
		}
	}
}
