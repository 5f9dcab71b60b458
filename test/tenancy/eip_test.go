package tenancy

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/eip"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// The admin's EIP grants: team a (namespaces labelled team=a) may have up
// to 3 EIPs of at most 10 Mbps, billed by traffic, one of them warm,
// through the default ClusterProviderConfig; team a may also name a grant
// of no EIPs at all; the ops namespace (no team's) has a wider grant. Team
// b has none.
const (
	GrantA      = "tenant-a-eips"
	GrantASpent = "tenant-a-spent"
	GrantOps    = "ops-eips"
)

var grantsOnce sync.Once

// grants makes the admin's EIPGrants once, before the first snapshot
// records them.
func grants(ctx context.Context) error {
	var err error
	grantsOnce.Do(func() {
		def := xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}
		for _, g := range []*v1alpha1.EIPGrant{
			// By label, so that the provider reads the namespace with its
			// own RBAC (rbac/pod-addresses.yaml: get namespaces).
			{ObjectMeta: metav1.ObjectMeta{Name: GrantA}, Spec: v1alpha1.EIPGrantSpec{
				ProviderConfigRef: def, Namespaces: v1alpha1.GrantNamespaces{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
				MaxBandwidth: 10, MaxEIPs: 3, MaxWarm: ptr.To[int32](1),
			}},
			{ObjectMeta: metav1.ObjectMeta{Name: GrantASpent}, Spec: v1alpha1.EIPGrantSpec{
				ProviderConfigRef: def, Namespaces: v1alpha1.GrantNamespaces{Names: []string{NamespaceA}},
				MaxBandwidth: 10, MaxEIPs: 0,
			}},
			{ObjectMeta: metav1.ObjectMeta{Name: GrantOps}, Spec: v1alpha1.EIPGrantSpec{
				ProviderConfigRef: def, Namespaces: v1alpha1.GrantNamespaces{Names: []string{"ops"}},
				MaxBandwidth: 100, MaxEIPs: 100,
			}},
		} {
			if err = kube.Create(ctx, g); err != nil {
				return
			}
		}
	})
	return err
}

//nolint:gochecknoinits // each area registers its cases from its file, as the suite asks
func init() {
	// Every attack compares the admin's grants: a tenant must change none.
	compare(func(ctx context.Context, into map[string]string) error {
		if err := grants(ctx); err != nil {
			return err
		}
		l := &v1alpha1.EIPGrantList{}
		if err := kube.List(ctx, l); err != nil {
			return err
		}
		for _, g := range l.Items {
			into["EIPGrant "+g.Name] = jsonOf([]any{g.Spec, g.Status.EIPs, g.Status.Warm})
		}
		return nil
	})

	// eipPod is an attack by who: a Pod of ns with these annotations
	// (and labels app=<name>), refused with want; the Pod goes afterwards.
	eipPod := func(name string, who Who, ns, ip, what string, ann map[string]string, want string) Attack {
		return Attack{
			Name: name, Who: who, What: what, Want: want,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				if _, err := Pod(ctx, who, ns, name, ip, ann); err != nil {
					return "", err
				}
				return Refused(ctx, ns, name, want)
			},
			Cleanup: func(ctx context.Context, t *testing.T) { goneWithAddress(ctx, t, ns, name) },
		}
	}
	attack(
		eipPod("eip-no-grant", TenantB, NamespaceB, "10.2.5.1",
			"a Pod annotated for a billed EIP (100000 Mbps, BANDWIDTH_POSTPAID_BY_HOUR, releasePolicy=Never) in a namespace no grant covers",
			map[string]string{podannotation.AnnotationEIP: "bandwidth=100000 chargeType=BANDWIDTH_POSTPAID_BY_HOUR releasePolicy=Never"},
			"no EIPGrant covers namespace tenant-b"),
		eipPod("eip-over-bandwidth", TenantA, NamespaceA, "10.1.5.1",
			"a Pod annotated for a 100 Mbps EIP where her grant allows 10",
			map[string]string{podannotation.AnnotationEIP: "bandwidth=100"},
			"EIPGrant "+GrantA+": bandwidth 100 Mbps is over its maxBandwidth 10"),
		eipPod("eip-tke-charge-type", TenantA, NamespaceA, "10.1.5.2",
			"a Pod with TKE's eip-attributes billed by bandwidth where her grant allows only traffic billing",
			map[string]string{podannotation.TKEAnnotationEIPAttributes: `{"InternetMaxBandwidthOut":5,"InternetChargeType":"BANDWIDTH_POSTPAID_BY_HOUR"}`},
			"charge type BANDWIDTH_POSTPAID_BY_HOUR is not among its chargeTypes"),
		eipPod("eip-keep-forever", TenantA, NamespaceA, "10.1.5.3",
			"a Pod with TKE's eip-claim-delete-policy Never (kept and billed after the Pod) where her grant does not allow it",
			map[string]string{podannotation.TKEAnnotationEIPAttributes: `{}`, podannotation.TKEAnnotationEIPClaimDeletePolicy: "Never"},
			"release policy Never is not among its releasePolicies"),
		eipPod("eip-other-grant", TenantA, NamespaceA, "10.1.5.4",
			"a Pod that names the ops namespace's wider grant (100 Mbps)",
			map[string]string{podannotation.AnnotationEIP: "grant=" + GrantOps + " bandwidth=50"},
			"EIPGrant "+GrantOps+" does not cover namespace tenant-a"),
		eipPod("eip-other-account", TenantA, NamespaceA, "10.1.5.5",
			"a Pod that names another provider config than her grant's",
			map[string]string{podannotation.AnnotationEIP: "providerConfig=default"},
			"the request names ProviderConfig default, the grant allocates through ClusterProviderConfig default"),
		eipPod("eip-spent-quota", TenantA, NamespaceA, "10.1.5.6",
			"a Pod that names a grant of her namespace whose count quota (0) is used up",
			map[string]string{podannotation.AnnotationEIP: "grant=" + GrantASpent},
			"EIPGrant "+GrantASpent+" allows 0 EIPs at once and all are in use"),
		Attack{
			Name: "eip-warm-policy", Who: TenantA,
			What: "a PodAddressPolicy of hers with eip {bandwidth: 100} and eipWarm: 5",
			Want: "EIPGrant " + GrantA + ": bandwidth 100 Mbps is over its maxBandwidth 10",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				pol := eipPolicy(NamespaceA, "greedy", 100, 5)
				if err := Client(TenantA).Create(ctx, pol); err != nil {
					return "", err
				}
				if _, err := Pod(ctx, TenantA, NamespaceA, "greedy", "10.1.5.7", nil); err != nil {
					return "", err
				}
				return Refused(ctx, NamespaceA, "greedy", "EIPGrant "+GrantA+": bandwidth 100 Mbps is over its maxBandwidth 10")
			},
			Cleanup: func(ctx context.Context, t *testing.T) {
				goneWithAddress(ctx, t, NamespaceA, "greedy")
				if err := kube.Delete(ctx, eipPolicy(NamespaceA, "greedy", 0, 0)); client.IgnoreNotFound(err) != nil {
					t.Fatal(err)
				}
			},
		},
		Attack{
			Name: "tenant-makes-eip-grant", Who: TenantA,
			What: "create an EIPGrant covering her namespace (1000 EIPs of 100000 Mbps)",
			Want: `cannot create resource "eipgrants"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				g := &v1alpha1.EIPGrant{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: v1alpha1.EIPGrantSpec{
					ProviderConfigRef: xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
					Namespaces:        v1alpha1.GrantNamespaces{Names: []string{NamespaceA}},
					MaxBandwidth:      100000, MaxEIPs: 1000,
				}}
				return APIRefusal("create EIPGrant", Client(TenantA).Create(ctx, g))
			},
		},
		Attack{
			Name: "tenant-widens-eip-grant", Who: TenantA,
			What: "patch her namespace's EIPGrant to 1000 EIPs",
			Want: `cannot patch resource "eipgrants"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				g := &v1alpha1.EIPGrant{ObjectMeta: metav1.ObjectMeta{Name: GrantA}}
				patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"maxEIPs":1000}}`))
				return APIRefusal("patch EIPGrant", Client(TenantA).Patch(ctx, g, patch))
			},
		},
	)
	allow(
		Allowed{
			Name: "tenant-eip-within-grant", Who: TenantA,
			What: "a Pod annotated for an EIP within her grant gets one, bound to its IP",
			Try: func(ctx context.Context, t *testing.T) error {
				const ip = "10.1.6.1"
				eni := emulatortest.AddENI(t, cloud, "", ip)
				if _, err := Pod(ctx, TenantA, NamespaceA, "own-eip", ip, map[string]string{podannotation.AnnotationEIP: "bandwidth=10"}); err != nil {
					return err
				}
				return testenv.Eventually(ctx, wait, func() error {
					pa := &v1alpha1.PodAddress{}
					if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: "own-eip"}, pa); err != nil {
						return err
					}
					e := pa.Status.EIP
					if pa.Status.State != v1alpha1.StateBound || e == nil || e.Grant != GrantA {
						return errors.Errorf("state %q (%s), EIP %+v", pa.Status.State, pa.Status.Message, e)
					}
					got, ok := cloud.Inventory().EIP(e.AddressID)
					if !ok || got.ENIID != eni || got.PrivateIP != ip || e.Bandwidth != 10 {
						return errors.Errorf("EIP %s in the cloud: %+v", e.AddressID, got)
					}
					return nil
				})
			},
		},
		Allowed{
			Name: "tenant-warm-within-grant", Who: TenantA,
			What: "a PodAddressPolicy of hers asking for 5 warm EIPs keeps the 1 her grant allows",
			Try: func(ctx context.Context, t *testing.T) error {
				if err := Client(TenantA).Create(ctx, eipPolicy(NamespaceA, "lobby", 5, 5)); err != nil {
					return err
				}
				pool := NamespaceA + "/lobby"
				warm := func() int {
					n := 0
					for _, e := range cloud.Inventory().EIPs {
						if e.Tags[eip.TagWarmPool] == pool {
							n++
						}
					}
					return n
				}
				if err := testenv.Eventually(ctx, wait, func() error {
					g := &v1alpha1.EIPGrant{}
					if err := kube.Get(ctx, client.ObjectKey{Name: GrantA}, g); err != nil {
						return err
					}
					if n := warm(); n != 1 || g.Status.Warm != 1 || g.Status.EIPs != 1 {
						return errors.Errorf("%d warm EIPs in the cloud, grant status %+v; want 1 warm, 1 held", n, g.Status)
					}
					return nil
				}); err != nil {
					return err
				}
				// Several refills later (one a minute by default, and
				// after every take), still one.
				if err := kube.Get(ctx, client.ObjectKey{Namespace: NamespaceA, Name: "lobby"}, &v1alpha1.PodAddressPolicy{}); err != nil {
					return err
				}
				if n := warm(); n != 1 {
					return fmt.Errorf("%d warm EIPs, want 1", n)
				}
				return nil
			},
		},
	)
}

// goneWithAddress deletes Pod ns/name and waits until its PodAddress is
// gone too, so that the next case's comparison starts from a settled
// state: a refused EIP leaves nothing to hold.
func goneWithAddress(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	DeletePod(ctx, t, ns, name)
	eventuallyT(t, "PodAddress "+ns+"/"+name+" gone with its Pod", func() error {
		err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.PodAddress{})
		if err == nil {
			return errors.New("still there")
		}
		return client.IgnoreNotFound(err)
	})
}

// eipPolicy gives the Pods labelled app=<name> of ns an EIP of bandwidth
// Mbps each, with warm EIPs kept ahead.
func eipPolicy(ns, name string, bandwidth int64, warm int32) *v1alpha1.PodAddressPolicy {
	return &v1alpha1.PodAddressPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodAddressPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			EIP:      &v1alpha1.EIPRequest{Bandwidth: ptr.To(bandwidth)},
			EIPWarm:  ptr.To(warm),
		},
	}
}
