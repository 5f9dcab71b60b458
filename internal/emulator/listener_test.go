package emulator_test

import (
	"slices"
	"strings"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func newCreateListener(lb, protocol string, ports ...int64) *clb.CreateListenerRequest {
	req := clb.NewCreateListenerRequest()
	req.LoadBalancerId, req.Protocol, req.Ports = &lb, &protocol, common.Int64Ptrs(ports)
	return req
}

func TestCreateListenerAndDescribe(t *testing.T) {
	_, _, c := env(t, instant())
	lb := createLB(t, c, "listeners")

	req := newCreateListener(lb, "TCP", 8000, 8001)
	req.ListenerNames = common.StringPtrs([]string{"game-a", "game-b"})
	req.HealthCheck = &clb.HealthCheck{HealthSwitch: common.Int64Ptr(0), SourceIpType: common.Int64Ptr(1)}
	req.Scheduler = common.StringPtr("LEAST_CONN")
	req.SessionExpireTime = common.Int64Ptr(60)
	resp, err := c.CreateListener(req)
	must(t, err)
	ids := common.StringValues(resp.Response.ListenerIds)
	if len(ids) != 2 || !listenerIDRe.MatchString(ids[0]) || ids[0] == ids[1] {
		t.Fatalf("ListenerIds = %v", ids)
	}
	waitTask(t, c, *resp.Response.RequestId)

	l := describeListener(t, c, lb, ids[1])
	if *l.Port != 8001 || *l.ListenerName != "game-b" || *l.Protocol != "TCP" || *l.Scheduler != "LEAST_CONN" ||
		*l.SessionExpireTime != 60 || *l.EndPort != 0 || *l.SniSwitch != 0 || !timePattern.MatchString(*l.CreateTime) {
		t.Fatalf("listener = %+v", l)
	}
	if hc := l.HealthCheck; hc == nil || *hc.HealthSwitch != 0 || *hc.SourceIpType != 1 || *hc.TimeOut != 2 {
		t.Fatalf("HealthCheck = %+v (want the request merged over the defaults)", hc)
	}

	// Other protocols, including a port range and the L7 ones.
	rng := newCreateListener(lb, "UDP", 20000)
	rng.EndPort = common.Uint64Ptr(20099)
	resp, err = c.CreateListener(rng)
	must(t, err)
	rangeID := *resp.Response.ListenerIds[0]
	createListeners(t, c, lb, "HTTP", 80)
	createListeners(t, c, lb, "HTTPS", 443)
	createListeners(t, c, lb, "TCP_SSL", 8443)
	createListeners(t, c, lb, "QUIC", 8443) // QUIC is UDP: no clash with TCP_SSL 8443

	dl := clb.NewDescribeListenersRequest()
	dl.LoadBalancerId = &lb
	all, err := c.DescribeListeners(dl)
	must(t, err)
	if *all.Response.TotalCount != 7 {
		t.Fatalf("TotalCount = %d, want 7", *all.Response.TotalCount)
	}
	if r := describeListener(t, c, lb, rangeID); *r.Port != 20000 || *r.EndPort != 20099 {
		t.Fatalf("range listener %d-%d", *r.Port, *r.EndPort)
	}

	dl.Protocol = common.StringPtr("HTTPS")
	https, err := c.DescribeListeners(dl)
	must(t, err)
	if len(https.Response.Listeners) != 1 || https.Response.Listeners[0].Certificate == nil ||
		*https.Response.Listeners[0].Certificate.SSLMode != "UNIDIRECTIONAL" {
		t.Fatalf("HTTPS listener: %+v", https.Response.Listeners)
	}
	dl.Protocol, dl.Port = nil, common.Int64Ptr(8443)
	byPort, err := c.DescribeListeners(dl)
	must(t, err)
	if *byPort.Response.TotalCount != 2 {
		t.Fatalf("Port 8443 -> %d listeners, want 2", *byPort.Response.TotalCount)
	}
	// Unknown listener ids are left out, not an error.
	dl.Port, dl.ListenerIds = nil, common.StringPtrs([]string{ids[0], "lbl-00000000"})
	some, err := c.DescribeListeners(dl)
	must(t, err)
	if *some.Response.TotalCount != 1 {
		t.Fatalf("known+unknown ids -> %d listeners", *some.Response.TotalCount)
	}
	dl.ListenerIds = common.StringPtrs(make([]string, 101))
	_, err = c.DescribeListeners(dl)
	wantCode(t, err, "InvalidParameterValue.Length")
}

func TestCreateListenerPortConflicts(t *testing.T) {
	cfg := instant()
	cfg.ListenerQuota = 100
	e, _, c := env(t, cfg)
	lb := createLB(t, c, "ports")
	createListeners(t, c, lb, "TCP", 8000)
	rng := newCreateListener(lb, "TCP", 9000)
	rng.EndPort = common.Uint64Ptr(9010)
	_, err := c.CreateListener(rng)
	must(t, err)

	cases := map[string]struct {
		req  *clb.CreateListenerRequest
		want string
	}{
		"SamePort":              {newCreateListener(lb, "TCP", 8000), clb.INVALIDPARAMETER_PORTCHECKFAILED},
		"SameFamilyHTTP":        {newCreateListener(lb, "HTTP", 8000), clb.INVALIDPARAMETER_PORTCHECKFAILED},
		"InsideRange":           {newCreateListener(lb, "TCP", 9005), clb.INVALIDPARAMETER_PORTCHECKFAILED},
		"RangeEnd":              {newCreateListener(lb, "TCP", 9010), clb.INVALIDPARAMETER_PORTCHECKFAILED},
		"OneOfManyClashes":      {newCreateListener(lb, "TCP", 7000, 8000), clb.INVALIDPARAMETER_PORTCHECKFAILED},
		"DuplicateInRequest":    {newCreateListener(lb, "TCP", 7000, 7000), clb.INVALIDPARAMETERVALUE_DUPLICATE},
		"PortOutOfRange":        {newCreateListener(lb, "TCP", 70000), clb.INVALIDPARAMETERVALUE_RANGE},
		"FiftyPorts":            {newCreateListener(lb, "TCP", seq(30000, 50)...), clb.INVALIDPARAMETERVALUE_LENGTH},
		"UnknownProtocol":       {newCreateListener(lb, "SCTP", 7000), clb.INVALIDPARAMETERVALUE},
		"UnknownLoadBalancer":   {newCreateListener("lb-nothere", "TCP", 7000), clb.INVALIDPARAMETER_LBIDNOTFOUND},
		"HTTPSWithoutCert":      {newCreateListener(lb, "HTTPS", 7443), clb.MISSINGPARAMETER},
		"L4SchedulerIPHash":     {withScheduler(newCreateListener(lb, "TCP", 7001), "IP_HASH"), clb.INVALIDPARAMETERVALUE},
		"RangeWithTwoPorts":     {withEndPort(newCreateListener(lb, "TCP", 7100, 7101), 7200), clb.INVALIDPARAMETERVALUE},
		"RangeOverlapsListener": {withEndPort(newCreateListener(lb, "TCP", 7990), 8005), clb.INVALIDPARAMETER_PORTCHECKFAILED},
		"RangeBackwards":        {withEndPort(newCreateListener(lb, "UDP", 7990), 7000), clb.INVALIDPARAMETERVALUE_RANGE},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.CreateListener(tc.req)
			wantCode(t, err, tc.want)
		})
	}
	// 49 ports is the largest accepted batch.
	_, err = c.CreateListener(newCreateListener(lb, "UDP", seq(30000, 49)...))
	must(t, err)
	// TCP and UDP may share a port, and a UDP range may cover a TCP port.
	_, err = c.CreateListener(newCreateListener(lb, "UDP", 8000))
	must(t, err)

	inv, _ := e.Inventory().LoadBalancer(lb)
	type key struct {
		fam  string
		port int
	}
	used := map[key]string{}
	for _, l := range inv.Listeners {
		fam := "TCP"
		if l.Protocol == "UDP" || l.Protocol == "QUIC" {
			fam = "UDP"
		}
		for p := l.Port; p <= max(l.Port, l.EndPort); p++ {
			if other, dup := used[key{fam, p}]; dup {
				t.Fatalf("port %s/%d held by %s and %s", fam, p, other, l.ID)
			}
			used[key{fam, p}] = l.ID
		}
	}
	if got := len(inv.Listeners); got != 2+49+1 {
		t.Fatalf("%d listeners, want 52", got)
	}
}

func withScheduler(r *clb.CreateListenerRequest, s string) *clb.CreateListenerRequest {
	r.Scheduler = &s
	return r
}

func withEndPort(r *clb.CreateListenerRequest, end uint64) *clb.CreateListenerRequest {
	r.EndPort = &end
	return r
}

func seq(from int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

func TestListenerQuota(t *testing.T) {
	cfg := instant()
	cfg.ListenerQuota = 5
	_, _, c := env(t, cfg)
	lb := createLB(t, c, "quota")
	// A port range listener counts as one listener however many ports it spans.
	rng := newCreateListener(lb, "TCP", 10000)
	rng.EndPort = common.Uint64Ptr(10999)
	_, err := c.CreateListener(rng)
	must(t, err)
	createListeners(t, c, lb, "TCP", 1, 2, 3)
	_, err = c.CreateListener(newCreateListener(lb, "TCP", 4, 5))
	wantCode(t, err, clb.LIMITEXCEEDED)
	createListeners(t, c, lb, "UDP", 4)
	_, err = c.CreateListener(newCreateListener(lb, "UDP", 5))
	wantCode(t, err, clb.LIMITEXCEEDED)
}

func TestModifyListener(t *testing.T) {
	_, _, c := env(t, instant())
	lb := createLB(t, c, "modify")
	tcp := createListeners(t, c, lb, "TCP", 80)[0]
	https := createListeners(t, c, lb, "HTTPS", 443)[0]

	req := clb.NewModifyListenerRequest()
	req.LoadBalancerId, req.ListenerId = &lb, &tcp
	req.ListenerName = common.StringPtr("renamed")
	req.Scheduler = common.StringPtr("IP_HASH")
	req.HealthCheck = &clb.HealthCheck{IntervalTime: common.Int64Ptr(10)}
	resp, err := c.ModifyListener(req)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	l := describeListener(t, c, lb, tcp)
	if *l.ListenerName != "renamed" || *l.Scheduler != "IP_HASH" || *l.HealthCheck.IntervalTime != 10 || *l.HealthCheck.HealthSwitch != 1 || *l.Port != 80 {
		t.Fatalf("after modify: %+v / %+v", l, l.HealthCheck)
	}

	bad := clb.NewModifyListenerRequest()
	bad.LoadBalancerId, bad.ListenerId = &lb, common.StringPtr("lbl-nothere")
	bad.ListenerName = common.StringPtr("x")
	_, err = c.ModifyListener(bad)
	wantCode(t, err, clb.INVALIDPARAMETER_LISTENERIDNOTFOUND)

	bad.ListenerId = &tcp
	bad.HealthCheck = &clb.HealthCheck{TimeOut: common.Int64Ptr(30), IntervalTime: common.Int64Ptr(5)}
	_, err = c.ModifyListener(bad)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE)

	sni := clb.NewModifyListenerRequest()
	sni.LoadBalancerId, sni.ListenerId, sni.SniSwitch = &lb, &https, common.Int64Ptr(1)
	resp, err = c.ModifyListener(sni)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	sni.SniSwitch = common.Int64Ptr(0)
	_, err = c.ModifyListener(sni)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE) // SNI cannot be switched back off
}

func TestDeleteListenerAndDeleteLoadBalancerListeners(t *testing.T) {
	e, _, c := env(t, instant())
	lb := createLB(t, c, "deletes")
	ids := createListeners(t, c, lb, "TCP", 1, 2, 3, 4, 5)

	del := clb.NewDeleteListenerRequest()
	del.LoadBalancerId, del.ListenerId = &lb, &ids[0]
	resp, err := c.DeleteListener(del)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	if describeListener(t, c, lb, ids[0]) != nil {
		t.Fatalf("deleted listener still described")
	}
	_, err = c.DeleteListener(del)
	wantCode(t, err, clb.INVALIDPARAMETER_LISTENERIDNOTFOUND)

	batch := clb.NewDeleteLoadBalancerListenersRequest()
	batch.LoadBalancerId = &lb
	batch.ListenerIds = common.StringPtrs([]string{ids[1], "lbl-missing1", "lbl-missing2"})
	_, err = c.DeleteLoadBalancerListeners(batch)
	msg := wantCode(t, err, clb.INVALIDPARAMETER)
	if !strings.Contains(msg, "some ListenerId") || !strings.Contains(msg, "not found") ||
		!strings.Contains(msg, "lbl-missing1") || !strings.Contains(msg, "lbl-missing2") {
		t.Fatalf("message %q does not name the missing listeners", msg)
	}
	if got := e.Inventory().Listeners(); got != 4 {
		t.Fatalf("a failed batch delete removed listeners: %d left", got)
	}
	batch.ListenerIds = common.StringPtrs(make([]string, 21))
	_, err = c.DeleteLoadBalancerListeners(batch)
	wantCode(t, err, clb.INVALIDPARAMETERVALUE_LENGTH)

	batch.ListenerIds = common.StringPtrs(ids[1:3])
	resp2, err := c.DeleteLoadBalancerListeners(batch)
	must(t, err)
	waitTask(t, c, *resp2.Response.RequestId)
	inv, _ := e.Inventory().LoadBalancer(lb)
	var left []string
	for _, l := range inv.Listeners {
		left = append(left, l.ID)
	}
	slices.Sort(left)
	want := slices.Sorted(slices.Values(ids[3:]))
	if !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}

	// No ListenerIds: every listener goes.
	batch.ListenerIds = nil
	resp2, err = c.DeleteLoadBalancerListeners(batch)
	must(t, err)
	waitTask(t, c, *resp2.Response.RequestId)
	if got := e.Inventory().Listeners(); got != 0 {
		t.Fatalf("%d listeners left after deleting all", got)
	}
}

func TestListenersAreRegional(t *testing.T) {
	_, endpoint, c := env(t, instant())
	lb := createLB(t, c, "regional")
	other := newClientInRegion(t, endpoint, "ap-beijing")
	_, err := other.CreateListener(newCreateListener(lb, "TCP", 80))
	wantCode(t, err, clb.INVALIDPARAMETER_LBIDNOTFOUND)
}

func newClientInRegion(t *testing.T, endpoint, region string) *clb.Client {
	t.Helper()
	return newClient(t, endpoint, emulator.DefaultSecretID, region)
}

// CreateListener and ModifyListener agree on which listeners take a
// certificate: TCP_SSL (required), QUIC (optional), never TCP or UDP.
func TestQUICListenerCertificate(t *testing.T) {
	_, _, c := env(t, instant())
	lb := createLB(t, c, "quic-cert")
	cert := func() *clb.CertificateInput {
		return &clb.CertificateInput{SSLMode: common.StringPtr("UNIDIRECTIONAL"), CertId: common.StringPtr("cert-quic")}
	}

	withCert := newCreateListener(lb, "QUIC", 443)
	withCert.Certificate = cert()
	resp, err := c.CreateListener(withCert)
	must(t, err)
	waitTask(t, c, *resp.Response.RequestId)
	l := describeListener(t, c, lb, *resp.Response.ListenerIds[0])
	if l.Certificate == nil || l.Certificate.CertId == nil || *l.Certificate.CertId != "cert-quic" {
		t.Fatalf("QUIC listener created with a certificate reports %+v", l.Certificate)
	}

	bare := createListeners(t, c, lb, "QUIC", 444)[0] // a certificate is optional
	if l := describeListener(t, c, lb, bare); l.Certificate != nil {
		t.Fatalf("QUIC listener created without a certificate reports %+v", l.Certificate)
	}
	mod := clb.NewModifyListenerRequest()
	mod.LoadBalancerId, mod.ListenerId, mod.Certificate = &lb, &bare, cert()
	mr, err := c.ModifyListener(mod)
	must(t, err)
	waitTask(t, c, *mr.Response.RequestId)
	if l := describeListener(t, c, lb, bare); l.Certificate == nil || *l.Certificate.CertId != "cert-quic" {
		t.Fatalf("QUIC listener after ModifyListener reports %+v", l.Certificate)
	}

	ssl := newCreateListener(lb, "TCP_SSL", 443)
	_, err = c.CreateListener(ssl)
	wantCode(t, err, "MissingParameter")
	for _, proto := range []string{"UDP", "TCP"} {
		req := newCreateListener(lb, proto, 445)
		req.Certificate = cert()
		_, err = c.CreateListener(req)
		if msg := wantCode(t, err, "InvalidParameterValue"); !strings.Contains(msg, "QUIC") {
			t.Fatalf("%s with a certificate: message %q does not name the protocols that take one", proto, msg)
		}
	}
}
