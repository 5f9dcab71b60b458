package main

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	pkgv1beta1 "github.com/crossplane/crossplane/apis/v2/pkg/v1beta1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/memlimit"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/randhostport"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--poll", "30s", "--max-reconcile-rate", "50", "--leader-election"})
	if err != nil {
		t.Fatal(err)
	}
	if o.pollInterval != 30*time.Second || o.maxReconcileRate != 50 || !o.leaderElection || !o.managementPolicies {
		t.Errorf("parseFlags: got %+v", o)
	}
	if o.memoryLimit != memlimit.Auto {
		t.Errorf("--memory-limit defaults to %q, want %q", o.memoryLimit, memlimit.Auto)
	}
	if o.targetAudit != 5*time.Minute {
		t.Errorf("--target-audit-interval defaults to %s, want 5m", o.targetAudit)
	}
	if o, err := parseFlags([]string{"--target-audit-interval", "0"}); err != nil || o.targetAudit != 0 {
		t.Errorf("--target-audit-interval 0 (disabled): got %s, %v", o.targetAudit, err)
	}
	// The Kubernetes client's limit is its own, not the reconcile rate's.
	if o.kubeQPS != DefaultKubeQPS || o.kubeBurst != DefaultKubeBurst || o.podEvents != "warnings" {
		t.Errorf("defaults: --kube-api-qps %v, --kube-api-burst %d, --pod-events %q", o.kubeQPS, o.kubeBurst, o.podEvents)
	}
	if o, err := parseFlags([]string{"--kube-api-qps", "-1", "--pod-events", "all"}); err != nil || o.kubeQPS != -1 || o.podEvents != "all" {
		t.Errorf("--kube-api-qps -1 --pod-events all: got %v %q, %v", o.kubeQPS, o.podEvents, err)
	}
	if o.maxPortsPerPod != 32 {
		t.Errorf("--max-ports-per-pod defaults to %d, want 32", o.maxPortsPerPod)
	}
	if o, err := parseFlags([]string{"--max-ports-per-pod", "0"}); err != nil || o.maxPortsPerPod != 0 {
		t.Errorf("--max-ports-per-pod 0 (no limit): got %d, %v", o.maxPortsPerPod, err)
	}
	for _, bad := range [][]string{
		{"--max-ports-per-pod", "-1"},
		{"--kube-api-qps", "0"},
		{"--kube-api-burst", "0"},
		{"--pod-events", "normal"},
		{"--max-reconcile-rate", "0"},
		{"--poll", "10ms"},
		{"--target-audit-interval", "-1s"},
		{"--memory-limit", "lots"},
		{"--memory-limit", "0"},
		{"--no-such-flag"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%s): want an error", strings.Join(bad, " "))
		}
	}
}

// TestWebhookFlags: the webhook is off unless Crossplane gives the provider
// a certificate directory, and then serves on Crossplane's port 9443.
func TestWebhookFlags(t *testing.T) {
	t.Setenv(webhookCertDirEnv, "")
	o, err := parseFlags(nil)
	if err != nil || o.webhookAddr != "" {
		t.Errorf("without %s: addr %q, err %v; want off", webhookCertDirEnv, o.webhookAddr, err)
	}
	t.Setenv(webhookCertDirEnv, "/tls/server")
	o, err = parseFlags(nil)
	if err != nil || o.webhookAddr != ":9443" || o.webhookCertDir != "/tls/server" || o.admissionGrace != time.Minute {
		t.Errorf("with %s: %+v, err %v", webhookCertDirEnv, o, err)
	}
	if _, err := parseFlags([]string{"--webhook-admission-grace", "0s"}); err == nil {
		t.Error("a zero grace: want an error")
	}
	if o.randHostPorts != randhostport.DefaultRange() {
		t.Errorf("--randhostport-range defaults to %s, want %s", o.randHostPorts, randhostport.DefaultRange())
	}
	if o, err := parseFlags([]string{"--randhostport-range", "40000-40009"}); err != nil || o.randHostPorts != (randhostport.Range{Min: 40000, Max: 40009}) {
		t.Errorf("--randhostport-range 40000-40009: got %s, %v", o.randHostPorts, err)
	}
	for _, bad := range []string{"40000", "40010-40000", "0-10", "1-70000", "a-b"} {
		if _, err := parseFlags([]string{"--randhostport-range", bad}); err == nil {
			t.Errorf("--randhostport-range %s: want an error", bad)
		}
	}
}

// TestNetserviceFlags: the allocator API serves HTTPS with Crossplane's
// certificate by default, refuses to start without a certificate, and
// serves plain HTTP without authentication only when told to, and then
// only on loopback or a unix socket.
func TestNetserviceFlags(t *testing.T) {
	t.Setenv(webhookCertDirEnv, "")
	if o, err := parseFlags(nil); err != nil || o.netservice.Address != "" {
		t.Errorf("by default: %+v, %v; want the API off", o.netservice, err)
	}
	_, err := parseFlags([]string{"--netservice-bind-address", ":8090"})
	if err == nil || !strings.Contains(err.Error(), "--netservice-cert-dir must hold its tls.crt and tls.key") {
		t.Errorf("without a certificate: %v, want a refusal naming --netservice-cert-dir", err)
	}
	t.Setenv(webhookCertDirEnv, "/tls/server")
	o, err := parseFlags([]string{"--netservice-bind-address", ":8090", "--netservice-client-ca", "/ca.pem"})
	if err != nil || o.netservice != (ippool.ServerOptions{Address: ":8090", CertDir: "/tls/server", ClientCA: "/ca.pem"}) {
		t.Errorf("with Crossplane's certificate: %+v, %v", o.netservice, err)
	}
	for _, ok := range []string{"127.0.0.1:8090", "[::1]:8090", "localhost:8090", "unix:/run/netservice.sock"} {
		o, err := parseFlags([]string{"--netservice-bind-address", ok, "--netservice-insecure"})
		if err != nil || !o.netservice.Insecure || o.netservice.CertDir != "" {
			t.Errorf("--netservice-insecure on %s: %+v, %v", ok, o.netservice, err)
		}
	}
	for _, bad := range []string{":8090", "0.0.0.0:8090", "10.0.0.5:8090", "[::]:8090", "unix:"} {
		_, err := parseFlags([]string{"--netservice-bind-address", bad, "--netservice-insecure"})
		if err == nil || !strings.Contains(err.Error(), "--netservice-bind-address") && !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--netservice-insecure on %s: %v, want a refusal", bad, err)
		}
	}
	_, err = parseFlags([]string{"--netservice-bind-address", "127.0.0.1:8090", "--netservice-insecure", "--netservice-client-ca", "/ca.pem"})
	if err == nil {
		t.Error("--netservice-insecure with a client CA: want a refusal")
	}
}

// TestEndpointFlags: metrics are served over HTTPS to authorised callers
// by default and over plain HTTP only on loopback; pprof only on loopback
// unless allowed remote; the webhook's client CA is off by default.
func TestEndpointFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.metricsAddr != ":8080" || !o.metricsSecure || o.pprofAddr != "" || o.pprofAllowRemote || o.webhookClientCA != "" || o.healthAddr != ":8081" {
		t.Errorf("defaults: metrics %q secure %v, pprof %q remote %v, webhook client CA %q, health %q", o.metricsAddr, o.metricsSecure, o.pprofAddr, o.pprofAllowRemote, o.webhookClientCA, o.healthAddr)
	}
	for _, ok := range [][]string{
		{"--metrics-secure=false", "--metrics-bind-address", "127.0.0.1:9000"},
		{"--metrics-secure=false", "--metrics-bind-address", "[::1]:9000"},
		{"--metrics-secure=false", "--metrics-bind-address", "localhost:9000"},
		{"--metrics-secure=false", "--metrics-bind-address", "0"},
		{"--metrics-bind-address", "10.0.0.1:8443"},
		{"--pprof-bind-address", "127.0.0.1:6060"},
		{"--pprof-bind-address", ":6060", "--pprof-allow-remote"},
		{"--webhook-client-ca", "/etc/webhook-client/ca.crt"},
	} {
		if _, err := parseFlags(ok); err != nil {
			t.Errorf("parseFlags(%s): %v", strings.Join(ok, " "), err)
		}
	}
	for _, bad := range [][]string{
		{"--metrics-secure=false"},
		{"--metrics-secure=false", "--metrics-bind-address", "0.0.0.0:8080"},
		{"--metrics-secure=false", "--metrics-bind-address", "10.0.0.1:8080"},
		{"--pprof-bind-address", ":6060"},
		{"--pprof-bind-address", "0.0.0.0:6060"},
		{"--pprof-bind-address", "example.com:6060"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%s): want an error", strings.Join(bad, " "))
		}
	}
}

// TestRuntimeConfigExample: examples/provider/runtimeconfig.yaml is a
// DeploymentRuntimeConfig whose runtime container's arguments the provider
// accepts, that runs more than one replica only with leader election, and
// whose allocator API port is one the container declares.
func TestRuntimeConfigExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "provider", "runtimeconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rc := &pkgv1beta1.DeploymentRuntimeConfig{}
	if err := yaml.UnmarshalStrict(b, rc); err != nil {
		t.Fatal(err)
	}
	dt := rc.Spec.DeploymentTemplate
	if dt == nil || dt.Spec == nil {
		t.Fatal("no deploymentTemplate.spec")
	}
	var args []string
	var ports []int32
	for _, c := range dt.Spec.Template.Spec.Containers {
		if c.Name != "package-runtime" {
			t.Errorf("container %q: Crossplane runs the provider in package-runtime", c.Name)
			continue
		}
		args = c.Args
		for _, p := range c.Ports {
			ports = append(ports, p.ContainerPort)
		}
	}
	if len(args) == 0 {
		t.Fatal("no arguments for the package-runtime container")
	}
	// The provider's own flag set: an unknown flag or a bad value fails.
	// Crossplane gives the provider its certificate, which the allocator
	// API serves by default.
	t.Setenv(webhookCertDirEnv, "/tls/server")
	o, err := parseFlags(args)
	if err != nil {
		t.Fatalf("the provider refuses %q: %v", args, err)
	}
	if r := dt.Spec.Replicas; r != nil && *r > 1 && !o.leaderElection {
		t.Errorf("%d replicas without --leader-election would all reconcile", *r)
	}
	if o.webhookAddr != ":9443" || o.netservice.Address == "" || o.netservice.Insecure || o.netservice.CertDir != "/tls/server" {
		t.Errorf("webhook %q, allocator API %+v: want both on, the API over HTTPS with Crossplane's certificate", o.webhookAddr, o.netservice)
	}
	_, port, err := net.SplitHostPort(o.netservice.Address)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ports, func(p int32) bool { return strconv.Itoa(int(p)) == port }) {
		t.Errorf("--netservice-bind-address port %s is not a containerPort (%v)", port, ports)
	}
}
