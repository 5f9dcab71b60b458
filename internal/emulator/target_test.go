package emulator_test

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func eni(ip string, port int64) *clb.Target {
	return &clb.Target{EniIp: &ip, Port: &port}
}

// enis returns n targets on ip, ports 1..n.
func enis(ip string, n int) []*clb.Target {
	out := make([]*clb.Target, n)
	for i := range out {
		out[i] = eni(ip, int64(i+1))
	}
	return out
}

func describeTargets(t *testing.T, c *clb.Client, lb string, mutate func(*clb.DescribeTargetsRequest)) []*clb.ListenerBackend {
	t.Helper()
	req := clb.NewDescribeTargetsRequest()
	req.LoadBalancerId = &lb
	if mutate != nil {
		mutate(req)
	}
	resp, err := c.DescribeTargets(req)
	must(t, err)
	return resp.Response.Listeners
}

// backendsOf returns "ip:port/weight" of the L4 listener's targets, sorted.
func backendsOf(t *testing.T, c *clb.Client, lb, listener string) []string {
	t.Helper()
	var out []string
	for _, l := range describeTargets(t, c, lb, func(r *clb.DescribeTargetsRequest) { r.ListenerIds = common.StringPtrs([]string{listener}) }) {
		for _, b := range l.Targets {
			out = append(out, fmt.Sprintf("%s:%d/%d", *b.PrivateIpAddresses[0], *b.Port, *b.Weight))
		}
	}
	slices.Sort(out)
	return out
}

func TestRegisterDeregisterAndModifyWeight(t *testing.T) {
	cfg := instant()
	cfg.Instances = map[string]string{"ins-abcd1234": "10.9.9.9"}
	cfg.TargetQuota = 4
	_, _, c := env(t, cfg)
	lb := createLB(t, c, "targets")
	l := createListeners(t, c, lb, "TCP", 80)[0]

	reg := clb.NewRegisterTargetsRequest()
	reg.LoadBalancerId, reg.ListenerId = &lb, &l
	weighted := eni("10.0.0.2", 8080)
	weighted.Weight = common.Int64Ptr(50)
	reg.Targets = []*clb.Target{eni("10.0.0.1", 8080), weighted, {InstanceId: common.StringPtr("ins-abcd1234"), Port: common.Int64Ptr(9000)}}
	resp, err := c.RegisterTargets(reg)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	if got, want := backendsOf(t, c, lb, l), []string{"10.0.0.1:8080/10", "10.0.0.2:8080/50", "10.9.9.9:9000/10"}; !slices.Equal(got, want) {
		t.Fatalf("targets %v, want %v", got, want)
	}
	b := describeTargets(t, c, lb, nil)[0].Targets
	for _, x := range b {
		if *x.PrivateIpAddresses[0] == "10.9.9.9" && (*x.Type != "CVM" || *x.InstanceId != "ins-abcd1234") {
			t.Fatalf("instance target reported as %s %s", *x.Type, *x.InstanceId)
		}
	}

	cases := map[string]struct {
		targets []*clb.Target
		want    string
	}{
		"AlreadyBound":     {[]*clb.Target{eni("10.0.0.1", 8080)}, clb.INVALIDPARAMETERVALUE_DUPLICATE},
		"DuplicateInCall":  {[]*clb.Target{eni("10.0.0.7", 1), eni("10.0.0.7", 1)}, clb.INVALIDPARAMETERVALUE_DUPLICATE},
		"TooMany":          {enis("10.1.0.1", 21), clb.INVALIDPARAMETERVALUE_LENGTH},
		"WeightOutOfRange": {[]*clb.Target{{EniIp: common.StringPtr("10.0.0.8"), Port: common.Int64Ptr(1), Weight: common.Int64Ptr(101)}}, clb.INVALIDPARAMETERVALUE_RANGE},
		"NoAddress":        {[]*clb.Target{{Port: common.Int64Ptr(1)}}, clb.MISSINGPARAMETER},
		"OverQuota":        {[]*clb.Target{eni("10.0.0.3", 1), eni("10.0.0.4", 1)}, clb.LIMITEXCEEDED},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := clb.NewRegisterTargetsRequest()
			r.LoadBalancerId, r.ListenerId, r.Targets = &lb, &l, tc.targets
			_, err := c.RegisterTargets(r)
			wantCode(t, err, tc.want)
		})
	}
	unknown := clb.NewRegisterTargetsRequest()
	unknown.LoadBalancerId, unknown.ListenerId, unknown.Targets = &lb, common.StringPtr("lbl-nothere"), []*clb.Target{eni("10.0.0.5", 1)}
	_, err = c.RegisterTargets(unknown)
	wantCode(t, err, clb.INVALIDPARAMETER_LISTENERIDNOTFOUND)

	mw := clb.NewModifyTargetWeightRequest()
	mw.LoadBalancerId, mw.ListenerId = &lb, &l
	mw.Targets = []*clb.Target{eni("10.0.0.1", 8080)}
	_, err = c.ModifyTargetWeight(mw)
	wantCode(t, err, clb.MISSINGPARAMETER) // no weight anywhere
	mw.Weight = common.Int64Ptr(0)
	mresp, err := c.ModifyTargetWeight(mw)
	must(t, err)
	waitTask(t, c, *mresp.Response.RequestId)
	mw.Targets = []*clb.Target{eni("10.0.0.99", 8080)}
	_, err = c.ModifyTargetWeight(mw)
	wantCode(t, err, clb.INVALIDPARAMETER)

	dereg := clb.NewDeregisterTargetsRequest()
	dereg.LoadBalancerId, dereg.ListenerId = &lb, &l
	dereg.Targets = []*clb.Target{eni("10.0.0.2", 8080)}
	dresp, err := c.DeregisterTargets(dereg)
	must(t, err)
	waitTask(t, c, *dresp.Response.RequestId)
	if got, want := backendsOf(t, c, lb, l), []string{"10.0.0.1:8080/0", "10.9.9.9:9000/10"}; !slices.Equal(got, want) {
		t.Fatalf("targets %v, want %v", got, want)
	}
	_, err = c.DeregisterTargets(dereg)
	wantCode(t, err, clb.INVALIDPARAMETER) // no longer bound
}

func TestBatchRegisterTargetsPartialFailure(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "batch")
	ls := createListeners(t, c, lb, "TCP", 1000, 1001)
	http := createListeners(t, c, lb, "HTTP", 80)[0]
	loc := createRules(t, c, lb, http, rule("a.example.com", "/"))[0]

	bt := func(listener, ip string, port int64) *clb.BatchTarget {
		return &clb.BatchTarget{ListenerId: &listener, EniIp: &ip, Port: &port}
	}
	l7 := bt(http, "10.0.1.1", 80)
	l7.LocationId = &loc
	req := clb.NewBatchRegisterTargetsRequest()
	req.LoadBalancerId = &lb
	req.Targets = []*clb.BatchTarget{
		bt(ls[0], "10.0.0.1", 7000),
		bt("lbl-ghost001", "10.0.0.1", 7000),
		bt(ls[1], "10.0.0.2", 7000),
		bt(ls[1], "10.0.0.2", 7000), // duplicate: fails listener ls[1] as a whole
		bt(ls[1], "10.0.0.3", 7000),
		l7,
		bt(http, "10.0.1.2", 80), // L7 target without LocationId: fails the HTTP listener
	}
	resp, err := c.BatchRegisterTargets(req)
	must(t, err) // partial failure is not an error
	failed := common.StringValues(resp.Response.FailListenerIdSet)
	slices.Sort(failed)
	want := []string{"lbl-ghost001", ls[1], http}
	slices.Sort(want)
	if !slices.Equal(failed, want) {
		t.Fatalf("FailListenerIdSet = %v, want %v", failed, want)
	}
	if msg := *resp.Response.Message; !strings.Contains(msg, "Listener lbl-ghost001 not exists.") {
		t.Fatalf("Message %q does not explain the missing listener", msg)
	}
	if got := backendsOf(t, c, lb, ls[0]); !slices.Equal(got, []string{"10.0.0.1:7000/10"}) {
		t.Fatalf("ls[0] targets %v", got)
	}
	if got := backendsOf(t, c, lb, ls[1]); len(got) != 0 {
		t.Fatalf("failed listener got targets %v", got)
	}
	// Synchronous, yet pollable: its RequestId is a finished task.
	if s := waitTask(t, c, *resp.Response.RequestId); s != 0 {
		t.Fatalf("batch task status %d", s)
	}
	if status, ok := e.TaskStatus(*resp.Response.RequestId); !ok || status != 0 {
		t.Fatalf("TaskStatus = %d, %v", status, ok)
	}

	// Deregistration reports unbound targets the same way.
	dreq := clb.NewBatchDeregisterTargetsRequest()
	dreq.LoadBalancerId = &lb
	dreq.Targets = []*clb.BatchTarget{bt(ls[0], "10.0.0.1", 7000), bt(ls[1], "10.0.0.9", 7000)}
	dresp, err := c.BatchDeregisterTargets(dreq)
	must(t, err)
	if got := common.StringValues(dresp.Response.FailListenerIdSet); !slices.Equal(got, []string{ls[1]}) {
		t.Fatalf("deregister FailListenerIdSet = %v", got)
	}
	if got := backendsOf(t, c, lb, ls[0]); len(got) != 0 {
		t.Fatalf("ls[0] still has %v", got)
	}
}

func TestBatchLimits(t *testing.T) {
	cfg := instant()
	cfg.TargetQuota = 1000
	_, _, c := env(t, cfg)
	lb := createLB(t, c, "limits")
	l := createListeners(t, c, lb, "UDP", 5000)[0]
	targets := func(n int) []*clb.BatchTarget {
		var out []*clb.BatchTarget
		for i := range n {
			out = append(out, &clb.BatchTarget{ListenerId: &l, EniIp: common.StringPtr(fmt.Sprintf("10.2.%d.%d", i/250, i%250+1)), Port: common.Int64Ptr(9000)})
		}
		return out
	}
	req := clb.NewBatchRegisterTargetsRequest()
	req.LoadBalancerId, req.Targets = &lb, targets(501)
	_, err := c.BatchRegisterTargets(req)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_LENGTH)
	req.Targets = targets(500)
	resp, err := c.BatchRegisterTargets(req)
	must(t, err)
	if len(resp.Response.FailListenerIdSet) != 0 {
		t.Fatalf("500 targets failed: %s", *resp.Response.Message)
	}
	if got := len(describeTargets(t, c, lb, nil)[0].Targets); got != 500 {
		t.Fatalf("%d targets bound, want 500", got)
	}

	bm := clb.NewBatchModifyTargetWeightRequest()
	bm.LoadBalancerId = &lb
	rule := &clb.RsWeightRule{ListenerId: &l, Weight: common.Int64Ptr(7)}
	for _, t := range targets(51) {
		rule.Targets = append(rule.Targets, &clb.Target{EniIp: t.EniIp, Port: t.Port})
	}
	bm.ModifyList = []*clb.RsWeightRule{rule}
	_, err = c.BatchModifyTargetWeight(bm)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_LENGTH) // more than 50 targets in one rule
	rule.Targets = rule.Targets[:50]
	rule.Targets[1].Weight = common.Int64Ptr(90) // a target's own weight wins
	mresp, err := c.BatchModifyTargetWeight(bm)
	must(t, err)
	waitTask(t, c, *mresp.Response.RequestId)
	weights := map[int64]int{}
	for _, b := range describeTargets(t, c, lb, nil)[0].Targets {
		weights[*b.Weight]++
	}
	if weights[7] != 49 || weights[90] != 1 || weights[10] != 450 {
		t.Fatalf("weights after BatchModifyTargetWeight: %v", weights)
	}
	rule.ListenerId = common.StringPtr("lbl-nothere")
	_, err = c.BatchModifyTargetWeight(bm)
	wantCode(t, err, clb.INVALIDPARAMETER_LISTENERIDNOTFOUND)
}

func TestDescribeTargetsFilters(t *testing.T) {
	_, _, c := env(t, instant())
	lb := createLB(t, c, "filters")
	ls := createListeners(t, c, lb, "TCP", 1, 2)
	udp := createListeners(t, c, lb, "UDP", 1)[0]
	req := clb.NewBatchRegisterTargetsRequest()
	req.LoadBalancerId = &lb
	for i, l := range append(ls, udp) {
		req.Targets = append(req.Targets, &clb.BatchTarget{ListenerId: common.StringPtr(l), EniIp: common.StringPtr(fmt.Sprintf("10.0.0.%d", i+1)),
			Port: common.Int64Ptr(80), Tag: common.StringPtr([]string{"blue", "green", "blue"}[i])})
	}
	_, err := c.BatchRegisterTargets(req)
	must(t, err)

	if got := describeTargets(t, c, lb, func(r *clb.DescribeTargetsRequest) { r.Protocol = common.StringPtr("UDP") }); len(got) != 1 || *got[0].ListenerId != udp {
		t.Fatalf("Protocol=UDP -> %d listeners", len(got))
	}
	if got := describeTargets(t, c, lb, func(r *clb.DescribeTargetsRequest) { r.Port = common.Int64Ptr(1) }); len(got) != 2 {
		t.Fatalf("Port=1 -> %d listeners, want TCP and UDP", len(got))
	}
	byIP := describeTargets(t, c, lb, func(r *clb.DescribeTargetsRequest) {
		r.Filters = []*clb.Filter{{Name: common.StringPtr("private-ip-address"), Values: common.StringPtrs([]string{"10.0.0.2"})}}
	})
	if len(byIP) != 1 || *byIP[0].ListenerId != ls[1] {
		t.Fatalf("private-ip-address filter -> %d listeners", len(byIP))
	}
	byTag := describeTargets(t, c, lb, func(r *clb.DescribeTargetsRequest) {
		r.Filters = []*clb.Filter{{Name: common.StringPtr("tag"), Values: common.StringPtrs([]string{"blue"})}}
	})
	if len(byTag) != 2 {
		t.Fatalf("tag filter -> %d listeners, want 2", len(byTag))
	}
	dt := clb.NewDescribeTargetsRequest()
	dt.LoadBalancerId = &lb
	dt.ListenerIds = common.StringPtrs(make([]string, 21))
	_, err = c.DescribeTargets(dt)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_LENGTH)
	dt.ListenerIds = nil
	dt.Filters = []*clb.Filter{{Name: common.StringPtr("zone"), Values: common.StringPtrs([]string{"x"})}}
	_, err = c.DescribeTargets(dt)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_INVALIDFILTER)
	dt.Filters, dt.LoadBalancerId = nil, common.StringPtr("lb-nothere")
	_, err = c.DescribeTargets(dt)
	wantCode(t, err, clb.INVALIDPARAMETER_LBIDNOTFOUND)
}

func TestDescribeTargetHealth(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "health")
	tcp := createListeners(t, c, lb, "TCP", 80)[0]
	http := createListeners(t, c, lb, "HTTP", 8080)[0]
	loc := createRules(t, c, lb, http, rule("a.example.com", "/"))[0]
	req := clb.NewBatchRegisterTargetsRequest()
	req.LoadBalancerId = &lb
	req.Targets = []*clb.BatchTarget{
		{ListenerId: &tcp, EniIp: common.StringPtr("10.0.0.1"), Port: common.Int64Ptr(80)},
		{ListenerId: &tcp, EniIp: common.StringPtr("10.0.0.2"), Port: common.Int64Ptr(80)},
		{ListenerId: &http, LocationId: &loc, EniIp: common.StringPtr("10.0.0.3"), Port: common.Int64Ptr(80)},
	}
	_, err := c.BatchRegisterTargets(req)
	must(t, err)
	e.SetTargetHealth("10.0.0.2", 80, false)

	h := clb.NewDescribeTargetHealthRequest()
	h.LoadBalancerIds = common.StringPtrs([]string{lb})
	resp, err := c.DescribeTargetHealth(h)
	must(t, err)
	lbs := resp.Response.LoadBalancers
	if len(lbs) != 1 || *lbs[0].LoadBalancerId != lb || len(lbs[0].Listeners) != 2 {
		t.Fatalf("health answer: %+v", lbs)
	}
	status := map[string]string{}
	for _, l := range lbs[0].Listeners {
		if len(l.Rules) != 1 {
			t.Fatalf("listener %s has %d health rules, want 1", *l.ListenerId, len(l.Rules))
		}
		r := l.Rules[0]
		if !locationIDRe.MatchString(*r.LocationId) {
			t.Fatalf("health rule id %q", *r.LocationId)
		}
		if *l.Protocol == "TCP" && (r.Domain != nil || r.Url != nil) {
			t.Fatalf("an L4 health rule carries a domain or url")
		}
		for _, tg := range r.Targets {
			status[*tg.IP] = fmt.Sprintf("%v/%s", *tg.HealthStatus, *tg.HealthStatusDetail)
		}
	}
	want := map[string]string{"10.0.0.1": "true/Alive", "10.0.0.2": "false/Dead", "10.0.0.3": "true/Alive"}
	if fmt.Sprint(status) != fmt.Sprint(want) {
		t.Fatalf("health %v, want %v", status, want)
	}

	h.LoadBalancerIds = common.StringPtrs([]string{lb, "lb-nothere"})
	_, err = c.DescribeTargetHealth(h)
	wantCode(t, err, clb.INVALIDPARAMETER_LBIDNOTFOUND)
	h.LoadBalancerIds = common.StringPtrs(make([]string, 31))
	_, err = c.DescribeTargetHealth(h)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_LENGTH)
}

// TestDescribeTargetHealthProbes checks that ProbeTargets reports a
// loopback target that accepts connections Alive, one that refuses them
// Dead, and leaves other addresses to the simulated verdict.
func TestDescribeTargetHealthProbes(t *testing.T) {
	cfg := instant()
	cfg.ProbeTargets = true
	_, _, c := env(t, cfg)
	up, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { _ = up.Close() })
	down, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	downPort := int64(down.Addr().(*net.TCPAddr).Port)
	must(t, down.Close()) // nothing listens there any more
	upPort := int64(up.Addr().(*net.TCPAddr).Port)

	lb := createLB(t, c, "probe")
	tcp := createListeners(t, c, lb, "TCP", 80)[0]
	req := clb.NewBatchRegisterTargetsRequest()
	req.LoadBalancerId = &lb
	req.Targets = []*clb.BatchTarget{
		{ListenerId: &tcp, EniIp: common.StringPtr("127.0.0.1"), Port: common.Int64Ptr(upPort)},
		{ListenerId: &tcp, EniIp: common.StringPtr("127.0.0.1"), Port: common.Int64Ptr(downPort)},
		{ListenerId: &tcp, EniIp: common.StringPtr("10.0.0.9"), Port: common.Int64Ptr(80)},
	}
	_, err = c.BatchRegisterTargets(req)
	must(t, err)

	h := clb.NewDescribeTargetHealthRequest()
	h.LoadBalancerIds = common.StringPtrs([]string{lb})
	resp, err := c.DescribeTargetHealth(h)
	must(t, err)
	got := map[string]string{}
	for _, tg := range resp.Response.LoadBalancers[0].Listeners[0].Rules[0].Targets {
		got[fmt.Sprintf("%s:%d", *tg.IP, *tg.Port)] = fmt.Sprintf("%v/%s", *tg.HealthStatus, *tg.HealthStatusDetail)
	}
	want := map[string]string{
		fmt.Sprintf("127.0.0.1:%d", upPort):   "true/Alive",
		fmt.Sprintf("127.0.0.1:%d", downPort): "false/Dead",
		"10.0.0.9:80":                         "true/Alive",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("health %v, want %v", got, want)
	}
}

func TestRangeListenerTargets(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "range")
	req := newCreateListener(lb, "TCP", 30000)
	req.EndPort = common.Uint64Ptr(30009)
	resp, err := c.CreateListener(req)
	must(t, err)
	l := *resp.Response.ListenerIds[0]

	reg := clb.NewRegisterTargetsRequest()
	reg.LoadBalancerId, reg.ListenerId = &lb, &l
	reg.Targets = []*clb.Target{eni("10.0.0.1", 65530)} // 65530+9 leaves the port space
	_, err = c.RegisterTargets(reg)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_RANGE)
	reg.Targets = []*clb.Target{eni("127.0.0.1", 40000)}
	_, err = c.RegisterTargets(reg)
	must(t, err)

	routes := e.Routes()
	if len(routes) != 1 {
		t.Fatalf("routes %+v", routes)
	}
	r := routes[0]
	if r.Protocol != "TCP" || r.Port != 30000 || r.EndPort != 30009 || len(r.Targets) != 1 || r.Targets[0].Port != 40000 {
		t.Fatalf("range route %+v", r)
	}
}

// TestLongRangeListeners: port-range listeners as long as the API allows
// (EndPort up to 65535): tke-extend's segments of 10001 ports and one over
// every port, each one listener; targets whose range would pass 65535 are
// refused, as for any range.
func TestLongRangeListeners(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "long-ranges")
	var ids []string
	for _, start := range []int64{30000, 40001, 50002} {
		req := newCreateListener(lb, "UDP", start)
		req.EndPort = common.Uint64Ptr(uint64(start + 10000))
		resp, err := c.CreateListener(req)
		must(t, err)
		ids = append(ids, *resp.Response.ListenerIds[0])
	}
	// A segment past 65535 is refused.
	_, err := c.CreateListener(withEndPort(newCreateListener(lb, "TCP", 60003), 70003))
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_RANGE)
	all := newCreateListener(lb, "TCP", 1)
	all.EndPort = common.Uint64Ptr(65535)
	resp, err := c.CreateListener(all)
	must(t, err)
	every := *resp.Response.ListenerIds[0]
	if r := describeListener(t, c, lb, every); *r.Port != 1 || *r.EndPort != 65535 {
		t.Fatalf("listener over every port: %d-%d", *r.Port, *r.EndPort)
	}
	// Another TCP listener anywhere now clashes.
	_, err = c.CreateListener(newCreateListener(lb, "TCP", 8000))
	wantCode(t, err, clb.INVALIDPARAMETER_PORTCHECKFAILED)

	reg := clb.NewRegisterTargetsRequest()
	reg.LoadBalancerId, reg.ListenerId = &lb, &ids[1]
	reg.Targets = []*clb.Target{eni("10.0.0.1", 55536)} // 55536+10000 leaves the port space
	_, err = c.RegisterTargets(reg)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_RANGE)
	reg.Targets = []*clb.Target{eni("10.0.0.1", 7000)}
	_, err = c.RegisterTargets(reg)
	must(t, err)
	reg.ListenerId = &every
	reg.Targets = []*clb.Target{eni("10.0.0.2", 1)}
	_, err = c.RegisterTargets(reg)
	must(t, err)

	byPort := map[int]emulator.Route{}
	for _, r := range e.Routes() {
		byPort[r.Port] = r
	}
	if r := byPort[40001]; r.EndPort != 50001 || len(r.Targets) != 1 || r.Targets[0].Port != 7000 {
		t.Errorf("route of the second segment: %+v", r)
	}
	if r := byPort[1]; r.Protocol != "TCP" || r.EndPort != 65535 || len(r.Targets) != 1 || r.Targets[0].Port != 1 {
		t.Errorf("route over every port: %+v", r)
	}
}
