package clbportpool

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
)

func TestToPortPool(t *testing.T) {
	lbs := []string{"lb-1", "lb-2"}
	cases := []struct {
		name      string
		cpp       v1alpha1.CLBPortPool
		start     int64
		end       int64
		seg       int64
		protocols []string
		ids       []string
		policy    string
		ignored   string // a prefix one of them has
		err       string
	}{
		{name: "no endPort: to 65535", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, ExsistedLoadBalancerIDs: lbs}},
			start: 30000, end: 65535, seg: 1, protocols: []string{"TCP", "UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom},
		{name: "segments: whole ones up to 65535", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, SegmentLength: ptr.To[int64](100), ExsistedLoadBalancerIDs: lbs}},
			start: 30000, end: 65499, seg: 100, protocols: []string{"TCP", "UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom},
		{name: "segments of 1001: tke-extend's HostPort guide", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, SegmentLength: ptr.To[int64](1001), ExsistedLoadBalancerIDs: lbs}},
			start: 30000, end: 65034, seg: 1001, protocols: []string{"TCP", "UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom},
		{name: "segments of 10001: tke-extend's multi-ISP guide, three of them", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, SegmentLength: ptr.To[int64](10001), ExsistedLoadBalancerIDs: lbs}},
			start: 30000, end: 60002, seg: 10001, protocols: []string{"TCP", "UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom},
		{name: "one segment of every port", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 1, SegmentLength: ptr.To[int64](65535), ExsistedLoadBalancerIDs: lbs}},
			start: 1, end: 65535, seg: 65535, protocols: []string{"TCP", "UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom},
		{name: "segmentLength 1 is one port", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, EndPort: ptr.To[int64](30099), SegmentLength: ptr.To[int64](1), ExsistedLoadBalancerIDs: lbs}},
			start: 30000, end: 30099, seg: 1, protocols: []string{"TCP", "UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom},
		{name: "listenerQuota: its ports over two protocols", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, ListenerQuota: ptr.To[int64](50), ExsistedLoadBalancerIDs: lbs}},
			start: 30000, end: 30024, seg: 1, protocols: []string{"TCP", "UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom, ignored: "listenerQuota:"},
		{name: "endPort trimmed to whole segments", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, EndPort: ptr.To[int64](30105), SegmentLength: ptr.To[int64](10), ExsistedLoadBalancerIDs: lbs}},
			start: 30000, end: 30099, seg: 10, protocols: []string{"TCP", "UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom, ignored: "endPort:"},
		{name: "region prefixes the ids", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, EndPort: ptr.To[int64](30009), Region: ptr.To("ap-chengdu"), ExsistedLoadBalancerIDs: lbs, LbPolicy: ptr.To("Uniform")}},
			start: 30000, end: 30009, seg: 1, protocols: []string{"TCP", "UDP"}, ids: []string{"ap-chengdu:lb-1", "ap-chengdu:lb-2"}, policy: clbv1alpha1.PolicyLeastUsed},
		{name: "listenerPrecreate UDP only", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, EndPort: ptr.To[int64](30009), ExsistedLoadBalancerIDs: lbs, LbPolicy: ptr.To("InOrder"),
			ListenerPrecreate: &v1alpha1.ListenerPrecreateConfig{Enabled: true, UDP: ptr.To[int64](50)}}},
			start: 30000, end: 30009, seg: 1, protocols: []string{"UDP"}, ids: lbs, policy: clbv1alpha1.PolicyInOrder, ignored: "listenerPrecreate"},
		{name: "protocols annotation", cpp: v1alpha1.CLBPortPool{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationProtocols: "UDP"}},
			Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, EndPort: ptr.To[int64](30009), ExsistedLoadBalancerIDs: lbs}},
			start: 30000, end: 30009, seg: 1, protocols: []string{"UDP"}, ids: lbs, policy: clbv1alpha1.PolicyRandom},
		{name: "autoCreate with region: none created", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, EndPort: ptr.To[int64](30009), Region: ptr.To("ap-chengdu"), ExsistedLoadBalancerIDs: lbs,
			AutoCreate: &v1alpha1.AutoCreateConfig{Enabled: true}}},
			start: 30000, end: 30009, seg: 1, protocols: []string{"TCP", "UDP"}, ids: []string{"ap-chengdu:lb-1", "ap-chengdu:lb-2"}, policy: clbv1alpha1.PolicyRandom, ignored: "autoCreate:"},
		{name: "only autoCreate with region: refused", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, Region: ptr.To("ap-chengdu"), AutoCreate: &v1alpha1.AutoCreateConfig{Enabled: true}}},
			err: "the pool has no load balancers"},
		{name: "segments of TCP_SSL: refused", cpp: v1alpha1.CLBPortPool{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationProtocols: "TCP_SSL"}},
			Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, SegmentLength: ptr.To[int64](10), ExsistedLoadBalancerIDs: lbs}},
			err: "port segments are only for TCP and UDP listeners, not TCP_SSL"},
		{name: "a bad protocol: refused", cpp: v1alpha1.CLBPortPool{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationProtocols: "TCP,TCP"}},
			Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, ExsistedLoadBalancerIDs: lbs}},
			err: "TCP twice"},
		{name: "a range smaller than a segment: refused", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 65530, SegmentLength: ptr.To[int64](10), ExsistedLoadBalancerIDs: lbs}},
			err: "ports 65530-65535 hold no segment of 10 ports"},
		{name: "a segment of 10001 from 60000: refused", cpp: v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 60000, SegmentLength: ptr.To[int64](10001), ExsistedLoadBalancerIDs: lbs}},
			err: "ports 60000-65535 hold no segment of 10001 ports"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := toPortPool(&c.cpp)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := m.params
			if p.StartPort != c.start || p.EndPort != c.end || ptr.Deref(p.SegmentLength, 1) != c.seg || !slices.Equal(p.Protocols, c.protocols) ||
				!slices.Equal(p.LoadBalancerIDs, c.ids) || ptr.Deref(p.AllocationPolicy, "") != c.policy {
				t.Errorf("got %d-%d seg %d %v %v %s; want %d-%d seg %d %v %v %s", p.StartPort, p.EndPort, ptr.Deref(p.SegmentLength, 1), p.Protocols, p.LoadBalancerIDs,
					ptr.Deref(p.AllocationPolicy, ""), c.start, c.end, c.seg, c.protocols, c.ids, c.policy)
			}
			if c.ignored != "" && !slices.ContainsFunc(m.ignored, func(s string) bool { return strings.HasPrefix(s, c.ignored) }) {
				t.Errorf("ignored %q, want one starting %q", m.ignored, c.ignored)
			}
			if c.ignored == "" && len(m.ignored) > 0 {
				t.Errorf("ignored %q, want none", m.ignored)
			}
		})
	}
}

// TestTemplate: autoCreate.parameters map to the template of the load
// balancers created, and those with no counterpart are listed.
func TestTemplate(t *testing.T) {
	var ignored []string
	a := autoCreate(&v1alpha1.AutoCreateConfig{Enabled: true, MaxLoadBalancers: ptr.To[int64](3), Parameters: &v1alpha1.CreateLBParameters{
		VipIsp: ptr.To("CTCC"), BandwidthPackageID: ptr.To("bwp-1"), AddressIPVersion: ptr.To("IPv4"), LoadBalancerName: ptr.To("test"),
		Tags: []v1alpha1.TagInfo{{TagKey: "k", TagValue: "v"}}, DynamicVip: ptr.To(true), Vip: ptr.To("1.2.3.4"), LBChargeType: ptr.To("PREPAID"),
		InternetAccessible: &v1alpha1.InternetAccessible{InternetChargeType: ptr.To("TRAFFIC_POSTPAID_BY_HOUR"), InternetMaxBandwidthOut: ptr.To[int64](61440), BandwidthpkgSubType: ptr.To("BGP")},
	}}, &ignored)
	tp := a.Template
	if a.MaxLoadBalancers != 3 || ptr.Deref(tp.VipIsp, "") != "CTCC" || ptr.Deref(tp.BandwidthPackageID, "") != "bwp-1" || ptr.Deref(tp.AddressIPVersion, "") != "IPV4" ||
		ptr.Deref(tp.Name, "") != "test" || tp.Tags["k"] != "v" || ptr.Deref(tp.InternetAccessible.InternetMaxBandwidthOut, 0) != 61440 ||
		ptr.Deref(tp.InternetAccessible.InternetChargeType, "") != "TRAFFIC_POSTPAID_BY_HOUR" {
		t.Errorf("autoCreate %+v, template %+v", a, tp)
	}
	for _, f := range []string{"dynamicVip", "vip", "lbChargeType", "internetAccessible.bandwidthpkgSubType"} {
		if !slices.ContainsFunc(ignored, func(s string) bool { return strings.HasPrefix(s, "autoCreate.parameters."+f+":") }) {
			t.Errorf("ignored %q lacks %s", ignored, f)
		}
	}
}

// TestActsFor: only the pool made for a GameServerSet acts for its
// namespace (its ClbIds are that namespace's users' choice); an admin's
// CLBPortPool, even one limited to a namespace, keeps the admin's choice.
func TestActsFor(t *testing.T) {
	cases := map[string]struct {
		labels, annotations map[string]string
		want                map[string]string
	}{
		"Admin": {},
		"AdminForOneNamespace": {
			annotations: map[string]string{v1alpha1.AnnotationNamespace: "games"},
		},
		"GameServerSet": {
			labels:      map[string]string{v1alpha1.LabelMadeFor: v1alpha1.MadeForGameServerSet},
			annotations: map[string]string{v1alpha1.AnnotationNamespace: "games"},
			want:        map[string]string{clbv1alpha1.AnnotationActsFor: "games"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cpp := &v1alpha1.CLBPortPool{}
			cpp.Labels, cpp.Annotations = tc.labels, tc.annotations
			if diff := cmp.Diff(tc.want, actsFor(cpp)); diff != "" {
				t.Errorf("actsFor: -want +got:\n%s", diff)
			}
		})
	}
}

// TestTKEExtendSwitch: what a CLBPortPool left by tke-extend becomes.
// The load balancers tke-extend created for it, read once from the status
// it wrote, are remembered in an annotation and used by the PortPool
// after the pool's own; a status the provider wrote is never read for
// them. The dry-run annotation makes an Observe-only PortPool that carries
// it; another value is refused.
func TestTKEExtendSwitch(t *testing.T) {
	left := v1alpha1.CLBPortPool{Spec: v1alpha1.CLBPortPoolSpec{StartPort: 30000, EndPort: ptr.To[int64](30009), ExsistedLoadBalancerIDs: []string{"lb-1"}}}
	left.Status.LoadbalancerStatuses = []v1alpha1.LoadBalancerStatus{
		{LoadbalancerID: "lb-1", State: "Running"},
		{LoadbalancerID: "lb-auto1", State: "Running", AutoCreated: ptr.To(true)},
		{LoadbalancerID: "lb-auto2", State: "Running", AutoCreated: ptr.To(true)},
	}
	cpp := left.DeepCopy()
	if !rememberAutoCreated(cpp) || cpp.Annotations[v1alpha1.AnnotationTKEAutoCreated] != "lb-auto1,lb-auto2" {
		t.Fatalf("annotations %v, want tke-extend's auto-created load balancers remembered", cpp.Annotations)
	}
	if rememberAutoCreated(cpp) {
		t.Error("remembered twice")
	}
	m, err := toPortPool(cpp)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"lb-1", "lb-auto1", "lb-auto2"}; !slices.Equal(m.params.LoadBalancerIDs, want) {
		t.Errorf("loadBalancerIds %v, want %v", m.params.LoadBalancerIDs, want)
	}
	if len(m.policies) != 0 || m.annotations[clbv1alpha1.AnnotationTKESwitch] != "" {
		t.Errorf("without the dry run: policies %v, annotations %v; want the defaults", m.policies, m.annotations)
	}
	if got := m.annotations[v1alpha1.AnnotationTKEAutoCreated]; got != "lb-auto1,lb-auto2" {
		t.Errorf("the PortPool's %s is %q, want tke-extend's auto-created load balancers, for the PortPool to tag", v1alpha1.AnnotationTKEAutoCreated, got)
	}
	if m, _ := toPortPool(left.DeepCopy()); m.annotations[v1alpha1.AnnotationTKEAutoCreated] != "" {
		t.Errorf("a pool with nothing remembered gives its PortPool %v", m.annotations)
	}

	ours := left.DeepCopy()
	ours.Status.PortPool = "tke-port-pools/p"
	if rememberAutoCreated(ours) {
		t.Error("a status the provider wrote was read for auto-created load balancers")
	}

	dry := left.DeepCopy()
	dry.Annotations = map[string]string{clbv1alpha1.AnnotationTKESwitch: clbv1alpha1.TKESwitchDryRun}
	if m, err := toPortPool(dry); err != nil || !slices.Equal(m.policies, xpv2.ManagementPolicies{xpv2.ManagementActionObserve}) ||
		m.annotations[clbv1alpha1.AnnotationTKESwitch] != clbv1alpha1.TKESwitchDryRun {
		t.Errorf("dry run: policies %v, annotations %v, %v; want Observe only, marked", m.policies, m.annotations, err)
	}
	dry.Annotations[clbv1alpha1.AnnotationTKESwitch] = "dryrun"
	if _, err := toPortPool(dry); err == nil || !strings.Contains(err.Error(), `"dryrun" is not DryRun`) {
		t.Errorf("a bad value: %v", err)
	}
}
