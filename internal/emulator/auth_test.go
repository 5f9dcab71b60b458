package emulator_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	tchttp "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/http"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// rewrite is a RoundTripper that changes requests after the SDK signed them.
type rewrite struct {
	base http.RoundTripper
	fn   func(r *http.Request, body []byte) []byte
}

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	body = rw.fn(r, body)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return rw.base.RoundTrip(r)
}

func describeQuota(c *clb.Client) error {
	_, err := c.DescribeQuota(clb.NewDescribeQuotaRequest())
	return err
}

func TestSignatureTamperedBodyIsRejected(t *testing.T) {
	e, endpoint, c := env(t, instant())
	lb := createLB(t, c, "tamper")
	c.WithHttpTransport(rewrite{base: emulatortest.Transport(), fn: func(_ *http.Request, b []byte) []byte {
		return bytes.Replace(b, []byte("8000"), []byte("8001"), 1)
	}})
	req := clb.NewCreateListenerRequest()
	req.LoadBalancerId, req.Protocol, req.Ports = &lb, common.StringPtr("TCP"), common.Int64Ptrs([]int64{8000})
	_, err := c.CreateListener(req)
	wantCode(t, err, clb.AUTHFAILURE+".SignatureFailure")

	// Nothing was created: the tampered request never reached the handler.
	if n := e.Inventory().Listeners(); n != 0 {
		t.Fatalf("listeners after tampered request = %d, want 0", n)
	}
	// The same client without tampering works, so the key pair is right.
	must(t, describeQuota(emulatortest.DefaultClient(t, endpoint)))
}

func TestSignatureWrongHostIsRejected(t *testing.T) {
	_, _, c := env(t, instant())
	c.WithHttpTransport(rewrite{base: emulatortest.Transport(), fn: func(r *http.Request, b []byte) []byte {
		r.Host = strings.Replace(r.Host, "127.0.0.1", "localhost", 1) // same server, different signed host
		return b
	}})
	wantCode(t, describeQuota(c), "AuthFailure.SignatureFailure")
}

func TestMissingAuthorization(t *testing.T) {
	_, _, c := env(t, instant())
	c.WithHttpTransport(rewrite{base: emulatortest.Transport(), fn: func(r *http.Request, b []byte) []byte {
		r.Header.Del("Authorization")
		return b
	}})
	wantCode(t, describeQuota(c), "AuthFailure.InvalidAuthorization")
}

func TestUnknownSecretIDAndWrongKey(t *testing.T) {
	_, endpoint, _ := env(t, instant())
	unknown := emulatortest.NewSDKClient(t, endpoint, "AKIDunknown", emulator.DefaultSecretKey, emulator.DefaultRegion)
	wantCode(t, describeQuota(unknown), "AuthFailure.SecretIdNotFound")
	wrongKey := emulatortest.NewSDKClient(t, endpoint, emulator.DefaultSecretID, "not-the-key", emulator.DefaultRegion)
	wantCode(t, describeQuota(wrongKey), "AuthFailure.SignatureFailure")
}

func TestSignatureExpire(t *testing.T) {
	var skew time.Duration
	cfg := instant()
	cfg.Clock = func() time.Time { return time.Now().Add(skew) }
	_, _, c := env(t, cfg)

	skew = 4 * time.Minute // inside the ±5 minute window
	must(t, describeQuota(c))
	skew = 6 * time.Minute
	wantCode(t, describeQuota(c), "AuthFailure.SignatureExpire")
	skew = -6 * time.Minute
	wantCode(t, describeQuota(c), "AuthFailure.SignatureExpire")
}

// replay sends every request twice, the way the SDK's retries do, and
// returns the second answer.
type replay struct{ base http.RoundTripper }

func (rp replay) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	first := r.Clone(r.Context())
	first.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := rp.base.RoundTrip(first)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	second := r.Clone(r.Context())
	second.Body = io.NopCloser(bytes.NewReader(body))
	return rp.base.RoundTrip(second)
}

func TestIdenticalReplayIsAccepted(t *testing.T) {
	e, _, c := env(t, instant())
	c.WithHttpTransport(replay{base: emulatortest.Transport()})
	must(t, describeQuota(c))
	if got := e.Calls()["DescribeQuota"]["OK"]; got != 2 {
		t.Fatalf("DescribeQuota successes = %d, want 2 (original and replay)", got)
	}
}

func TestSessionToken(t *testing.T) {
	cfg := instant()
	cfg.Credentials = []emulator.Credential{{SecretID: "AKIDtemp", SecretKey: "tempkey", Token: "session-token"}}
	_, endpoint, _ := env(t, cfg)
	client := func(token string) *clb.Client {
		cred := common.NewTokenCredential("AKIDtemp", "tempkey", token)
		return emulatortest.NewSDKClientWithProfile(t, cred, emulator.DefaultRegion, emulatortest.ClientProfile(endpoint))
	}
	must(t, describeQuota(client("session-token")))
	wantCode(t, describeQuota(client("stolen-token")), clb.AUTHFAILURE_TOKENFAILURE)
	wantCode(t, describeQuota(client("")), clb.AUTHFAILURE_TOKENFAILURE)
}

// common sends a raw action through the SDK's generic client.
func commonCall(t *testing.T, endpoint, region, version, action string, set func(*tchttp.CommonRequest)) error {
	t.Helper()
	cred := common.NewCredential(emulator.DefaultSecretID, emulator.DefaultSecretKey)
	cc := common.NewCommonClient(cred, region, emulatortest.ClientProfile(endpoint))
	req := tchttp.NewCommonRequest("clb", version, action)
	if set != nil {
		set(req)
	}
	return cc.Send(req, tchttp.NewCommonResponse())
}

func TestProtocolErrors(t *testing.T) {
	e, endpoint, _ := env(t, instant())
	params := func(body string) func(*tchttp.CommonRequest) {
		return func(r *tchttp.CommonRequest) {
			if err := r.SetActionParameters(body); err != nil {
				t.Fatal(err)
			}
		}
	}
	raw := func(body string) func(*tchttp.CommonRequest) {
		return func(r *tchttp.CommonRequest) { r.SetOctetStreamParameters(nil, []byte(body)) }
	}
	cases := map[string]struct {
		region, version, action string
		set                     func(*tchttp.CommonRequest)
		want                    string
	}{
		"UnknownAction":   {emulator.DefaultRegion, "2018-03-17", "CreateTeleporter", nil, "InvalidAction"},
		"WrongVersion":    {emulator.DefaultRegion, "2017-03-12", "DescribeQuota", nil, "NoSuchVersion"},
		"MalformedJSON":   {emulator.DefaultRegion, "2018-03-17", "DescribeListeners", raw(`{"LoadBalancerId":`), "InvalidParameter"},
		"TrailingGarbage": {emulator.DefaultRegion, "2018-03-17", "DescribeQuota", raw(`{} {}`), "InvalidParameter"},
		"NotAnObject":     {emulator.DefaultRegion, "2018-03-17", "DescribeQuota", raw(`[1,2]`), "InvalidParameter.FormatError"},
		"WrongType":       {emulator.DefaultRegion, "2018-03-17", "DescribeListeners", params(`{"LoadBalancerId":5}`), "InvalidParameter.FormatError"},
		"UnknownField":    {emulator.DefaultRegion, "2018-03-17", "DescribeQuota", params(`{"Teleport":true}`), "UnknownParameter"},
		"MissingRequired": {emulator.DefaultRegion, "2018-03-17", "DescribeListeners", params(`{}`), "MissingParameter"},
		"MissingRegion":   {"", "2018-03-17", "DescribeQuota", nil, "MissingParameter"},
		"UnknownRegion":   {"xx-nowhere", "2018-03-17", "DescribeQuota", nil, "InvalidParameter.RegionNotFound"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantCode(t, commonCall(t, endpoint, tc.region, tc.version, tc.action, tc.set), tc.want)
		})
	}
	if n := e.PanicCount(); n != 0 {
		t.Fatalf("%d handler panics", n)
	}
}

func TestUnsignedPayload(t *testing.T) {
	_, endpoint, _ := env(t, instant())
	cpf := emulatortest.ClientProfile(endpoint)
	cpf.UnsignedPayload = true // signs "UNSIGNED-PAYLOAD" instead of the body hash
	c := emulatortest.NewSDKClientWithProfile(t, common.NewCredential(emulator.DefaultSecretID, emulator.DefaultSecretKey), emulator.DefaultRegion, cpf)
	must(t, describeQuota(c))
	lb := createLB(t, c, "unsigned")
	if len(lb) == 0 {
		t.Fatal("no load balancer")
	}
}

func TestRequestSizeLimit(t *testing.T) {
	_, endpoint, _ := env(t, instant())
	huge := `{"LoadBalancerName":"` + strings.Repeat("x", 11<<20) + `"}`
	err := commonCall(t, endpoint, emulator.DefaultRegion, "2018-03-17", "DescribeLoadBalancers", func(r *tchttp.CommonRequest) {
		r.SetOctetStreamParameters(nil, []byte(huge))
	})
	wantCode(t, err, "RequestSizeLimitExceeded")
}
