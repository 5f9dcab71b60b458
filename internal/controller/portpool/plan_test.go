package portpool

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

func TestSegments(t *testing.T) {
	cases := map[string]struct {
		reason          string
		start, end, seg int64
		want            int64
	}{
		"SinglePorts":    {"one slot per port", 30000, 30019, 1, 20},
		"Segments":       {"one slot per 10 ports", 40000, 40099, 10, 10},
		"OnePort":        {"a range of one port is one slot", 7000, 7000, 1, 1},
		"PartialSegment": {"a tail shorter than a segment is no slot", 1000, 1014, 10, 1},
		"NoSegment":      {"a segment length below 1 gives nothing", 1000, 1010, 0, 0},
		"Backwards":      {"an end below the start gives nothing", 2000, 1000, 1, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := segments(tc.start, tc.end, tc.seg); got != tc.want {
				t.Errorf("%s: segments(%d, %d, %d) = %d, want %d", tc.reason, tc.start, tc.end, tc.seg, got, tc.want)
			}
		})
	}
}

func TestSlotsPerLB(t *testing.T) {
	cases := map[string]struct {
		reason          string
		segs, quota     int64
		protocols, want int
	}{
		"RangeFits":      {"the range is smaller than the quota", 20, 50, 1, 20},
		"QuotaCaps":      {"60 ports but 50 listeners per load balancer", 60, 50, 1, 50},
		"TwoProtocols":   {"TCP+UDP takes two listeners a slot", 60, 50, 2, 25},
		"OddQuota":       {"a quota of 51 for two protocols rounds down", 60, 51, 2, 25},
		"RaisedQuota":    {"a raised quota lets the whole range in", 100, 1000, 2, 100},
		"QuotaTooSmall":  {"one listener cannot serve two protocols", 10, 1, 2, 0},
		"NoProtocolsYet": {"no protocols counts as one", 10, 50, 0, 10},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := slotsPerLB(tc.segs, tc.quota, tc.protocols); got != int64(tc.want) {
				t.Errorf("%s: slotsPerLB(%d, %d, %d) = %d, want %d", tc.reason, tc.segs, tc.quota, tc.protocols, got, tc.want)
			}
		})
	}
}

func params(start, end int64, mods ...func(*v1alpha1.PortPoolParameters)) v1alpha1.PortPoolParameters {
	p := v1alpha1.PortPoolParameters{StartPort: start, EndPort: end}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func withProtocols(ps ...string) func(*v1alpha1.PortPoolParameters) {
	return func(p *v1alpha1.PortPoolParameters) { p.Protocols = ps }
}

func withSegment(n int64) func(*v1alpha1.PortPoolParameters) {
	return func(p *v1alpha1.PortPoolParameters) { p.SegmentLength = &n }
}

func TestNewShape(t *testing.T) {
	cases := map[string]struct {
		reason  string
		p       v1alpha1.PortPoolParameters
		quota   int64
		want    shape
		wantErr string
	}{
		"Defaults": {
			reason: "TCP and single ports by default",
			p:      params(30000, 30019), quota: 50,
			want: shape{start: 30000, end: 30019, seg: 1, protocols: []string{"TCP"}, slots: 20},
		},
		"SortedProtocols": {
			reason: "protocols are kept in a fixed order",
			p:      params(30000, 30099, withProtocols("UDP", "TCP")), quota: 50,
			want: shape{start: 30000, end: 30099, seg: 1, protocols: []string{"TCP", "UDP"}, slots: 25},
		},
		"Segments": {
			reason: "segments count as slots",
			p:      params(40000, 40099, withSegment(10), withProtocols("UDP")), quota: 50,
			want: shape{start: 40000, end: 40099, seg: 10, protocols: []string{"UDP"}, slots: 10},
		},
		"LongSegments": {
			reason: "segments of 10001 ports (tke-extend's multi-ISP guide): three whole ones from 30000, each one listener per protocol",
			p:      params(30000, 60002, withSegment(10001), withProtocols("TCP", "UDP")), quota: 50,
			want: shape{start: 30000, end: 60002, seg: 10001, protocols: []string{"TCP", "UDP"}, slots: 3},
		},
		"EveryPort": {
			reason: "one segment of every port, one port-range listener 1-65535",
			p:      params(1, 65535, withSegment(65535), withProtocols("UDP")), quota: 50,
			want: shape{start: 1, end: 65535, seg: 65535, protocols: []string{"UDP"}, slots: 1},
		},
		"SameTCPPortSpace": {
			reason: "TCP and TCP_SSL cannot share a port",
			p:      params(1, 10, withProtocols("TCP", "TCP_SSL")), quota: 50,
			wantErr: "protocols TCP and TCP_SSL both use the TCP port space",
		},
		"SameUDPPortSpace": {
			reason: "UDP and QUIC cannot share a port",
			p:      params(1, 10, withProtocols("QUIC", "UDP")), quota: 50,
			wantErr: "protocols QUIC and UDP both use the UDP port space",
		},
		"NoSlot": {
			reason: "a quota below the protocols leaves no slot",
			p:      params(1, 10, withProtocols("TCP", "UDP")), quota: 1,
			wantErr: "no slot fits",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := newShape(tc.p, tc.quota)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s: error %v, want one containing %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(shape{})); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// batch summarises a CreateListener request.
type batch struct {
	Protocol  string
	First     int64
	Ports     int
	EndPort   uint64
	FirstName string
}

func summarise(reqs []*clbsdk.CreateListenerRequest) []batch {
	var out []batch
	for _, r := range reqs {
		out = append(out, batch{
			Protocol: clb.Deref(r.Protocol), First: clb.Deref(r.Ports[0]), Ports: len(r.Ports),
			EndPort: clb.Deref(r.EndPort), FirstName: clb.Deref(r.ListenerNames[0]),
		})
	}
	return out
}

func portsFrom(start int64, n int, step int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out
}

func TestCreateBatches(t *testing.T) {
	owner := newNamer("ns", "pool")
	cases := map[string]struct {
		reason  string
		shape   shape
		missing map[string][]int64
		want    []batch
	}{
		"FortyNinePerCall": {
			reason:  "a call takes fewer than 50 ports",
			shape:   shape{start: 30000, seg: 1, protocols: []string{"TCP"}, slots: 50},
			missing: map[string][]int64{"TCP": portsFrom(30000, 50, 1)},
			want: []batch{
				{Protocol: "TCP", First: 30000, Ports: 49, FirstName: "ns_pool-30000"},
				{Protocol: "TCP", First: 30049, Ports: 1, FirstName: "ns_pool-30049"},
			},
		},
		"OneCallPerProtocol": {
			reason:  "a call creates listeners of one protocol",
			shape:   shape{start: 32000, seg: 1, protocols: []string{"TCP", "UDP"}, slots: 10},
			missing: map[string][]int64{"TCP": portsFrom(32000, 10, 1), "UDP": portsFrom(32000, 10, 1)},
			want: []batch{
				{Protocol: "TCP", First: 32000, Ports: 10, FirstName: "ns_pool-32000"},
				{Protocol: "UDP", First: 32000, Ports: 10, FirstName: "ns_pool-32000"},
			},
		},
		"OneCallPerSegment": {
			reason:  "EndPort takes exactly one start port per call",
			shape:   shape{start: 40000, seg: 10, protocols: []string{"UDP"}, slots: 3},
			missing: map[string][]int64{"UDP": portsFrom(40000, 3, 10)},
			want: []batch{
				{Protocol: "UDP", First: 40000, Ports: 1, EndPort: 40009, FirstName: "ns_pool-40000"},
				{Protocol: "UDP", First: 40010, Ports: 1, EndPort: 40019, FirstName: "ns_pool-40010"},
				{Protocol: "UDP", First: 40020, Ports: 1, EndPort: 40029, FirstName: "ns_pool-40020"},
			},
		},
		"LongSegments": {
			reason:  "a segment of 10001 ports is one listener, its EndPort 10000 above its port; the last ends at 60002",
			shape:   shape{start: 30000, seg: 10001, protocols: []string{"UDP"}, slots: 3},
			missing: map[string][]int64{"UDP": portsFrom(30000, 3, 10001)},
			want: []batch{
				{Protocol: "UDP", First: 30000, Ports: 1, EndPort: 40000, FirstName: "ns_pool-30000"},
				{Protocol: "UDP", First: 40001, Ports: 1, EndPort: 50001, FirstName: "ns_pool-40001"},
				{Protocol: "UDP", First: 50002, Ports: 1, EndPort: 60002, FirstName: "ns_pool-50002"},
			},
		},
		"EveryPort": {
			reason:  "one port-range listener over every port",
			shape:   shape{start: 1, seg: 65535, protocols: []string{"TCP"}, slots: 1},
			missing: map[string][]int64{"TCP": {1}},
			want:    []batch{{Protocol: "TCP", First: 1, Ports: 1, EndPort: 65535, FirstName: "ns_pool-1"}},
		},
		"NothingMissing": {
			reason: "a complete load balancer needs no call",
			shape:  shape{start: 1, seg: 1, protocols: []string{"TCP"}, slots: 10},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := summarise(createBatches(tc.shape, "lb-1", owner, nil, tc.missing))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCreateCallCount checks the formula the integration test bounds:
// protocols × ceil(slots/49) calls for single ports, protocols × slots for
// segments.
func TestCreateCallCount(t *testing.T) {
	for _, tc := range []struct {
		slots, seg int64
		protocols  []string
		want       int
	}{
		{1, 1, []string{"TCP"}, 1},
		{49, 1, []string{"TCP"}, 1},
		{50, 1, []string{"TCP"}, 2},
		{500, 1, []string{"TCP", "UDP"}, 22},
		{10, 10, []string{"UDP"}, 10},
		{10, 10, []string{"TCP", "UDP"}, 20},
	} {
		s := shape{start: 1000, seg: tc.seg, protocols: tc.protocols, slots: tc.slots}
		missing := map[string][]int64{}
		for _, p := range tc.protocols {
			missing[p] = portsFrom(1000, int(tc.slots), tc.seg)
		}
		if got := len(createBatches(s, "lb-1", newNamer("ns", "p"), nil, missing)); got != tc.want {
			t.Errorf("%d slots of %d ports, %v: %d calls, want %d", tc.slots, tc.seg, tc.protocols, got, tc.want)
		}
	}
}

func TestDeleteBatches(t *testing.T) {
	ids := make([]string, 45)
	for i := range ids {
		ids[i] = fmt.Sprintf("lbl-%02d", i)
	}
	var sizes []int
	for _, b := range deleteBatches(ids) {
		sizes = append(sizes, len(b))
	}
	if diff := cmp.Diff([]int{20, 20, 5}, sizes); diff != "" {
		t.Errorf("DeleteLoadBalancerListeners takes 20 ids a call: -want +got:\n%s", diff)
	}
	if got := deleteBatches(nil); got != nil {
		t.Errorf("no ids must give no call (the API would delete every listener): %v", got)
	}
}

func listener(id, name, protocol string, port, end int64, mods ...func(*clbsdk.Listener)) *clbsdk.Listener {
	l := &clbsdk.Listener{ListenerId: &id, ListenerName: &name, Protocol: &protocol, Port: &port, EndPort: &end}
	for _, m := range mods {
		m(l)
	}
	return l
}

func scheduler(s string) func(*clbsdk.Listener) {
	return func(l *clbsdk.Listener) { l.Scheduler = &s }
}

// matched is the comparable part of lbListeners.
type matched struct {
	IDs       map[string]string
	Missing   map[string][]int64
	Conflicts []string
	Waiting   int
	Drift     []string
	Stale     []string
	Usable    int
}

func summariseMatch(m lbListeners) matched {
	out := matched{IDs: m.ids, Missing: m.missing, Conflicts: m.conflicts, Waiting: m.waiting}
	for _, d := range m.drift {
		out.Drift = append(out.Drift, d.key+" "+d.diff)
	}
	for _, s := range m.stale {
		out.Stale = append(out.Stale, s.id)
	}
	for _, u := range m.usable {
		if u {
			out.Usable++
		}
	}
	return out
}

func TestMatch(t *testing.T) {
	owner := newNamer("ns", "p")
	wrr := &v1alpha1.PoolListenerSettings{Scheduler: clb.Ptr("WRR")}
	cases := map[string]struct {
		reason    string
		shape     shape
		settings  *v1alpha1.PoolListenerSettings
		listeners []*clbsdk.Listener
		want      matched
	}{
		"Empty": {
			reason: "every slot is missing on a new load balancer",
			shape:  shape{start: 100, end: 102, seg: 1, protocols: []string{"TCP", "UDP"}, slots: 3},
			want:   matched{IDs: map[string]string{}, Missing: map[string][]int64{"TCP": {100, 101, 102}, "UDP": {100, 101, 102}}},
		},
		"OursAndDrift": {
			reason:   "listeners named by the pool are its own; a changed scheduler is drift",
			shape:    shape{start: 100, end: 101, seg: 1, protocols: []string{"TCP"}, slots: 2},
			settings: wrr,
			listeners: []*clbsdk.Listener{
				listener("lbl-a", "ns_p-100", "TCP", 100, 0, scheduler("WRR")),
				listener("lbl-b", "ns_p-101", "TCP", 101, 0, scheduler("LEAST_CONN")),
			},
			want: matched{
				IDs: map[string]string{"TCP/100": "lbl-a", "TCP/101": "lbl-b"}, Missing: map[string][]int64{},
				Drift: []string{"TCP/101 scheduler: want WRR, got LEAST_CONN"}, Usable: 2,
			},
		},
		"ForeignOnAPort": {
			reason: "a listener of someone else on a pool port is a conflict, not adopted",
			shape:  shape{start: 100, end: 101, seg: 1, protocols: []string{"TCP"}, slots: 2},
			listeners: []*clbsdk.Listener{
				listener("lbl-x", "theirs", "TCP", 101, 0),
			},
			want: matched{
				IDs: map[string]string{}, Missing: map[string][]int64{"TCP": {100}},
				Conflicts: []string{`TCP/101 is taken by listener lbl-x (TCP 101, named "theirs")`},
			},
		},
		"SameFamily": {
			reason: "a TCP_SSL listener takes the TCP port; a UDP one does not",
			shape:  shape{start: 100, end: 101, seg: 1, protocols: []string{"TCP"}, slots: 2},
			listeners: []*clbsdk.Listener{
				listener("lbl-x", "tls", "TCP_SSL", 100, 0),
				listener("lbl-y", "udp", "UDP", 101, 0),
			},
			want: matched{
				IDs: map[string]string{}, Missing: map[string][]int64{"TCP": {101}},
				Conflicts: []string{`TCP/100 is taken by listener lbl-x (TCP_SSL 100, named "tls")`},
			},
		},
		"RangeOverSegments": {
			reason: "a port range of someone else blocks every segment it overlaps",
			shape:  shape{start: 1000, end: 1039, seg: 10, protocols: []string{"UDP"}, slots: 4},
			listeners: []*clbsdk.Listener{
				listener("lbl-s", "ns_p-1000", "UDP", 1000, 1009),
				listener("lbl-r", "range", "UDP", 1015, 1025),
				listener("lbl-o", "outside", "UDP", 2000, 2010),
			},
			want: matched{
				IDs: map[string]string{"UDP/1000": "lbl-s"}, Missing: map[string][]int64{"UDP": {1030}},
				Conflicts: []string{
					`UDP/1010 is taken by listener lbl-r (UDP 1015-1025, named "range")`,
					`UDP/1020 is taken by listener lbl-r (UDP 1015-1025, named "range")`,
				},
				Usable: 1,
			},
		},
		"Stale": {
			reason: "the pool's listeners no slot wants are stale; one on a wanted port is deleted before that slot is made",
			shape:  shape{start: 100, end: 199, seg: 1, protocols: []string{"UDP"}, slots: 2},
			listeners: []*clbsdk.Listener{
				listener("lbl-t", "ns_p-100", "TCP", 100, 0),  // protocol removed; TCP does not block UDP
				listener("lbl-q", "ns_p-101", "QUIC", 101, 0), // QUIC blocks UDP 101 until deleted
				listener("lbl-f", "ns_p-150", "UDP", 150, 0),  // beyond the slots (quota)
			},
			want: matched{
				IDs: map[string]string{}, Missing: map[string][]int64{"UDP": {100}},
				Waiting: 1, Stale: []string{"lbl-t", "lbl-q", "lbl-f"},
			},
		},
		"OtherPool": {
			reason: "a pool of the same name in another namespace is not ours",
			shape:  shape{start: 100, end: 100, seg: 1, protocols: []string{"TCP"}, slots: 1},
			listeners: []*clbsdk.Listener{
				listener("lbl-o", "other_p-100", "TCP", 100, 0),
			},
			want: matched{
				IDs: map[string]string{}, Missing: map[string][]int64{},
				Conflicts: []string{`TCP/100 is taken by listener lbl-o (TCP 100, named "other_p-100")`},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := summariseMatch(match(tc.shape, owner, tc.settings, tc.listeners, nil, nil))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNeedLoadBalancer(t *testing.T) {
	ac := func(maxLBs int64, minFree *int64) *v1alpha1.PoolAutoCreate {
		return &v1alpha1.PoolAutoCreate{MaxLoadBalancers: maxLBs, MinFreeSlots: minFree}
	}
	cases := map[string]struct {
		reason string
		ac     *v1alpha1.PoolAutoCreate
		lbs    []lbUsage
		want   bool
	}{
		"Off":   {"no autoCreate, no growth", nil, nil, false},
		"Empty": {"a pool without load balancers grows", ac(2, nil), nil, true},
		"Full": {"a full pool grows", ac(2, nil), []lbUsage{
			{state: v1alpha1.PoolLBReady, autoCreated: true, free: 0, allocated: 10},
		}, true},
		"HasFree": {"one free slot is enough by default", ac(2, nil), []lbUsage{
			{state: v1alpha1.PoolLBReady, free: 1, allocated: 9},
		}, false},
		"BeingMade": {"a load balancer still being prepared counts at its size, so one shortage makes one load balancer", ac(3, nil), []lbUsage{
			{state: v1alpha1.PoolLBReady, free: 0, allocated: 10},
			{state: v1alpha1.PoolLBCreating, autoCreated: true},
		}, false},
		"Max": {"maxLoadBalancers stops the growth", ac(1, nil), []lbUsage{
			{state: v1alpha1.PoolLBReady, autoCreated: true, free: 0, allocated: 10},
		}, false},
		"MissingDoNotCount": {"a created load balancer that is gone does not count against the maximum", ac(1, nil), []lbUsage{
			{state: v1alpha1.PoolLBNotFound, autoCreated: true},
		}, true},
		"BlacklistedGiveNothing": {"blacklisted load balancers offer no slots", ac(2, nil), []lbUsage{
			{state: v1alpha1.PoolLBBlacklisted, free: 0, allocated: 0},
		}, true},
		"MinFree": {"minFreeSlots asks for headroom", ac(2, clb.Ptr(int64(5))), []lbUsage{
			{state: v1alpha1.PoolLBReady, free: 4, allocated: 6},
		}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := needLoadBalancer(tc.ac, 10, tc.lbs); got != tc.want {
				t.Errorf("%s: needLoadBalancer = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

func certOf(id string) func(*clbsdk.Listener) {
	return func(l *clbsdk.Listener) {
		l.Certificate = &clbsdk.CertificateOutput{CertId: &id, SSLMode: clb.Ptr("UNIDIRECTIONAL")}
	}
}

// TestMatchCertificates: a listener whose slot a binding with its own
// certificate holds wants that one; every other listener the pool's, so
// a released slot gets the pool's back.
func TestMatchCertificates(t *testing.T) {
	owner := newNamer("ns", "p")
	pool := &v1alpha1.PoolListenerSettings{Certificate: &v1alpha1.Certificate{CertID: "cert-pool"}}
	s := shape{start: 100, end: 102, seg: 1, protocols: []string{"TCP_SSL"}, slots: 3}
	listeners := []*clbsdk.Listener{
		listener("lbl-a", "ns_p-100", "TCP_SSL", 100, 0, certOf("cert-pool")), // bound with cert-pod: to set
		listener("lbl-b", "ns_p-101", "TCP_SSL", 101, 0, certOf("cert-pod")),  // released: the pool's back
		listener("lbl-c", "ns_p-102", "TCP_SSL", 102, 0, certOf("cert-pod")),  // bound with cert-pod: as wanted
	}
	m := match(s, owner, pool, listeners, nil, map[string]string{"TCP_SSL/100": "cert-pod", "TCP_SSL/102": "cert-pod"})
	got := map[string]string{}
	for _, d := range m.drift {
		got[d.id] = d.settings.Certificate.CertID
	}
	if want := map[string]string{"lbl-a": "cert-pod", "lbl-b": "cert-pool"}; !maps.Equal(got, want) {
		t.Errorf("listeners to modify and the certificate each gets: got %v, want %v", got, want)
	}
	if pool.Certificate.CertID != "cert-pool" {
		t.Errorf("the pool's settings were changed: %v", pool.Certificate)
	}
}
