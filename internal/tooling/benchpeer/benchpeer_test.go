package benchpeer

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// frontTransport is what the peer's SDK clients get from HTTPS_PROXY and
// SSL_CERT_FILE.
func frontTransport(t *testing.T, f *Front) *http.Transport {
	t.Helper()
	ca, err := os.ReadFile(f.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("front CA is not PEM")
	}
	proxy, err := url.Parse(f.ProxyURL)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
}

// The SDK, left at its production endpoint (HTTPS, clb.tencentcloudapi.com),
// reaches the emulator through the front, its signature intact.
func TestFrontCarriesSDKCallsToTheEmulator(t *testing.T) {
	emu, endpoint, err := emulator.Start(emulator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = emu.Close() }()
	f, err := StartFront(t.TempDir(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()

	c, err := clb.NewClient(common.NewCredential(emulator.DefaultSecretID, emulator.DefaultSecretKey), emulator.DefaultRegion, profile.NewClientProfile())
	if err != nil {
		t.Fatal(err)
	}
	c.WithHttpTransport(frontTransport(t, f))
	if _, err := c.DescribeQuotaWithContext(context.Background(), clb.NewDescribeQuotaRequest()); err != nil {
		t.Fatalf("DescribeQuota through the front: %v", err)
	}
	if n := emu.CallCount("DescribeQuota"); n != 1 {
		t.Errorf("the emulator answered %d DescribeQuota calls, want 1", n)
	}
	if len(f.LocalCalls()) != 0 {
		t.Errorf("the front answered clb itself: %v", f.LocalCalls())
	}
}

// cam GetUserAppId is answered by the front with an OwnerUin; an action
// the peer is not known to call is an error, so that it shows.
func TestFrontAnswersCAMAndRefusesUnknownCalls(t *testing.T) {
	f, err := StartFront(t.TempDir(), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	hc := &http.Client{Transport: frontTransport(t, f)}
	call := func(host, action string) map[string]any {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "https://"+host+"/", bytes.NewReader([]byte("{}")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-TC-Action", action)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var body struct{ Response map[string]any }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return body.Response
	}
	if got := call("cam.tencentcloudapi.com", "GetUserAppId"); got["OwnerUin"] != OwnerUin {
		t.Errorf("GetUserAppId = %v, want OwnerUin %s", got, OwnerUin)
	}
	if got := call("cam.tencentcloudapi.com", "ListUsers"); got["Error"] == nil {
		t.Errorf("ListUsers = %v, want an error", got)
	}
	if n := f.LocalCalls()["cam:GetUserAppId"]; n != 1 {
		t.Errorf("front counted %d GetUserAppId, want 1", n)
	}

	// Only cloud API hosts are tunnelled.
	req, err := http.NewRequestWithContext(context.Background(), http.MethodConnect, f.ProxyURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "example.com:443"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT example.com: %s, want 403", resp.Status)
	}
}

// Build says which source is wrong before running any Go command.
func TestBuildRejectsOtherSource(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/other\n\ngo 1.24\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), src, t.TempDir(), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is not the peer's source") {
		t.Fatalf("Build of another module: %v", err)
	}
	t.Setenv("PEER_SRC", filepath.Join(src, "missing"))
	if _, err := Source(); err == nil || !strings.Contains(err.Error(), "PEER_SRC") {
		t.Fatalf("Source with a missing PEER_SRC: %v", err)
	}
}

// The stand-in is a module named as the one it replaces, with the package
// path the peer imports.
func TestStandinLayout(t *testing.T) {
	dir := t.TempDir()
	if err := writeStandin(dir); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module "+agonesModule+"\n") {
		t.Fatalf("go.mod = %q, %v", mod, err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "pkg", "apis", "agones", "v1", "types.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"type GameServer struct", "func AddToScheme(", "func (in *GameServer) DeepCopyObject()"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("stand-in lacks %q", want)
		}
	}
}
