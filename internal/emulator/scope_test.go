package emulator_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// tc3Request is a DescribeQuota request signed the way Tencent Cloud SDKs
// sign, written independently of the emulator: scopeService goes into the
// credential scope and keyService into the signing key (the same unless a
// test wants them to disagree); host is the Host header sent, signedHost the
// one signed (host when empty).
func tc3Request(t *testing.T, endpoint, host, signedHost, scopeService, keyService string) *http.Request {
	t.Helper()
	if signedHost == "" {
		signedHost = host
	}
	body := []byte(`{}`)
	ts := time.Now().Unix()
	date := time.Unix(ts, 0).UTC().Format("2006-01-02")
	hexSHA := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}

	canonical := "POST\n/\n\ncontent-type:application/json\nhost:" + signedHost + "\n\ncontent-type;host\n" + hexSHA(body)
	toSign := "TC3-HMAC-SHA256\n" + strconv.FormatInt(ts, 10) + "\n" + date + "/" + scopeService + "/tc3_request\n" +
		hexSHA([]byte(canonical))
	key := mac(mac(mac([]byte("TC3"+emulator.DefaultSecretKey), date), keyService), "tc3_request")

	r, err := http.NewRequest(http.MethodPost, "http://"+endpoint+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Host = host
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-TC-Action", "DescribeQuota")
	r.Header.Set("X-TC-Version", "2018-03-17")
	r.Header.Set("X-TC-Region", emulator.DefaultRegion)
	r.Header.Set("X-TC-Timestamp", strconv.FormatInt(ts, 10))
	r.Header.Set("Authorization", "TC3-HMAC-SHA256 Credential="+emulator.DefaultSecretID+"/"+date+"/"+scopeService+
		"/tc3_request, SignedHeaders=content-type;host, Signature="+hex.EncodeToString(mac(key, toSign)))
	return r
}

// send returns the API error code and message of the answer ("" when OK).
func send(t *testing.T, r *http.Request) (code, message string) {
	t.Helper()
	resp, err := emulatortest.Transport().RoundTrip(r)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Response struct {
			Error *struct{ Code, Message string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	if out.Response.Error == nil {
		return "", ""
	}
	return out.Response.Error.Code, out.Response.Error.Message
}

// The credential scope's service is accepted when it is clb (what the Go
// SDK signs) or the first dot-separated label of the Host header the request
// was sent to (what the Node.js SDK derives from its endpoint); anything else
// is refused with the scope the emulator expected. The signed host may lack
// the port the Host header carries, as the Node.js SDK signs it.
func TestCredentialScopeService(t *testing.T) {
	_, endpoint := emulatortest.Start(t, instant())
	port := endpoint[strings.LastIndex(endpoint, ":")+1:]
	localhost := "localhost:" + port
	cases := []struct {
		name, host, signedHost, scope, key string
		wantMessage                        []string // empty: accepted
	}{
		{name: "clb on IP", host: endpoint, scope: "clb", key: "clb"},
		{name: "clb on localhost", host: localhost, scope: "clb", key: "clb"},
		{name: "clb on a dotted name", host: "lb.example.test:" + port, scope: "clb", key: "clb"},
		{name: "first label of IP", host: endpoint, scope: "127", key: "127"},
		{name: "host without a dot keeps its port", host: localhost, scope: localhost, key: localhost},
		{name: "first label of a dotted name", host: "lb.example.test:" + port, scope: "lb", key: "lb"},
		{name: "wrong service", host: endpoint, scope: "cvm", key: "cvm",
			wantMessage: []string{"/cvm/tc3_request", "/clb/tc3_request", `"127"`}},
		{name: "label of another host", host: localhost, scope: "127", key: "127",
			wantMessage: []string{"/127/tc3_request", "/clb/tc3_request", `"` + localhost + `"`}},
		{name: "host without a dot, port dropped", host: localhost, scope: "localhost", key: "localhost",
			wantMessage: []string{"/localhost/tc3_request", "/clb/tc3_request"}},
		{name: "empty service", host: endpoint, scope: "", key: "",
			wantMessage: []string{"//tc3_request", "/clb/tc3_request"}},
		// The Node.js SDK signs the host name without the port it sends.
		{name: "host signed without its port", host: endpoint, signedHost: "127.0.0.1", scope: "127", key: "127"},
		{name: "another host signed", host: endpoint, signedHost: "127.0.0.2", scope: "127", key: "127",
			wantMessage: []string{"could not be validated"}},
		// The service in the scope is signed: a key derived for another
		// service does not match, even when the scope itself is accepted.
		{name: "key of another service", host: endpoint, scope: "clb", key: "127",
			wantMessage: []string{"could not be validated"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := send(t, tc3Request(t, endpoint, tc.host, tc.signedHost, tc.scope, tc.key))
			if len(tc.wantMessage) == 0 {
				if code != "" {
					t.Fatalf("refused: %s: %s", code, msg)
				}
				return
			}
			if code != "AuthFailure.SignatureFailure" {
				t.Fatalf("code = %q (%s), want AuthFailure.SignatureFailure", code, msg)
			}
			for _, want := range tc.wantMessage {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
}
