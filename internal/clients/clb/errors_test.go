package clb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func TestClassifyCodes(t *testing.T) {
	cases := map[string]Class{
		"InvalidParameter.LBIdNotFound":                     NotFound,
		"InvalidParameter.ListenerIdNotFound":               NotFound,
		"InvalidParameter.LocationNotFound":                 NotFound,
		"ResourceNotFound":                                  NotFound,
		"ResourceNotFound.Listener":                         NotFound,
		"FailedOperation.ResourceInOperating":               Busy,
		"FailedOperation.InvalidLBStatus":                   Busy,
		"RequestLimitExceeded":                              Throttled,
		"RequestLimitExceeded.UinLimitExceeded":             Throttled,
		"RequestLimitExceeded.GlobalRegionUinLimitExceeded": Throttled,
		"FailedOperation.RateLimitExceeded":                 Throttled,
		"LimitExceeded":                                     Quota,
		"LimitExceeded.ListenerQuota":                       Quota,
		"ResourceInsufficient":                              Quota,
		"InvalidParameter":                                  Invalid,
		"InvalidParameter.PortCheckFailed":                  Invalid,
		"InvalidParameter.FormatError":                      Invalid,
		"InvalidParameter.ClientTokenLimitExceeded":         Invalid,
		"InvalidParameterValue":                             Invalid,
		"InvalidParameterValue.Duplicate":                   Invalid,
		"InvalidParameterValue.Length":                      Invalid,
		"InvalidParameterCombination":                       Invalid,
		"MissingParameter":                                  Invalid,
		"UnknownParameter":                                  Invalid,
		"UnsupportedOperation":                              Invalid,
		"FailedOperation.TargetNumCheckRisk":                Invalid,
		"AuthFailure.SignatureFailure":                      Auth,
		"AuthFailure.SecretIdNotFound":                      Auth,
		"UnauthorizedOperation":                             Auth,
		"UnauthorizedOperation.NoPermission":                Auth,
		"InternalError":                                     Transient,
		"InternalError.DbError":                             Transient,
		"ClientError.NetworkError":                          Transient,
		"ClientError.HttpStatusCodeError":                   Transient,
		"ServiceUnavailable":                                Transient,
		"FailedOperation":                                   Unknown,
		"ResourceInUse":                                     Unknown,
		"SomethingNew":                                      Unknown,
	}
	for code, want := range cases {
		sdk := sdkerrors.NewTencentCloudSDKError(code, "text that mentions NotFound and RequestLimitExceeded", "req-1")
		if got := Classify(sdk); got != want {
			t.Errorf("Classify(%s) = %s, want %s", code, got, want)
		}
		// Wrapping by us or by a caller keeps the class.
		wrapped := fmt.Errorf("outer: %w", wrapErr("do something", sdk))
		if got := Classify(wrapped); got != want {
			t.Errorf("Classify(wrapped %s) = %s, want %s", code, got, want)
		}
		if got := Code(wrapped); got != code {
			t.Errorf("Code(wrapped %s) = %q", code, got)
		}
	}
}

func TestClassifyNonAPIErrors(t *testing.T) {
	cases := []struct {
		err  error
		want Class
	}{
		{nil, Unknown},
		{errors.New("plain"), Unknown},
		{context.Canceled, Transient},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), Transient},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, Transient},
		{localErr("write", Busy, "busy"), Busy},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	if _, ok := NotYet(nil); IsNotFound(nil) || IsBusy(nil) || ok {
		t.Error("nil must not match any class")
	}
}

func TestErrorTextIsStableAndHasNoRequestID(t *testing.T) {
	a := wrapErr("create listener", sdkerrors.NewTencentCloudSDKError("InvalidParameter.PortCheckFailed", "port 80 is used", "6082314c-aaaa"))
	b := wrapErr("create listener", sdkerrors.NewTencentCloudSDKError("InvalidParameter.PortCheckFailed", "port 80 is used", "77777777-bbbb"))
	if a.Error() != b.Error() {
		t.Fatalf("messages differ between tries: %q vs %q", a, b)
	}
	if want := "cannot create listener: InvalidParameter.PortCheckFailed: port 80 is used"; a.Error() != want {
		t.Fatalf("message = %q, want %q", a, want)
	}
	// Transport errors carry ephemeral ports in the SDK's text.
	n1 := wrapErr("describe quota", sdkerrors.NewTencentCloudSDKError(codeNetworkError, "Fail to get response because read tcp 127.0.0.1:40001->127.0.0.1:9", ""))
	n2 := wrapErr("describe quota", sdkerrors.NewTencentCloudSDKError(codeNetworkError, "Fail to get response because read tcp 127.0.0.1:40002->127.0.0.1:9", ""))
	if n1.Error() != n2.Error() || Classify(n1) != Transient {
		t.Fatalf("network errors not stable: %q vs %q", n1, n2)
	}
}

// TestNotYet: a busy load balancer and an exhausted rate limit are "not
// yet", with a wait; failures that waiting does not fix, and server or
// network errors (which get the caller's normal backoff), are not.
func TestNotYet(t *testing.T) {
	for _, c := range []struct {
		code   string
		want   time.Duration
		notYet bool
	}{
		{codeResourceInOperating, time.Second, true},
		{"FailedOperation.InvalidLBStatus", time.Second, true},
		{"RequestLimitExceeded", 3 * time.Second, true},
		{"InternalError", 0, false},
		{"InvalidParameter.PortCheckFailed", 0, false},
		{"InvalidParameter.LBIdNotFound", 0, false},
	} {
		got, ok := NotYet(wrapErr("x", sdkerrors.NewTencentCloudSDKError(c.code, "m", "r")))
		if got != c.want || ok != c.notYet {
			t.Errorf("NotYet(%s) = %v, %v; want %v, %v", c.code, got, ok, c.want, c.notYet)
		}
	}
}

// TestLiveErrors checks classification and message stability on real
// answers of the emulator, through the SDK.
func TestLiveErrors(t *testing.T) {
	e, c := start(t, emulator.Config{}, Options{})
	ctx := testCtx(t)
	lb := createLB(t, c, "errors")
	createListeners(t, c, lb, "TCP", 80)

	// A port conflict, twice: same message both times, no RequestId in it.
	var msgs []string
	for range 2 {
		_, _, err := c.CreateListener(ctx, listenerRequest(lb, "TCP", 80))
		if !IsInvalid(err) || Code(err) != "InvalidParameter.PortCheckFailed" {
			t.Fatalf("port conflict: class %s code %q (%v)", Classify(err), Code(err), err)
		}
		var sdk *sdkerrors.TencentCloudSDKError
		if !errors.As(err, &sdk) || sdk.GetRequestId() == "" || strings.Contains(err.Error(), sdk.GetRequestId()) {
			t.Fatalf("message %q must not carry the RequestId of the answer it wraps", err)
		}
		if !strings.HasPrefix(err.Error(), "cannot create listener: InvalidParameter.PortCheckFailed: ") {
			t.Fatalf("message = %q", err)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] {
		t.Fatalf("message changed between tries: %q / %q", msgs[0], msgs[1])
	}

	if _, err := c.DescribeLoadBalancer(ctx, "lb-nothere0"); !IsNotFound(err) {
		t.Errorf("describe missing LB: %v", err)
	}
	if _, err := c.DeleteLoadBalancer(ctx, "lb-nothere0"); !IsNotFound(err) || Code(err) != "InvalidParameter.LBIdNotFound" {
		t.Errorf("delete missing LB: %v", err)
	}
	if _, err := c.DeleteListener(ctx, lb, "lbl-nothere0"); !IsNotFound(err) {
		t.Errorf("delete missing listener: %v", err)
	}
	if _, err := c.DescribeListener(ctx, lb, "lbl-nothere0"); !IsNotFound(err) {
		t.Errorf("describe missing listener: %v", err)
	}
	if _, err := c.DescribeTargets(ctx, "lb-nothere0", "lbl-nothere0"); !IsNotFound(err) {
		t.Errorf("describe targets of missing LB: %v", err)
	}
	if _, err := c.DescribeListeners(ctx, "lb-nothere0", "", 0); !IsNotFound(err) {
		t.Errorf("describe listeners of missing LB: %v", err)
	}
	// Local validation never reaches the API.
	before := e.CallCount("CreateListener")
	ports := make([]int64, 50)
	for i := range ports {
		ports[i] = int64(1000 + i)
	}
	if _, _, err := c.CreateListener(ctx, listenerRequest(lb, "TCP", ports...)); !IsInvalid(err) {
		t.Errorf("50 ports: %v", err)
	}
	if _, err := c.DeleteListeners(ctx, lb, nil); !IsInvalid(err) {
		t.Errorf("deleting with no ids must be refused (it would delete all): %v", err)
	}
	if e.CallCount("CreateListener") != before || e.CallCount("DeleteLoadBalancerListeners") != 0 {
		t.Error("locally refused calls reached the API")
	}
}

func TestAuthAndNetworkErrors(t *testing.T) {
	e, _ := start(t, emulator.Config{}, Options{})
	cfg := testConfig(e.Endpoint())
	cfg.SecretKey = "wrong"
	bad, err := newTestPool(t, Options{}).Client(cfg)
	must(t, err)
	if _, err := bad.DescribeQuota(testCtx(t)); Classify(err) != Auth {
		t.Errorf("wrong key: %s %v", Classify(err), err)
	}

	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	cfg = testConfig(addr)
	dead, err := newTestPool(t, Options{}).Client(cfg)
	must(t, err)
	_, err1 := dead.DescribeQuota(testCtx(t))
	_, err2 := dead.DescribeQuota(testCtx(t))
	if Classify(err1) != Transient || Code(err1) != codeNetworkError {
		t.Fatalf("connection refused: %s %v", Classify(err1), err1)
	}
	if err1.Error() != err2.Error() {
		t.Fatalf("network error text changes: %q / %q", err1, err2)
	}

	// A cancelled context is reported as such, not as a network error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := dead.DescribeQuota(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
