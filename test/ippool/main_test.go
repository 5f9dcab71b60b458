// Package ippool tests IP pools and the CNI allocator HTTP API end to end:
// a real kube-apiserver and etcd, the provider's NetPool controller, and
// HTTPS calls as the CNI plugin makes them, authenticated by the API
// server (TokenReview) and authorised by its RBAC. Unless a test says,
// calls present the token of examples/network/netservice-callers.yaml's
// admin, who may act for any host. No cloud is involved. There is no
// kubelet or controller-manager: tests create Pods, StatefulSets and
// Nodes through the API only for the allocator to read.
package ippool

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

var (
	shared *suite.Suite
	env    *testenv.Env
	kube   client.Client
)

func TestMain(m *testing.M) {
	code := suite.Main(m, func(s *suite.Suite) { shared, env, kube = s, s.Env, s.Kube })
	if certDir != "" {
		_ = os.RemoveAll(certDir)
	}
	os.Exit(code)
}

// startProvider runs the NetPool controller and the allocator API in this
// process until the test ends, and returns the API's base URL.
func startProvider(t testing.TB, keep time.Duration) string {
	t.Helper()
	base, _ := startProviderAs(t, env.Config, keep)
	return base
}

// startProviderAs is startProvider with the identity of cfg; stop stops
// it before the test ends.
func startProviderAs(t testing.TB, cfg *rest.Config, keep time.Duration) (base string, stop func()) {
	t.Helper()
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	serving(t)
	stop = shared.StartProvider(t, suite.As(cfg), suite.IPPools(ippool.ServerOptions{Address: addr, CertDir: certDir, ClientCA: clientCA.File}, keep))
	base = "https://" + addr
	waitServing(t, base)
	return base, stop
}

// waitServing waits until the API answers something other than "not
// served yet" (a provider whose RBAC refuses TokenReviews answers why).
func waitServing(t testing.TB, base string) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), time.Minute, func() error {
		_, e, err := call(base, http.MethodDelete, ippool.HostPath+"192.0.2.254", nil)
		if err != nil {
			return err
		}
		if e.Code == ippool.CodeUnavailable && strings.Contains(e.Message, "not served yet") {
			return fmt.Errorf("not serving yet: %s", e.Message)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// What every provider of the package serves with and every call presents,
// made once by serving.
var (
	servingOnce sync.Once
	servingErr  error
	certDir     string            // the API's serving tls.crt and tls.key
	clientCA    *testenv.ClientCA // --netservice-client-ca
	admin       credentials       // the admin of examples/network/netservice-callers.yaml
	httpClient  *http.Client
)

// credentials are what a caller presents: a bearer token, a client
// certificate, both or neither.
type credentials struct {
	token string
	cert  *tls.Certificate
}

// serving makes the package's serving certificate, client CA and HTTPS
// client, applies examples/network/netservice-callers.yaml and takes its
// admin's token.
func serving(t testing.TB) {
	t.Helper()
	servingOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ippool-serving-")
		if err != nil {
			servingErr = err
			return
		}
		certDir = dir
		ca, err := testenv.ServingCert(dir)
		if err != nil {
			servingErr = err
			return
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca)
		httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, TLSClientConfig: &tls.Config{RootCAs: roots}}}
		if clientCA, err = testenv.NewClientCA(filepath.Join(dir, "client-ca.crt")); err != nil {
			servingErr = err
			return
		}
		ctx := context.Background()
		if _, err := testenv.Apply(ctx, kube, examplePath("netservice-callers.yaml")); err != nil {
			servingErr = err
			return
		}
		if admin.token, servingErr = env.Token(ctx, "kube-system", "netservice-admin", nil); servingErr != nil {
			return
		}
		for _, sa := range []string{"netservice-admin", "netservice-cni"} {
			if servingErr = env.WaitAllowed(ctx, "system:serviceaccount:kube-system:"+sa, nil, allocations(v1alpha1.VerbAllocate)); servingErr != nil {
				return
			}
		}
	})
	if servingErr != nil {
		t.Fatal(servingErr)
	}
}

// allocations are the attributes of verb on any pool's allocations.
func allocations(verb string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Verb: verb, Group: v1alpha1.AllocationsGroup, Resource: v1alpha1.AllocationsResource, Subresource: v1alpha1.AllocationsSubresource}
}

// call makes one API call as the admin; body is marshalled unless it is a
// string.
func call(base, method, path string, body any) (int, ippool.Envelope, error) {
	return callAs(admin, base, method, path, body)
}

// callAs makes one API call with c's credentials.
func callAs(c credentials, base, method, path string, body any) (int, ippool.Envelope, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = bytes.NewBufferString(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return 0, ippool.Envelope{}, err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		return 0, ippool.Envelope{}, err
	}
	hc := httpClient
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.cert != nil {
		tr := httpClient.Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{*c.cert}
		hc = &http.Client{Timeout: httpClient.Timeout, Transport: tr}
		defer tr.CloseIdleConnections()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, ippool.Envelope{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	e := ippool.Envelope{}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		return resp.StatusCode, e, fmt.Errorf("%s %s: %s, body not an envelope: %w", method, path, resp.Status, err)
	}
	return resp.StatusCode, e, nil
}

// allocate asks for an IP and fails the test unless one is given.
func allocate(t testing.TB, base string, req ippool.Request) ippool.Lease {
	t.Helper()
	_, e, err := call(base, http.MethodPost, ippool.AllocatorPath, req)
	if err != nil {
		t.Fatal(err)
	}
	if e.Code != ippool.CodeOK || !e.Result || len(e.Data) != 1 {
		t.Fatalf("allocate %+v: %+v", req, e)
	}
	return e.Data[0]
}

// release frees a container's IP and fails the test unless it succeeds.
func release(t testing.TB, base string, req ippool.Request) []ippool.Lease {
	t.Helper()
	_, e, err := call(base, http.MethodDelete, ippool.AllocatorPath, req)
	if err != nil {
		t.Fatal(err)
	}
	if e.Code != ippool.CodeOK || !e.Result {
		t.Fatalf("release %+v: %+v", req, e)
	}
	return e.Data
}

// newPool creates a NetPool of net 10.<octet>.0.0/16 (gateway .0.1) with
// n IPs from 10.<octet>.1.0 on and the given hosts, and waits until all
// its NetIPs are Available.
func newPool(t testing.TB, name string, octet, n int, hosts ...string) *v1alpha1.NetPool {
	t.Helper()
	p := &v1alpha1.NetPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NetPoolSpec{Net: fmt.Sprintf("10.%d.0.0", octet), Mask: 16, Gateway: fmt.Sprintf("10.%d.0.1", octet), Hosts: hosts},
	}
	for i := range n {
		p.Spec.AvailableIPs = append(p.Spec.AvailableIPs, fmt.Sprintf("10.%d.%d.%d", octet, 1+i/250, 1+i%250))
	}
	if err := kube.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePool(t, name) })
	waitCounts(t, name, n, n, 0, 0)
	return p
}

// deletePool releases every Active IP of the pool and deletes it.
func deletePool(t testing.TB, name string) {
	ctx := context.Background()
	ips := &v1alpha1.NetIPList{}
	_ = kube.List(ctx, ips, client.MatchingLabels{v1alpha1.LabelNetPool: name})
	for i := range ips.Items {
		ip := &ips.Items[i]
		if ip.Status.Status != v1alpha1.NetIPAvailable {
			ip.Status = v1alpha1.NetIPStatus{Status: v1alpha1.NetIPAvailable}
			_ = kube.Status().Update(ctx, ip)
		}
	}
	_ = kube.Delete(ctx, &v1alpha1.NetPool{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		err := kube.Get(ctx, types.NamespacedName{Name: name}, &v1alpha1.NetPool{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pool %s still there (%w)", name, err)
	}); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// waitCounts waits for a pool's status counts.
func waitCounts(t testing.TB, name string, total, available, active, reserved int) *v1alpha1.NetPool {
	t.Helper()
	p := &v1alpha1.NetPool{}
	if err := testenv.Eventually(context.Background(), time.Minute, func() error {
		if err := kube.Get(context.Background(), types.NamespacedName{Name: name}, p); err != nil {
			return err
		}
		s := p.Status
		if s.Total != total || s.Available != available || s.Active != active || s.Reserved != reserved || s.Status != v1alpha1.NetPoolNormal {
			return fmt.Errorf("pool %s: status %s total %d available %d active %d reserved %d, want Normal %d %d %d %d",
				name, s.Status, s.Total, s.Available, s.Active, s.Reserved, total, available, active, reserved)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return p
}

// netIP reads one NetIP.
func netIP(t testing.TB, name string) *v1alpha1.NetIP {
	t.Helper()
	ip := &v1alpha1.NetIP{}
	if err := kube.Get(context.Background(), types.NamespacedName{Name: name}, ip); err != nil {
		t.Fatal(err)
	}
	return ip
}

// poolIPs lists a pool's NetIPs by name.
func poolIPs(t testing.TB, pool string) map[string]v1alpha1.NetIP {
	t.Helper()
	ips := &v1alpha1.NetIPList{}
	if err := kube.List(context.Background(), ips, client.MatchingLabels{v1alpha1.LabelNetPool: pool}); err != nil {
		t.Fatal(err)
	}
	out := map[string]v1alpha1.NetIP{}
	for _, ip := range ips.Items {
		out[ip.Name] = ip
	}
	return out
}

// namespace creates a namespace for a test.
func namespace(t testing.TB, name string) {
	t.Helper()
	err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// examplePath is a file under examples/network.
func examplePath(name string) string {
	return filepath.Join(testenv.RepoRoot(), "examples", "network", name)
}

// releaseHost frees every IP held on host and fails the test unless it
// succeeds.
func releaseHost(t testing.TB, base, host string) []ippool.Lease {
	t.Helper()
	_, e, err := call(base, http.MethodDelete, ippool.HostPath+host, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Code != ippool.CodeOK || !e.Result {
		t.Fatalf("release host %s: %+v", host, e)
	}
	return e.Data
}
