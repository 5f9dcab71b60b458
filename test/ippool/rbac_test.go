package ippool

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestLeastPrivilege runs the NetPool and NetIPClaim controllers and the
// allocator as the provider's ServiceAccount, with only Crossplane's
// default grants plus the RBAC of core and IP pools
// (examples/provider/rbac), through a pool's life:
// NetIPs created, an IP removed from the pool, a claim's Pod, a
// StatefulSet Pod and a plain container allocating (Pods and claims read
// uncached), claim statuses written, releases, and the pool deleted with
// its NetIPs. A permission missing from those files stalls one of these
// (without netips delete, the removed IP's NetIP and the pool stay).
func TestLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	sa, err := env.AsProvider(ctx, testenv.FeatureIPPools)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := startProviderAs(t, sa, time.Hour)
	host := "10.39.255.1"
	p := newPool(t, "rbac", 39, 5, host)

	// An Available IP leaves the pool: its NetIP is deleted.
	update(t, p.Name, func(p *v1alpha1.NetPool) {
		p.Spec.AvailableIPs = slices.DeleteFunc(p.Spec.AvailableIPs, func(s string) bool { return s == "10.39.1.5" })
	})
	waitCounts(t, p.Name, 4, 4, 0, 0)
	if err := kube.Get(ctx, types.NamespacedName{Name: "10.39.1.5"}, &v1alpha1.NetIP{}); !kerrors.IsNotFound(err) {
		t.Errorf("the NetIP of the removed IP: %v", err)
	}

	namespace(t, "ippool-rbac")
	claim := &v1alpha1.NetIPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ippool-rbac", Name: "db"}}
	if err := kube.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, pod("ippool-rbac", "db-0", map[string]string{v1alpha1.AnnotationIPClaim: "db"})); err != nil {
		t.Fatal(err)
	}
	sts := statefulSetPod(t, "ippool-rbac", "web", nil)
	claimed := allocate(t, base, ippool.Request{Host: host, ContainerID: "claimed", PodName: "db-0", PodNamespace: "ippool-rbac"})
	fixed := allocate(t, base, ippool.Request{Host: host, ContainerID: "sts", PodName: sts.Name, PodNamespace: sts.Namespace})
	allocate(t, base, ippool.Request{Host: host, ContainerID: "plain"})
	if !claimed.Fixed || !fixed.Fixed {
		t.Errorf("fixed leases %+v and %+v", claimed, fixed)
	}
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return err
		}
		return claimIs(claim, v1alpha1.ClaimBound, claimed.IPAddr)
	}); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, p.Name, 4, 1, 3, 0)

	release(t, base, ippool.Request{Host: host, ContainerID: "plain"})
	release(t, base, ippool.Request{Host: host, ContainerID: "sts"})
	if got := releaseHost(t, base, host); len(got) != 1 || got[0].IPAddr != claimed.IPAddr {
		t.Errorf("release of the host freed %+v, want only %s", got, claimed.IPAddr)
	}
	waitCounts(t, p.Name, 4, 2, 0, 2)

	// The pool goes with its NetIPs, the two Reserved ones included.
	if err := kube.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		switch err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); {
		case err == nil:
			return fmt.Errorf("pool still there: %+v", p.Status)
		case !kerrors.IsNotFound(err):
			return err
		}
		if n := len(poolIPs(t, p.Name)); n != 0 {
			return fmt.Errorf("%d NetIPs left", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRefusedCallOnThePool: a provider without the RBAC of
// examples/provider/rbac (Crossplane's grants alone) answers a Pod's allocation with why, and
// cannot take a removed IP's NetIP away; the pool's Synced condition says
// so, with the API server's refusal, rather
// than a Ready pool that is not what its spec says. A provider that may
// delete puts it right and the condition clears.
func TestRefusedCallOnThePool(t *testing.T) {
	ctx := context.Background()
	sa, err := env.AsServiceAccount(ctx, testenv.ProviderSANamespace, "without-rbac-yaml")
	if err != nil {
		t.Fatal(err)
	}
	base, stop := startProviderAs(t, sa, time.Hour)
	p := newPool(t, "refused", 40, 3, "10.40.255.1")
	// Pods cannot be read either: the CNI is told why.
	status, e, err := call(base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "10.40.255.1", ContainerID: "c", PodName: "p", PodNamespace: "default"})
	if err != nil || status != http.StatusServiceUnavailable || e.Code != ippool.CodeUnavailable || !strings.Contains(e.Message, "the provider's RBAC refuses a call the allocator needs") {
		t.Errorf("allocate without pods get: %d %+v %v", status, e, err)
	}
	update(t, p.Name, func(p *v1alpha1.NetPool) { p.Spec.AvailableIPs = p.Spec.AvailableIPs[:2] })
	synced := func(status corev1.ConditionStatus, message string) {
		t.Helper()
		if err := testenv.Eventually(ctx, time.Minute, func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			c := p.Status.GetCondition(xpv2.TypeSynced)
			if c.Status != status || !strings.Contains(c.Message, message) {
				return fmt.Errorf("Synced %s %q, want %s with %q", c.Status, c.Message, status, message)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	synced(corev1.ConditionFalse, `cannot delete resource "netips"`)
	if _, err := getNetIP(ctx, "10.40.1.3"); err != nil {
		t.Errorf("the removed IP's NetIP: %v", err)
	}

	stop()
	startProvider(t, time.Hour)
	synced(corev1.ConditionTrue, "")
	waitCounts(t, p.Name, 2, 2, 0, 0)
	if ip, err := getNetIP(ctx, "10.40.1.3"); !kerrors.IsNotFound(err) {
		t.Errorf("the removed IP's NetIP after a provider that may delete: %+v %v", ip, err)
	}
	// While this provider runs: the cleanup would stop it first.
	deletePool(t, p.Name)
}

func getNetIP(ctx context.Context, name string) (*v1alpha1.NetIP, error) {
	ip := &v1alpha1.NetIP{}
	return ip, kube.Get(ctx, types.NamespacedName{Name: name}, ip)
}
