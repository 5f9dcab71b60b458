package render

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
)

// TestPackageAcceptedByCrossplane installs the Configuration package's XRDs
// and Compositions into real Crossplane core v2.4.0 (out of cluster, on the
// local control plane) and checks that every XRD is established (and its
// claim offered), and that the API server accepts every example: the XRDs'
// schemas, defaults and validation rules are real. Composing is what the
// render tests and the install test cover.
func TestPackageAcceptedByCrossplane(t *testing.T) {
	core, _, err := testenv.CrossplaneBinaries()
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kube := env.Client
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crossplane-system"}}); err != nil {
		t.Fatal(err)
	}
	crds, err := coreCRDs()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=crossplane-system", "ENABLE_WEBHOOKS=false"}

	// init installs core's CRDs. Its first run can fail on the Lock it
	// writes before the Lock CRD is established; it is idempotent.
	initEnv := append(append([]string{}, base...), "CRDS_PATH="+crds,
		"TLS_CA_SECRET_NAME=crossplane-root-ca", "TLS_CLIENT_SECRET_NAME=crossplane-tls-client")
	var initOut []byte
	if err := testenv.Eventually(ctx, 2*time.Minute, func() error {
		cmd := exec.CommandContext(ctx, core, "core", "init")
		cmd.Env = append(os.Environ(), initEnv...)
		initOut, err = cmd.CombinedOutput()
		return err
	}); err != nil {
		t.Fatalf("core init: %v\n%s", err, initOut)
	}

	certs := filepath.Join(dir, "client")
	writeClientCerts(t, certs)
	var coreLog bytes.Buffer
	start := exec.Command(core, "core", "start")
	start.Env = append(append(os.Environ(), base...), "TLS_CLIENT_CERTS_DIR="+certs, "PACKAGE_RUNTIME=External",
		"XPKG_CACHE_DIR="+filepath.Join(dir, "xpkg"), "METRICS_PORT=0", "HEALTH_PROBE_PORT=0")
	start.Stdout, start.Stderr = &coreLog, &coreLog
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = start.Process.Kill()
		_ = start.Wait()
		if t.Failed() {
			t.Logf("crossplane core log:\n%s", coreLog.String())
		}
	})

	pkg := filepath.Join(testenv.RepoRoot(), "package", "configuration")
	entries, err := os.ReadDir(pkg)
	if err != nil {
		t.Fatal(err)
	}
	var xrds []string
	for _, e := range entries {
		if e.Name() == "crossplane.yaml" {
			continue // the package meta, not an API object
		}
		objs, err := testenv.Apply(ctx, kube, filepath.Join(pkg, e.Name()))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		for _, o := range objs {
			if o.GetKind() == "CompositeResourceDefinition" {
				xrds = append(xrds, o.GetName())
			}
		}
	}
	if len(xrds) != 4 {
		t.Fatalf("XRDs %v, want the v2 and legacy forms of both kinds", xrds)
	}
	for _, name := range xrds {
		if err := testenv.Eventually(ctx, 2*time.Minute, func() error { return xrdReady(ctx, kube, name) }); err != nil {
			t.Fatalf("XRD %s: %v", name, err)
		}
	}

	// The API server accepts every example under the XRDs' schemas.
	examples := filepath.Join(testenv.RepoRoot(), "examples", "composition")
	entries, err = os.ReadDir(examples)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := testenv.Eventually(ctx, time.Minute, func() error {
			_, err := testenv.Apply(ctx, kube, filepath.Join(examples, e.Name()))
			return err
		}); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}

	// And refuses what the schemas rule out.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1", "kind": "PodPublicAddress",
		"metadata": map[string]any{"name": "bad", "namespace": "examples"},
		"spec": map[string]any{
			"selector":      map[string]any{},
			"ports":         []any{map[string]any{"port": 80, "protocol": "TCP"}},
			"loadBalancers": map[string]any{"count": 1},
			"portRange":     map[string]any{"start": 20, "end": 10},
		},
	}}
	err = kube.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "need a template") || !strings.Contains(err.Error(), "end must not be below start") {
		t.Errorf("an invalid PodPublicAddress: %v, want both validation messages", err)
	}
}

// xrdReady checks that an XRD is established, its claim offered where it
// has one, and that the composite's CRD exists.
func xrdReady(ctx context.Context, kube client.Client, name string) error {
	xrd := &unstructured.Unstructured{}
	xrd.SetAPIVersion("apiextensions.crossplane.io/v2")
	xrd.SetKind("CompositeResourceDefinition")
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, xrd); err != nil {
		return err
	}
	want := []string{"Established"}
	if _, ok, _ := unstructured.NestedMap(xrd.Object, "spec", "claimNames"); ok {
		want = append(want, "Offered")
	}
	conds, _, _ := unstructured.NestedSlice(xrd.Object, "status", "conditions")
	for _, w := range want {
		ok := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == w && m["status"] == "True" {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("not %s yet: %v", w, conds)
		}
	}
	return kube.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
}

// coreCRDs is the folder of Crossplane core's CRDs, in the module the core
// binary is built from.
func coreCRDs() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/crossplane/crossplane/v2")
	cmd.Dir = filepath.Join(testenv.RepoRoot(), "cluster", "local", "crossplane", "core")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("cannot find the crossplane module: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "cluster", "crds"), nil
}

// writeClientCerts writes the client certificate core presents to
// functions; it refuses to start without one.
func writeClientCerts(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "crossplane"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for name, b := range map[string][]byte{
		"ca.crt":  crt,
		"tls.crt": crt,
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
