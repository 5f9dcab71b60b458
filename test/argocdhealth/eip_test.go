package argocdhealth

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocdhealth"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

const eipNS = "health-eip"

// eipObjects: a provider config for an account of one EIP, the grant that
// lets the namespace's Pods have EIPs of it (up to 10 Mbps), and a pool on
// a load balancer of that account for the Pods that fall back to ports.
const eipObjects = `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: health-eip}
stringData: {secretId: AKIDLOCALEMULATOR00000000000000000, secretKey: localemulatorsecretkey0000000000}
---
apiVersion: tencentcloud.m.crossplane.io/v1alpha1
kind: ProviderConfig
metadata: {name: one-eip, namespace: health-eip}
spec:
  region: ap-guangzhou
  credentials: {source: Secret, secretRef: {name: creds}}
  endpoint: {host: 127.0.0.1:9443, scheme: http}
---
# The platform team's config for that account: the ProviderConfigs of the
# namespaces it serves may use its endpoint.
apiVersion: tencentcloud.crossplane.io/v1alpha1
kind: ClusterProviderConfig
metadata: {name: one-eip}
spec:
  region: ap-guangzhou
  credentials: {source: Secret, secretRef: {namespace: health-eip, name: creds}}
  endpoint: {host: 127.0.0.1:9443, scheme: http}
  consumers: {namespaces: {from: Selector, selector: {matchLabels: {kubernetes.io/metadata.name: health-eip}}}}
---
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: EIPGrant
metadata: {name: health-eip}
spec:
  providerConfigRef: {kind: ProviderConfig, name: one-eip}
  namespaces: {names: [health-eip]}
  maxBandwidth: 10
  maxEIPs: 10
---
apiVersion: clb.tencentcloud.m.crossplane.io/v1alpha1
kind: LoadBalancer
metadata: {name: fallback, namespace: health-eip}
spec:
  forProvider: {type: OPEN}
  providerConfigRef: {kind: ProviderConfig, name: one-eip}
---
apiVersion: clb.tencentcloud.m.crossplane.io/v1alpha1
kind: PortPool
metadata: {name: fallback, namespace: health-eip}
spec:
  forProvider: {loadBalancerIdRefs: [{name: fallback}], startPort: 30300, endPort: 30309}
  providerConfigRef: {kind: ProviderConfig, name: one-eip}
`

// TestHealthOfPodEIPs assesses PodAddresses of per-Pod EIPs at the moments
// a user sees, against an emulator whose account may hold one EIP: a Pod
// bound to its EIP, one that fell back to a port of its fallback pool,
// one without a fallback whose EIP quota is reached, and one asking for
// more than the namespace's grant admits.
func TestHealthOfPodEIPs(t *testing.T) {
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	cfg.EIPQuota = 1
	cfg.AutoENI = true // any Pod IP is on an ENI
	emu, host, err := emulator.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	startProvider(t)

	f := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(f, []byte(eipObjects), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Apply(context.Background(), kube, f, testenv.WithEndpoint(host)); err != nil {
		t.Fatal(err)
	}
	capture(t, groupCLB, "PortPool", eipNS, "fallback", "eip-fallback-ready", argocdhealth.Healthy, poolReady)

	const withFallback = "providerConfig=one-eip fallbackPool=fallback"
	podIn(t, eipNS, "room-0", "room", "10.51.0.1", map[string]string{"network.tencentcloud.crossplane.io/eip": withFallback})
	capture(t, groupNetwork, "PodAddress", eipNS, "room-0", "eip-bound", argocdhealth.Healthy, eipState("Bound", "Associated"))
	podIn(t, eipNS, "room-1", "room", "10.51.0.2", map[string]string{"network.tencentcloud.crossplane.io/eip": withFallback})
	capture(t, groupNetwork, "PodAddress", eipNS, "room-1", "eip-fallback-port", argocdhealth.Healthy, eipState("FallbackPort", "Fallback"))
	podIn(t, eipNS, "room-2", "room", "10.51.0.3", map[string]string{"network.tencentcloud.crossplane.io/eip": "providerConfig=one-eip"})
	capture(t, groupNetwork, "PodAddress", eipNS, "room-2", "eip-quota-exceeded", argocdhealth.Degraded, eipState("QuotaExceeded", "Allocating"))
	podIn(t, eipNS, "room-3", "room", "10.51.0.4", map[string]string{"network.tencentcloud.crossplane.io/eip": "bandwidth=50"})
	capture(t, groupNetwork, "PodAddress", eipNS, "room-3", "eip-not-granted", argocdhealth.Degraded, eipState("NotGranted", ""))
}

// eipState is the moment a PodAddress is in a state with its EIP in
// eip, and, once Bound or FallbackPort, has told its Pod.
func eipState(want, eip string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		if err := state(want)(u); err != nil {
			return err
		}
		if s, _, _ := unstructured.NestedString(u.Object, "status", "eip", "state"); s != eip {
			return errors.Errorf("EIP state %q, want %s", s, eip)
		}
		return nil
	}
}
