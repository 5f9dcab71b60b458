package clb

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// TestErrorsNeverCarryCredentials fails calls in every way a call fails —
// refused credentials, API errors, dropped connections, a handler panic,
// an HTTP error from a proxy, no server at all — and requires that no
// layer of the error the controllers log and put in conditions holds the
// secret key, the session token or the request's signature headers.
func TestErrorsNeverCarryCredentials(t *testing.T) {
	const (
		id    = "AKIDERRORTEST0000000000000000000"
		key   = "errortestsecretkey-000000000000"
		token = "errortest-session-token-00000000"
	)
	cfg := emulator.DefaultConfig()
	cfg.Credentials = []emulator.Credential{{SecretID: id, SecretKey: key, Token: token}}
	emu, endpoint := emulatortest.Start(t, cfg)

	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream failed", http.StatusBadGateway)
	}))
	t.Cleanup(proxy.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()

	conf := func(endpoint, key, token string) clients.Config {
		return clients.Config{SecretID: id, SecretKey: key, Token: token, Region: emulator.DefaultRegion, Endpoint: endpoint, Scheme: "http"}
	}
	cases := map[string]struct {
		cfg    clients.Config
		faults emulator.Faults
	}{
		"WrongToken":    {cfg: conf(endpoint, key, "another-token")},
		"WrongKey":      {cfg: conf(endpoint, "another-key", token)},
		"InternalError": {cfg: conf(endpoint, key, token), faults: emulator.Faults{Rules: []emulator.FaultRule{{Code: "InternalError"}}}},
		"Dropped":       {cfg: conf(endpoint, key, token), faults: emulator.Faults{Rules: []emulator.FaultRule{{Drop: true}}}},
		"HandlerPanic":  {cfg: conf(endpoint, key, token), faults: emulator.Faults{Rules: []emulator.FaultRule{{Panic: true}}}},
		"ProxyError":    {cfg: conf(strings.TrimPrefix(proxy.URL, "http://"), key, token)},
		"NoServer":      {cfg: conf(closed, key, token)},
	}
	forbidden := []string{key, token, "another-token", "another-key", "TC3-HMAC-SHA256", "Signature=", "Authorization", "X-TC-Token"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := emu.SetFaults(tc.faults); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = emu.SetFaults(emulator.Faults{}) })
			c, err := newTestPool(t, Options{}).Client(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.FindLoadBalancersByTag(testCtx(t), "k", "v")
			if err == nil {
				t.Fatal("the call succeeded; want it to fail")
			}
			// Every layer, as %v and %+v print it.
			var texts []string
			for e := err; e != nil; e = errors.Unwrap(e) {
				texts = append(texts, e.Error(), fmt.Sprintf("%+v", e))
			}
			for _, text := range texts {
				for _, f := range forbidden {
					if strings.Contains(text, f) {
						t.Errorf("the error holds %q: %s", f, text)
					}
				}
			}
			t.Logf("%s", err)
		})
	}
}
