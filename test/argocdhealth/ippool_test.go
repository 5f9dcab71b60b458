package argocdhealth

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocdhealth"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

const ipNS = "health-ippool"

// ipPools: a pool, a claim that keeps its IP for a second after release,
// and a Pod naming it.
const ipPools = `
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: NetPool
metadata: {name: rooms}
spec: {net: 10.60.0.0, mask: 16, gateway: 10.60.0.1, hosts: [10.60.255.1], availableIPs: [10.60.1.1, 10.60.1.2, 10.60.1.3]}
---
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: NetIPClaim
metadata: {name: db, namespace: health-ippool}
spec: {expiredDuration: 1s}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: health-ippool
  annotations: {network.tencentcloud.crossplane.io/ipclaim: db}
spec:
  containers: [{name: db, image: example/db}]
`

// overlap is a pool listing an IP of the first (a conflict), applied once
// the first has its NetIPs.
const overlap = `
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: NetPool
metadata: {name: overlap}
spec: {net: 10.60.0.0, mask: 16, gateway: 10.60.0.1, hosts: [10.60.255.2], availableIPs: [10.60.1.3, 10.60.2.1]}
`

// TestHealthOfIPPools assesses NetPools and NetIPClaims at the moments a
// user sees: a pool Synced, one with an IP of another pool, one whose
// deletion waits for an Active IP; a claim waiting for its Pod, Bound,
// and Expired after its IP went back to the pool.
func TestHealthOfIPPools(t *testing.T) {
	base := startIPPools(t, env.Config)
	apply(t, ipPools)

	capture(t, groupNetwork, "NetPool", "", "rooms", "synced", argocdhealth.Healthy, condition("Ready", "True", "Synced"))
	apply(t, overlap)
	capture(t, groupNetwork, "NetPool", "", "overlap", "ip-in-another-pool", argocdhealth.Degraded, condition("Ready", "False", "IPConflict"))
	capture(t, groupNetwork, "NetIPClaim", ipNS, "db", "waiting-for-a-pod", argocdhealth.Progressing, phase(v1alpha1.ClaimPending))

	claimed := ippool.Request{Host: "10.60.255.1", ContainerID: "db", PodName: "db-0", PodNamespace: ipNS}
	netservice(t, base, http.MethodPost, claimed)
	capture(t, groupNetwork, "NetIPClaim", ipNS, "db", "bound", argocdhealth.Healthy, phase(v1alpha1.ClaimBound))
	netservice(t, base, http.MethodDelete, claimed)
	capture(t, groupNetwork, "NetIPClaim", ipNS, "db", "expired", argocdhealth.Suspended, phase(v1alpha1.ClaimExpired))

	// A container holds an IP of the pool being deleted.
	held := ippool.Request{Host: "10.60.255.1", ContainerID: "game"}
	netservice(t, base, http.MethodPost, held)
	pool := &unstructured.Unstructured{}
	pool.SetAPIVersion(groupNetwork)
	pool.SetKind("NetPool")
	pool.SetName("rooms")
	if err := kube.Delete(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	capture(t, groupNetwork, "NetPool", "", "rooms", "deletion-waits-for-active-ip", argocdhealth.Progressing, condition("Ready", "False", "DeletionBlocked"))
	netservice(t, base, http.MethodDelete, held)
	pool.SetName("overlap")
	if err := kube.Delete(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	// Both gone before the controller stops.
	if err := testenv.Eventually(context.Background(), wait, func() error {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(groupNetwork)
		l.SetKind("NetPoolList")
		if err := kube.List(context.Background(), l); err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return errors.Errorf("%d NetPools left", len(l.Items))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestHealthOfARefusedNetPool: a provider whose RBAC lacks netips delete
// (Crossplane's grants without examples/provider/rbac) cannot remove
// an IP taken out of the pool; the pool is Degraded with the refusal.
func TestHealthOfARefusedNetPool(t *testing.T) {
	ctx := context.Background()
	sa, err := env.AsServiceAccount(ctx, testenv.ProviderSANamespace, "without-rbac-yaml")
	if err != nil {
		t.Fatal(err)
	}
	startIPPools(t, sa)
	apply(t, `
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: NetPool
metadata: {name: refused}
spec: {net: 10.61.0.0, mask: 16, gateway: 10.61.0.1, hosts: [10.61.255.1], availableIPs: [10.61.1.1, 10.61.1.2]}
`)
	pool := &unstructured.Unstructured{}
	pool.SetAPIVersion(groupNetwork)
	pool.SetKind("NetPool")
	if err := testenv.Eventually(ctx, wait, func() error {
		if err := kube.Get(ctx, client.ObjectKey{Name: "refused"}, pool); err != nil {
			return err
		}
		return condition("Ready", "True", "Synced")(pool)
	}); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringSlice(pool.Object, []string{"10.61.1.1"}, "spec", "availableIPs"); err != nil {
		t.Fatal(err)
	}
	if err := kube.Update(ctx, pool); err != nil {
		t.Fatal(err)
	}
	capture(t, groupNetwork, "NetPool", "", "refused", "netip-delete-forbidden", argocdhealth.Degraded, condition("Synced", "False", "ReconcileError"))
	// Left to the control plane, which stops with the test binary: this
	// provider cannot delete it.
}

// startIPPools runs the NetPool and NetIPClaim controllers and the
// allocator API as cfg's identity until the test ends, and returns the
// API's base URL.
func startIPPools(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	shared.StartProvider(t, suite.As(cfg), suite.IPPools(addr, time.Hour))
	return "http://" + addr
}

// netservice makes an allocator call (POST allocates, DELETE releases),
// retrying while the API is not serving yet, and fails the test unless it
// succeeds.
func netservice(t *testing.T, base, method string, req ippool.Request) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.Eventually(context.Background(), wait, func() error {
		r, err := http.NewRequest(method, base+ippool.AllocatorPath, bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		e := ippool.Envelope{}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			return err
		}
		if e.Code != ippool.CodeOK {
			return errors.Errorf("%s %+v: code %d %s", method, req, e.Code, e.Message)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// phase is the moment a NetIPClaim is in a phase.
func phase(want string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		if p, _, _ := unstructured.NestedString(u.Object, "status", "phase"); p != want {
			return errors.Errorf("phase %q, want %s", p, want)
		}
		return nil
	}
}
