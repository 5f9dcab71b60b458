// Package endpoints tests what the provider binary serves on the network
// besides the API server's calls to its webhook: the metrics endpoint,
// which lets in only callers the API server authenticates and authorises,
// over HTTP/1.1, and the health endpoint.
package endpoints

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestMetricsNeedAnAuthorisedToken runs the provider binary at its
// default metrics settings as its ServiceAccount with only the core RBAC,
// and scrapes /metrics: without a token (401), with a token whose
// ServiceAccount may not read /metrics (403), over plain HTTP (refused),
// and with a token of a ServiceAccount bound to
// examples/provider/metrics-reader.yaml's ClusterRole (200, the
// controller-runtime metrics, over HTTP/1.1 although HTTP/2 is offered).
// The health endpoint answers the kubelet without a token and says no
// more than ok.
func TestMetricsNeedAnAuthorisedToken(t *testing.T) {
	ctx := context.Background()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kube := env.Client

	sa, err := env.AsProvider(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(env.KubeConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate = sa.Impersonate.UserName
	}
	providerKC, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.BuildProvider(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// Only the port differs from the default :8080, which a shared
	// machine may have taken; --metrics-secure keeps its default.
	p := testenv.RunProvider(t, providerKC, bin, "provider", "--metrics-bind-address", metrics)
	if err := p.Ready(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}

	// A scraper bound to the example ClusterRole (its subject pointed at
	// this test's ServiceAccount), and a stranger that is not.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}
	if err := kube.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	scraper := token(t, kube, "monitoring", "prometheus")
	stranger := token(t, kube, "monitoring", "stranger")
	if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "provider", "metrics-reader.yaml")); err != nil {
		t.Fatal(err)
	}
	b := &rbacv1.ClusterRoleBinding{}
	if err := kube.Get(ctx, clientKey("provider-tencentcloud-network:metrics-reader"), b); err != nil {
		t.Fatal(err)
	}
	if len(b.Subjects) != 1 || b.Subjects[0].Namespace != "monitoring" || b.Subjects[0].Name != "prometheus" {
		t.Fatalf("metrics-reader.yaml binds %+v, want monitoring/prometheus", b.Subjects)
	}

	url := "https://" + metrics + "/metrics"
	// Ready is the health endpoint's; the metrics server starts beside it.
	if err := testenv.Eventually(ctx, 30*time.Second, func() error {
		code, _, _, err := scrape(url, "")
		if err == nil && code != http.StatusUnauthorized {
			return fmt.Errorf("without a token: %d, want 401", code)
		}
		return err
	}); err != nil {
		t.Error(err)
	}
	if code, _, _, err := scrape(url, stranger); err != nil || code != http.StatusForbidden {
		t.Errorf("a ServiceAccount without the metrics reader role: %d, %v; want 403", code, err)
	}
	if code, body, _, err := scrape("http://"+metrics+"/metrics", scraper); err == nil && code == http.StatusOK {
		t.Errorf("plain HTTP was served: %d %.80s", code, body)
	}
	// The API server's authorizer may take a moment to see the binding.
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		code, body, proto, err := scrape(url, scraper)
		switch {
		case err != nil:
			return err
		case code != http.StatusOK:
			return fmt.Errorf("the scraper got %d: %.200s", code, body)
		case proto != "HTTP/1.1":
			return fmt.Errorf("the scraper was answered over %s, want HTTP/1.1", proto)
		case !strings.Contains(body, "controller_runtime_reconcile_total"):
			return fmt.Errorf("no controller-runtime metrics in %.200s", body)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}

	// The health endpoint: plain HTTP for the kubelet, "ok" and nothing
	// else.
	resp, err := http.Get("http://" + p.Health() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Errorf("/readyz: %d %q, want 200 ok", resp.StatusCode, body)
	}
	if t.Failed() {
		if b, err := os.ReadFile(p.Log); err == nil {
			t.Logf("provider log:\n%s", b)
		}
	}
}

// token creates the ServiceAccount namespace/name and returns a token
// the API server issued for it.
func token(t *testing.T, kube client.Client, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := kube.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := kube.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// scrape GETs url with bearer as the token (none if empty), offering
// HTTP/2, and returns the status, the body and the protocol of the answer.
func scrape(url, bearer string) (int, string, string, error) {
	a, err := testenv.HTTPS(context.Background(), testenv.HTTPSRequest{URL: url, Bearer: bearer, Protos: []string{"h2", "http/1.1"}})
	return a.Code, a.Body, a.Proto, err
}
