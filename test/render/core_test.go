package render

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/function"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// TestPackageAcceptedByCrossplane installs the Configuration package's XRDs
// and Compositions into real Crossplane core v2.4.0 (out of cluster, on the
// local control plane) with the function served over mutual TLS, checks
// that every XRD is established (and its claim offered), that the API
// server accepts every example (the XRDs' schemas, defaults and validation
// rules are real), and that core composes each into our managed resources
// in the right namespace. No provider runs: the managed resources are only
// created, and their status is what the render tests cover.
func TestPackageAcceptedByCrossplane(t *testing.T) {
	core, crds, err := xplocal.CoreBinary()
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
	// testenv makes the provider's namespace, which is Crossplane's.
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: xplocal.Namespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	pki, err := testenv.NewPKI(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	xp, err := xplocal.StartCore(ctx, xplocal.CoreOptions{Binary: core, CRDs: crds, Kubeconfig: kubeconfig, Dir: dir, ClientCerts: pki.ClientDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		xp.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(xp.Core.Log); err == nil {
				t.Logf("crossplane core log:\n%s", b)
			}
			logComposites(t, kube)
		}
	})
	serverCerts := pki.ServerDir

	endpoint := serveFunctionTLS(t, serverCerts)
	rev := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1", "kind": "FunctionRevision",
		"metadata": map[string]any{
			"name":        function.Name + "-local",
			"labels":      map[string]any{"pkg.crossplane.io/package": function.Name},
			"annotations": map[string]any{"crossplane.io/paused": "true"},
		},
		"spec": map[string]any{
			"desiredState": "Active", "image": "xpkg.invalid/" + function.Name + ":v0.0.0", "revision": int64(1),
			"ignoreCrossplaneConstraints": true, "skipDependencyResolution": true,
		},
	}}
	if err := kube.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(rev.Object, endpoint, "status", "endpoint")
	_ = unstructured.SetNestedStringSlice(rev.Object, []string{"composition"}, "status", "capabilities")
	if err := kube.Status().Update(ctx, rev); err != nil {
		t.Fatal(err)
	}

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
	if len(xrds) != 6 {
		t.Fatalf("XRDs %v, want the v2 and legacy forms of the three kinds", xrds)
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

	// Core composes every example through the function: the namespaced
	// XRs in their namespace, the claims in theirs (through their legacy
	// XR), with the function's warnings reaching the claim.
	checks := []struct {
		what, kind, namespace string
		labels                map[string]string
		check                 func(u *unstructured.Unstructured) error
	}{
		{"the XR's created load balancer", "LoadBalancer", "examples", map[string]string{"crossplane.io/composite": "battle"}, func(u *unstructured.Unstructured) error {
			return field(u, "OPEN", "spec", "forProvider", "type")
		}},
		{"the XR's policy", "PodAddressPolicy", "examples", map[string]string{"crossplane.io/composite": "battle"}, func(u *unstructured.Unstructured) error {
			return field(u, "battle", "spec", "ports", "0", "pools", "0", "name")
		}},
		{"the claim's observed load balancer", "LoadBalancer", "examples", map[string]string{"crossplane.io/claim-name": "rooms"}, func(u *unstructured.Unstructured) error {
			return field(u, "Observe", "spec", "managementPolicies", "0")
		}},
		{"the claim's pool", "PortPool", "examples", map[string]string{"crossplane.io/claim-name": "rooms"}, func(u *unstructured.Unstructured) error {
			return field(u, "UDP", "spec", "forProvider", "protocols", "1")
		}},
		{"the DedicatedCLBService's pool", "PortPool", "demo", map[string]string{"crossplane.io/composite": "gameserver"}, func(u *unstructured.Unstructured) error {
			return field(u, "ap-chengdu:lb-xxx", "spec", "forProvider", "loadBalancerIds", "0")
		}},
		{"the DedicatedCLBService's policy", "PodAddressPolicy", "demo", map[string]string{"crossplane.io/composite": "gameserver"}, func(u *unstructured.Unstructured) error {
			return field(u, "networking.cloud.tencent.com/external-address-9000", "spec", "ports", "0", "addressAnnotation")
		}},
		{"the DedicatedCLBService claim's pool", "PortPool", "demo", map[string]string{"crossplane.io/claim-name": "meeting"}, func(u *unstructured.Unstructured) error {
			return field(u, "CTCC", "spec", "forProvider", "autoCreate", "template", "vipIsp")
		}},
		{"the Ingress's HTTPS rule", "Rule", "examples", map[string]string{"crossplane.io/composite": "web"}, func(u *unstructured.Unstructured) error {
			return field(u, "web-lb-xxx-https-443", "spec", "forProvider", "listenerIdRef", "name")
		}},
		// The claim's annotation reaches its XR: the load balancers are
		// the claim's.
		{"the Ingress claim's load balancer", "LoadBalancer", "examples", map[string]string{"crossplane.io/claim-name": "test-tcp"}, func(u *unstructured.Unstructured) error {
			return field(u, "Observe", "spec", "managementPolicies", "0")
		}},
	}
	for _, c := range checks {
		if err := testenv.Eventually(ctx, 2*time.Minute, func() error { return composedOne(ctx, kube, c.kind, c.namespace, c.labels, c.check) }); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	if err := testenv.Eventually(ctx, 2*time.Minute, func() error { return warned(ctx, kube, "demo", "meeting", "ZoneId not supported") }); err != nil {
		t.Errorf("the DedicatedCLBService claim: %v", err)
	}
	// The function's status reaches the XR, and through it the claim (no
	// provider runs, so it counts nothing yet).
	for _, o := range []struct{ apiVersion, kind, name string }{
		{"workload.tencentcloud.crossplane.io/v1alpha1", "PodPublicAddress", "battle"},
		{"claims.workload.tencentcloud.crossplane.io/v1alpha1", "PodPublicAddress", "rooms"},
	} {
		if err := testenv.Eventually(ctx, 2*time.Minute, func() error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(o.apiVersion)
			u.SetKind(o.kind)
			if err := kube.Get(ctx, client.ObjectKey{Namespace: "examples", Name: o.name}, u); err != nil {
				return err
			}
			if _, ok, _ := unstructured.NestedInt64(u.Object, "status", "freePorts"); !ok {
				return fmt.Errorf("no status.freePorts yet: %v", u.Object["status"])
			}
			return nil
		}); err != nil {
			t.Errorf("%s %s: %v", o.apiVersion, o.name, err)
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
	badIngress := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1", "kind": "Ingress",
		"metadata": map[string]any{"name": "bad", "namespace": "examples"},
		"spec": map[string]any{
			"rules": []any{map[string]any{"port": 443, "protocol": "HTTPS", "layer7Routes": []any{map[string]any{"domain": "a.com"}}},
				map[string]any{"port": 80, "protocol": "SCTP"}},
			"portMappings": []any{map[string]any{"startPort": 30000, "protocol": "UDP", "startIndex": 3, "endIndex": 3, "workloadKind": "StatefulSet", "workloadName": "gs"}},
		},
	}}
	err = kube.Create(ctx, badIngress)
	for _, msg := range []string{"HTTPS, TCP_SSL and QUIC need a certificate", "protocol is TCP, UDP, HTTP, HTTPS, TCP_SSL or QUIC", "endIndex must be greater than startIndex"} {
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("an invalid Ingress: %v, want %q", err, msg)
		}
	}
}

// logComposites logs the conditions of every composite of ours and the
// events of the cluster-scoped ones, to tell why a test failed.
func logComposites(t *testing.T, kube client.Client) {
	ctx := context.Background()
	for _, gk := range []string{"workload.tencentcloud.crossplane.io/v1alpha1 PodPublicAddress", "workload.tencentcloud.crossplane.io/v1alpha1 DedicatedCLBService",
		"workload.tencentcloud.crossplane.io/v1alpha1 Ingress", "claims.workload.tencentcloud.crossplane.io/v1alpha1 XPodPublicAddress",
		"claims.workload.tencentcloud.crossplane.io/v1alpha1 XDedicatedCLBService", "claims.workload.tencentcloud.crossplane.io/v1alpha1 XIngress"} {
		av, kind, _ := strings.Cut(gk, " ")
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(av)
		l.SetKind(kind + "List")
		if err := kube.List(ctx, l); err != nil {
			t.Logf("%s: %v", kind, err)
			continue
		}
		for _, o := range l.Items {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			t.Logf("%s %s/%s: %v", kind, o.GetNamespace(), o.GetName(), conds)
		}
	}
	events := &corev1.EventList{}
	if err := kube.List(ctx, events, client.InNamespace("default")); err == nil {
		for _, e := range events.Items {
			t.Logf("event %s/%s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// composedOne checks the one object of a kind of ours in a namespace that
// carries the labels.
func composedOne(ctx context.Context, kube client.Client, kind, namespace string, labels map[string]string, check func(*unstructured.Unstructured) error) error {
	l := &unstructured.UnstructuredList{}
	group := "clb.tencentcloud.m.crossplane.io"
	if kind == "PodAddressPolicy" {
		group = "network.tencentcloud.m.crossplane.io"
	}
	l.SetAPIVersion(group + "/v1alpha1")
	l.SetKind(kind + "List")
	if err := kube.List(ctx, l, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
		return err
	}
	if len(l.Items) == 0 {
		return fmt.Errorf("no %s labelled %v in %s yet", kind, labels, namespace)
	}
	return check(&l.Items[0])
}

// field checks a string at a path of an object; a number in the path
// indexes a list.
func field(u *unstructured.Unstructured, want string, path ...string) error {
	var v any = u.Object
	for _, p := range path {
		switch n := v.(type) {
		case map[string]any:
			v = n[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(n) {
				return fmt.Errorf("%s %s: no %v", u.GetKind(), u.GetName(), path)
			}
			v = n[i]
		default:
			return fmt.Errorf("%s %s: no %v", u.GetKind(), u.GetName(), path)
		}
	}
	if v != want {
		return fmt.Errorf("%s %s: %v is %v, want %q", u.GetKind(), u.GetName(), path, v, want)
	}
	return nil
}

// warned checks that an object of a namespace has a warning event saying
// msg.
func warned(ctx context.Context, kube client.Client, namespace, name, msg string) error {
	l := &corev1.EventList{}
	if err := kube.List(ctx, l, client.InNamespace(namespace)); err != nil {
		return err
	}
	for _, e := range l.Items {
		if e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, msg) {
			return nil
		}
	}
	var seen []string
	for _, e := range l.Items {
		seen = append(seen, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+": "+e.Message)
	}
	return fmt.Errorf("no warning event on %s/%s saying %q; events: %q", namespace, name, msg, seen)
}

// serveFunctionTLS serves the composition function on a loopback port with
// mutual TLS from the certificates in dir, and returns its address.
func serveFunctionTLS(t *testing.T, dir string) string {
	t.Helper()
	f, err := function.New(logging.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(creds))
	fnv1.RegisterFunctionRunnerServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
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
