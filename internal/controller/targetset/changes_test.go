package targetset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

func eni(ip string, port int64, weight ...int64) v1alpha1.Target {
	t := v1alpha1.Target{IP: ip, Port: port}
	if len(weight) > 0 {
		t.Weight = clb.Ptr(weight[0])
	}
	return t
}

func seen(ip string, port, weight int64) v1alpha1.TargetObservation {
	return v1alpha1.TargetObservation{IP: ip, Port: port, Weight: weight}
}

func TestPlan(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   []v1alpha1.Target
		cloud  []v1alpha1.TargetObservation
		want   changes
		diff   string
	}{
		"Empty": {
			reason: "No targets anywhere is up to date.",
			want:   changes{},
		},
		"UpToDate": {
			reason: "Same keys and weights, in any order, with an unset weight meaning 10.",
			spec:   []v1alpha1.Target{eni("10.0.0.2", 80, 20), eni("10.0.0.1", 80)},
			cloud:  []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10), seen("10.0.0.2", 80, 20)},
			want:   changes{},
		},
		"RegisterAll": {
			reason: "Every target of an empty listener is registered with its weight.",
			spec:   []v1alpha1.Target{eni("10.0.0.2", 80, 0), eni("10.0.0.1", 80)},
			want: changes{Register: []change{
				{Key: key{IP: "10.0.0.1", Port: 80}, Weight: 10},
				{Key: key{IP: "10.0.0.2", Port: 80}, Weight: 0},
			}},
			diff: "register 10.0.0.1:80 (weight 10); register 10.0.0.2:80 (weight 0)",
		},
		"OnlyTheDifference": {
			reason: "One new, one gone, one re-weighted; the unchanged target is left alone.",
			spec:   []v1alpha1.Target{eni("10.0.0.1", 80), eni("10.0.0.2", 80, 50), eni("10.0.0.4", 80)},
			cloud:  []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10), seen("10.0.0.2", 80, 10), seen("10.0.0.3", 80, 10)},
			want: changes{
				Register:   []change{{Key: key{IP: "10.0.0.4", Port: 80}, Weight: 10}},
				Deregister: []change{{Key: key{IP: "10.0.0.3", Port: 80}, Was: 10}},
				Reweight:   []change{{Key: key{IP: "10.0.0.2", Port: 80}, Weight: 50, Was: 10}},
			},
			diff: "register 10.0.0.4:80 (weight 10); deregister 10.0.0.3:80; weight of 10.0.0.2:80: want 50, got 10",
		},
		"PortIsPartOfTheKey": {
			reason: "The same IP on another port is another target.",
			spec:   []v1alpha1.Target{eni("10.0.0.1", 8080)},
			cloud:  []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10)},
			want: changes{
				Register:   []change{{Key: key{IP: "10.0.0.1", Port: 8080}, Weight: 10}},
				Deregister: []change{{Key: key{IP: "10.0.0.1", Port: 80}, Was: 10}},
			},
			diff: "register 10.0.0.1:8080 (weight 10); deregister 10.0.0.1:80",
		},
		"InstanceByID": {
			reason: "A CVM target is keyed by its instance id, not by the IP the cloud reports for it.",
			spec:   []v1alpha1.Target{{InstanceID: "ins-1", Port: 80}},
			cloud:  []v1alpha1.TargetObservation{{InstanceID: "ins-1", IP: "10.1.0.1", Port: 80, Weight: 10}},
			want:   changes{},
		},
		"IPSpelling": {
			reason: "IPv6 addresses compare in their canonical form.",
			spec:   []v1alpha1.Target{eni("2001:DB8:0:0::1", 80)},
			cloud:  []v1alpha1.TargetObservation{seen("2001:db8::1", 80, 10)},
			want:   changes{},
		},
		"RemoveAll": {
			reason: "An empty spec removes every target.",
			cloud:  []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10)},
			want:   changes{Deregister: []change{{Key: key{IP: "10.0.0.1", Port: 80}, Was: 10}}},
			diff:   "deregister 10.0.0.1:80",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := plan(tc.spec, tc.cloud)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s\nplan(...): -want, +got:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.diff, got.String()); d != "" {
				t.Errorf("%s\nplan(...).String(): -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func TestDiffIsBounded(t *testing.T) {
	var spec []v1alpha1.Target
	for i := range 25 {
		spec = append(spec, eni("10.0.1.1", int64(1000+i)))
	}
	got := plan(spec, nil).String()
	want := "register 10.0.1.1:1000 (weight 10); register 10.0.1.1:1001 (weight 10); register 10.0.1.1:1002 (weight 10); " +
		"register 10.0.1.1:1003 (weight 10); register 10.0.1.1:1004 (weight 10); register 10.0.1.1:1005 (weight 10); " +
		"register 10.0.1.1:1006 (weight 10); register 10.0.1.1:1007 (weight 10); register 10.0.1.1:1008 (weight 10); " +
		"register 10.0.1.1:1009 (weight 10); and 15 more"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("a diff of 25 changes lists 10 and counts the rest: -want, +got:\n%s", d)
	}
}

func TestObserveBackends(t *testing.T) {
	bs := []*clbsdk.Backend{
		{Type: clb.Ptr("ENI"), InstanceId: clb.Ptr(""), Port: clb.Ptr(int64(80)), Weight: clb.Ptr(int64(10)),
			PrivateIpAddresses: []*string{clb.Ptr("10.0.0.2")}},
		{Type: clb.Ptr("CVM"), InstanceId: clb.Ptr("ins-1"), Port: clb.Ptr(int64(80)), Weight: clb.Ptr(int64(5)),
			PrivateIpAddresses: []*string{clb.Ptr("10.1.0.1")}},
		{Type: clb.Ptr("ENI"), InstanceId: clb.Ptr("ins-owner"), Port: clb.Ptr(int64(80)), Weight: clb.Ptr(int64(0)),
			PrivateIpAddresses: []*string{clb.Ptr("10.0.0.1")}},
	}
	want := []v1alpha1.TargetObservation{
		{IP: "10.0.0.1", Port: 80, Weight: 0},
		{IP: "10.0.0.2", Port: 80, Weight: 10},
		{InstanceID: "ins-1", IP: "10.1.0.1", Port: 80, Weight: 5},
	}
	if d := cmp.Diff(want, observe(bs)); d != "" {
		t.Errorf("observe(...): ENI targets are keyed by IP, CVM targets by instance: -want, +got:\n%s", d)
	}
}

func TestParseExternalName(t *testing.T) {
	cases := map[string]struct {
		name    string
		want    identity
		wantErr bool
	}{
		"Listener":     {name: "lbl-1", want: identity{listener: "lbl-1"}},
		"Rule":         {name: "lbl-1/loc-1", want: identity{listener: "lbl-1", rule: "loc-1"}},
		"EmptyRule":    {name: "lbl-1/", wantErr: true},
		"EmptyListner": {name: "/loc-1", wantErr: true},
		"TooManyParts": {name: "lbl-1/loc-1/x", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseExternalName(tc.name)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseExternalName(%q): error %v, want error %v", tc.name, err, tc.wantErr)
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(identity{})); d != "" {
				t.Errorf("parseExternalName(%q): -want, +got:\n%s", tc.name, d)
			}
			if !tc.wantErr && got.String() != tc.name {
				t.Errorf("String() = %q, want %q", got.String(), tc.name)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	id := identity{listener: "lbl-1", rule: "loc-1"}
	chs := []change{{Key: key{IP: "10.0.0.1", Port: 80}, Weight: 30}, {Key: key{InstanceID: "ins-1", Port: 81}, Weight: 0}}
	want := []clb.Target{
		{ListenerID: "lbl-1", LocationID: "loc-1", EniIP: "10.0.0.1", Port: 80, Weight: clb.Ptr(int64(30))},
		{ListenerID: "lbl-1", LocationID: "loc-1", InstanceID: "ins-1", Port: 81, Weight: clb.Ptr(int64(0))},
	}
	if d := cmp.Diff(want, targets(id, chs, true)); d != "" {
		t.Errorf("targets(..., true): -want, +got:\n%s", d)
	}
	want[0].Weight, want[1].Weight = nil, nil
	if d := cmp.Diff(want, targets(id, chs, false)); d != "" {
		t.Errorf("targets(..., false): -want, +got:\n%s", d)
	}
}
