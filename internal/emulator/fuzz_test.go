package emulator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	tchttp "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/http"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// envelopeCheck is a RoundTripper that keeps the raw answer of the last
// request, so the fuzz target can check the envelope byte for byte.
type envelopeCheck struct {
	base   http.RoundTripper
	status int
	body   []byte
}

func (ec *envelopeCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := ec.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	ec.status, ec.body = resp.StatusCode, b
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// FuzzDecodeRequest sends arbitrary actions and bodies, signed by the real
// SDK, and requires a well-formed envelope with HTTP 200 and no handler
// panic every time. "@lb" and "@lbl" in a body become the ids of a live
// load balancer and listener, so mutations reach past the id lookups.
func FuzzDecodeRequest(f *testing.F) {
	seeds := []struct{ action, body string }{
		{"DescribeQuota", `{}`},
		{"DescribeLoadBalancers", `{"Filters":[{"Name":"tag:env","Values":["a"]}],"Limit":5}`},
		{"DescribeLoadBalancers", `{"Filters":[{"Name":null,"Values":[null]}],"LoadBalancerIds":[null]}`},
		{"CreateLoadBalancer", `{"LoadBalancerType":"OPEN","Tags":[null,{"TagKey":"k"}]}`},
		{"CreateLoadBalancer", `{"LoadBalancerType":"INTERNAL","VpcId":"vpc-1","SubnetId":"subnet-1","Number":3,"ClientToken":"x"}`},
		{"CreateListener", `{"LoadBalancerId":"@lb","Ports":[1,null,2],"Protocol":"TCP","EndPort":0}`},
		{"CreateListener", `{"LoadBalancerId":"@lb","Ports":[3000],"Protocol":"UDP","EndPort":3100,"HealthCheck":{"CheckType":"PING"}}`},
		{"CreateListener", `{"LoadBalancerId":"@lb","Ports":[443],"Protocol":"HTTPS","MultiCertInfo":{"CertList":[null]}}`},
		{"DescribeListeners", `{"LoadBalancerId":"@lb","ListenerIds":[null,"@lbl"],"Port":0}`},
		{"ModifyListener", `{"LoadBalancerId":"@lb","ListenerId":"@lbl","HealthCheck":{"TimeOut":9,"IntervalTime":3}}`},
		{"CreateRule", `{"LoadBalancerId":"@lb","ListenerId":"@lbl","Rules":[null,{"Url":"/","Domains":[null]}]}`},
		{"RegisterTargets", `{"LoadBalancerId":"@lb","ListenerId":"@lbl","Targets":[null,{"Port":1,"EniIp":"10.0.0.1"}]}`},
		{"BatchRegisterTargets", `{"LoadBalancerId":"@lb","Targets":[{"ListenerId":"@lbl","Port":1,"EniIp":"::1"},null]}`},
		{"BatchModifyTargetWeight", `{"LoadBalancerId":"@lb","ModifyList":[{"ListenerId":"@lbl","Targets":[null]}]}`},
		{"DescribeTargets", `{"LoadBalancerId":"@lb","Filters":[null]}`},
		{"DescribeTargetHealth", `{"LoadBalancerIds":["@lb",null]}`},
		{"DescribeTaskStatus", `{"DealName":""}`},
		{"DeleteLoadBalancerListeners", `{"LoadBalancerId":"@lb","ListenerIds":[null]}`},
		{"DeleteRule", `{"LoadBalancerId":"@lb","ListenerId":"@lbl","Domain":"a"}`},
		{"ModifyLoadBalancerAttributes", `{"LoadBalancerId":"@lb","TargetRegionInfo":{}}`},
		{"NoSuchAction", `{`},
		{"DescribeQuota", "\xff\xfe"},
		{"DescribeQuota", `null`},
		{"DescribeListeners", `{"LoadBalancerId":["@lb"]}`},
	}
	for _, s := range seeds {
		f.Add(s.action, []byte(s.body))
	}
	e, endpoint, err := emulator.Start(emulator.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = e.Close() })
	admin := emulatortest.DefaultClient(f, endpoint)
	shared := emulatortest.Transport()
	var lbID, listenerID string
	ensureLB := func(t *testing.T) {
		if _, ok := e.Inventory().LoadBalancer(lbID); ok && listenerID != "" {
			return
		}
		req := clb.NewCreateLoadBalancerRequest()
		req.LoadBalancerType = common.StringPtr("OPEN")
		resp, err := admin.CreateLoadBalancer(req)
		if err != nil {
			t.Fatal(err)
		}
		lbID = *resp.Response.LoadBalancerIds[0]
		lr := clb.NewCreateListenerRequest()
		lr.LoadBalancerId, lr.Protocol, lr.Ports = &lbID, common.StringPtr("HTTP"), common.Int64Ptrs([]int64{80})
		lresp, err := admin.CreateListener(lr)
		if err != nil {
			t.Fatal(err)
		}
		listenerID = *lresp.Response.ListenerIds[0]
	}

	f.Fuzz(func(t *testing.T, action string, body []byte) {
		ensureLB(t)
		body = bytes.ReplaceAll(body, []byte("@lbl"), []byte(listenerID))
		body = bytes.ReplaceAll(body, []byte("@lb"), []byte(lbID))
		check := &envelopeCheck{base: shared}
		cc := common.NewCommonClient(common.NewCredential(emulator.DefaultSecretID, emulator.DefaultSecretKey),
			emulator.DefaultRegion, emulatortest.ClientProfile(endpoint))
		cc.WithHttpTransport(check)
		req := tchttp.NewCommonRequest("clb", "2018-03-17", action)
		req.SetOctetStreamParameters(nil, body)
		err := cc.Send(req, tchttp.NewCommonResponse())
		if check.body == nil {
			return // the SDK or net/http refused to send it (e.g. a newline in the action)
		}
		var env struct {
			Response *struct {
				RequestID string `json:"RequestId"`
				Error     *struct{ Code, Message string }
			}
		}
		if check.status != http.StatusOK || json.Unmarshal(check.body, &env) != nil || env.Response == nil ||
			env.Response.RequestID == "" || (env.Response.Error != nil && env.Response.Error.Code == "") {
			t.Fatalf("action %q body %q: status %d, answer %s", action, body, check.status, check.body)
		}
		if (err == nil) != (env.Response.Error == nil) {
			t.Fatalf("SDK error %v does not match the envelope %s", err, check.body)
		}
		if n := e.PanicCount(); n != 0 {
			t.Fatalf("action %q body %q: %d handler panics", action, body, n)
		}
	})
}
