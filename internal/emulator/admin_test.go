package emulator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// admin calls the admin API and decodes its JSON answer into out.
func admin(t *testing.T, endpoint, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+endpoint+"/_emulator/"+path, bytes.NewBufferString(body))
	must(t, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func TestAdminEndpoint(t *testing.T) {
	_, endpoint, c := env(t, instant())
	var health map[string]any
	if admin(t, endpoint, "GET", "healthz", "", &health) != 200 || health["ok"] != true {
		t.Fatalf("healthz: %v", health)
	}
	lb := createLB(t, c, "admin")
	createListeners(t, c, lb, "TCP", 80)

	var inv emulator.Inventory
	admin(t, endpoint, "GET", "inventory", "", &inv)
	if len(inv.LoadBalancers) != 1 || inv.LoadBalancers[0].ID != lb || len(inv.LoadBalancers[0].Listeners) != 1 {
		t.Fatalf("inventory %+v", inv)
	}
	var calls map[string]map[string]int
	admin(t, endpoint, "GET", "calls", "", &calls)
	if calls["CreateLoadBalancer"]["OK"] != 1 || calls["CreateListener"]["OK"] != 1 {
		t.Fatalf("calls %v", calls)
	}

	if s := admin(t, endpoint, "POST", "faults", `{"Rules":[{"Action":"DescribeQuota","Code":"ResourceUnavailable"}]}`, nil); s != 200 {
		t.Fatalf("POST faults: %d", s)
	}
	wantCode(t, describeQuota(c), clb.RESOURCEUNAVAILABLE)
	admin(t, endpoint, "DELETE", "faults", "", nil)
	must(t, describeQuota(c))

	var lat emulator.LatencyJSON
	if s := admin(t, endpoint, "POST", "latency", `{"Fixed":"5ms","PerAction":{"CreateListener":"1s"}}`, &lat); s != 200 || lat.Fixed != "5ms" || lat.PerAction["CreateListener"] != "1s" {
		t.Fatalf("latency: %d %+v", s, lat)
	}
	if s := admin(t, endpoint, "POST", "latency", `{"Fixed":"soon"}`, nil); s != 400 {
		t.Fatalf("bad latency accepted: %d", s)
	}
	admin(t, endpoint, "POST", "latency", `{"Fixed":"0s"}`, nil)

	admin(t, endpoint, "POST", "policy", `{"SecretId":"`+emulator.DefaultSecretID+`","Actions":["DescribeLoadBalancers"]}`, nil)
	wantCode(t, describeQuota(c), clb.UNAUTHORIZEDOPERATION)
	admin(t, endpoint, "POST", "policy", `{"SecretId":"`+emulator.DefaultSecretID+`","Actions":null}`, nil)
	must(t, describeQuota(c))
	var pols map[string]emulator.CAMPolicy
	if s := admin(t, endpoint, "POST", "policy", `{"SecretId":"`+emulator.DefaultSecretID+`","Policy":{"version":"2.0","statement":[`+
		`{"effect":"allow","action":"*","resource":"*"},{"effect":"deny","action":"clb:DescribeQuota","resource":"*"}]}}`, &pols); s != 200 ||
		len(pols[emulator.DefaultSecretID].Statement) != 2 {
		t.Fatalf("CAM policy: %d %+v", s, pols)
	}
	wantCode(t, describeQuota(c), clb.UNAUTHORIZEDOPERATION)
	if s := admin(t, endpoint, "POST", "policy", `{"SecretId":"`+emulator.DefaultSecretID+`","Policy":{"version":"2.0"}}`, nil); s != 400 {
		t.Fatalf("a CAM policy without statements accepted: %d", s)
	}
	admin(t, endpoint, "POST", "policy", `{"SecretId":"`+emulator.DefaultSecretID+`"}`, nil)
	must(t, describeQuota(c))

	var rl emulator.RateLimitJSON
	admin(t, endpoint, "POST", "ratelimit", `{"PerSecond":0,"PerAction":{"DescribeQuota":1}}`, &rl)
	if rl.PerAction["DescribeQuota"] != 1 {
		t.Fatalf("ratelimit %+v", rl)
	}
	must(t, describeQuota(c))
	wantCode(t, describeQuota(c), clb.REQUESTLIMITEXCEEDED)
	admin(t, endpoint, "POST", "ratelimit", `{"PerSecond":0}`, nil)

	admin(t, endpoint, "POST", "reset?scope=counters", "", nil)
	calls = nil
	admin(t, endpoint, "GET", "calls", "", &calls)
	if len(calls) != 0 {
		t.Fatalf("calls after counter reset: %v", calls)
	}
	admin(t, endpoint, "POST", "reset", "", nil)
	inv = emulator.Inventory{}
	admin(t, endpoint, "GET", "inventory", "", &inv)
	if len(inv.LoadBalancers) != 0 {
		t.Fatalf("inventory after reset: %+v", inv)
	}

	if s := admin(t, endpoint, "GET", "teleport", "", nil); s != 404 {
		t.Fatalf("unknown admin path: %d", s)
	}
	if s := admin(t, endpoint, "DELETE", "inventory", "", nil); s != 405 {
		t.Fatalf("wrong method: %d", s)
	}
	if s := admin(t, endpoint, "POST", "faults", `{"Rulez":[]}`, nil); s != 400 {
		t.Fatalf("unknown field accepted: %d", s)
	}
}
