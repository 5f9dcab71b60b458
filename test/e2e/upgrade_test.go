package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpmeta "github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	pkgv1 "github.com/crossplane/crossplane/apis/v2/pkg/v1"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/deployed"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpcluster"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

const (
	upgradeNamespace = "rooms"
	upgradePods      = 50
	// upgradeVersion is what the test builds and upgrades to.
	upgradeVersion = "v0.1.1"
)

// TestPackageUpgrade upgrades the packages from version to upgradeVersion,
// built by the test, while 50 Pods of a StatefulSet hold addresses:
// Crossplane rolls the provider to Pods of the new image, every address
// stays, no target is registered or deregistered, and the new provider
// serves a scale-down.
func TestPackageUpgrade(t *testing.T) {
	ctx := context.Background()
	image := gameServer(t, upgradeNamespace)
	// Three load balancers of 25 TCP and 25 UDP listeners each (the
	// emulator's quota is 50 listeners): 75 addresses for 50 Pods.
	xr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "workload.tencentcloud.crossplane.io/v1alpha1",
		"kind":       "PodPublicAddress",
		"metadata":   map[string]any{"namespace": upgradeNamespace, "name": "rooms"},
		"spec": map[string]any{
			"selector":      map[string]any{"matchLabels": map[string]any{"app": "room"}},
			"ports":         []any{map[string]any{"port": int64(deployed.GamePort), "protocol": "TCP_UDP"}},
			"loadBalancers": map[string]any{"template": map[string]any{"type": "OPEN"}, "count": int64(3)},
			"portRange":     map[string]any{"start": int64(7100), "end": int64(7124)},
		},
	}}
	if err := kube.Create(ctx, xr); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	sts := deployed.GameStatefulSet(upgradeNamespace, "room", image, upgradePods)
	if err := kube.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	before := boundRooms(t, upgradePods)
	for pod, b := range before {
		roundTrip(t, b.Address, pod)
	}
	t.Logf("%d Pods bound, Ready and answering through their addresses in %s", upgradePods, time.Since(began).Round(time.Millisecond))
	// A load balancer made in the console, imported Observe-only: after
	// the upgrade it is no namespace's until the admin grants it.
	consoleID := existingLB(t, emulator.DefaultRegion, "made-in-console")
	imported := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: upgradeNamespace, Name: consoleImport}}
	imported.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	xpmeta.SetExternalName(imported, consoleID)
	if err := kube.Create(ctx, imported); err != nil {
		t.Fatal(err)
	}
	lbSynced(t, corev1.ConditionTrue, "", "")
	targets := cloudTargets()
	registered, deregistered := cluster.Cloud.CallCount("BatchRegisterTargets"), cluster.Cloud.CallCount("BatchDeregisterTargets")

	// The new version, built and pushed as a release would be, and the
	// three packages pointed at it.
	began = time.Now()
	if err := xplocal.PushPackages(ctx, cluster.Node.Registry(), upgradeVersion); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s built and pushed in %s", upgradeVersion, time.Since(began).Round(time.Millisecond))
	began = time.Now()
	for _, p := range []pkgv1.Package{
		&pkgv1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: xplocal.ConfigurationName}},
		&pkgv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: xplocal.ProviderPackage}},
		&pkgv1.Function{ObjectMeta: metav1.ObjectMeta{Name: xplocal.FunctionPackage}},
	} {
		eventually(t, "point "+p.GetName()+" at "+upgradeVersion, func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			repo, _, ok := strings.Cut(p.GetSource(), ":"+version)
			if !ok {
				return fmt.Errorf("package %s is not at %s", p.GetSource(), version)
			}
			p.SetSource(repo + ":" + upgradeVersion)
			return kube.Update(ctx, p)
		})
	}
	// An install from before spec.consumers has none (the old CRD pruned
	// it): the new provider refuses the namespace's resources, changing
	// nothing, until the admin adds what docs/install.md says.
	setConsumers(t, nil)
	leader := providerRolled(t)
	t.Logf("Crossplane rolled the provider to %s in %s; %s leads", upgradeVersion, time.Since(began).Round(time.Millisecond), leader)
	if err := xplocal.WaitPackagesHealthy(ctx, kube, wait); err != nil {
		t.Fatal(err)
	}
	lbSynced(t, corev1.ConditionFalse, "ClusterProviderConfig default does not serve namespace "+upgradeNamespace, "")
	// What docs/install.md says to add: the namespaces served, then the
	// untagged objects they may use.
	all := clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}
	setConsumers(t, &clusterv1alpha1.ConfigConsumers{Namespaces: all})
	lbSynced(t, corev1.ConditionTrue, "", consoleImport)
	lbSynced(t, corev1.ConditionFalse, "carries no owner tags (made in the console or by another tool): no grant of ClusterProviderConfig default gives it to namespace "+upgradeNamespace, "!"+consoleImport)
	setConsumers(t, &clusterv1alpha1.ConfigConsumers{Namespaces: all, Grants: []clusterv1alpha1.ObjectGrant{{Namespaces: all}}})
	lbSynced(t, corev1.ConditionTrue, "", "")
	t.Logf("refused until the admin set spec.consumers (namespaces, then grants) on ClusterProviderConfig default, Synced again %s after the upgrade began", time.Since(began).Round(time.Millisecond))

	// Nothing moved: the same addresses, the same targets, no target
	// call, and every address still reaches its Pod.
	after := boundRooms(t, upgradePods)
	for pod, b := range before {
		if a := after[pod]; a.Address != b.Address || a.LoadBalancerID != b.LoadBalancerID {
			t.Errorf("%s moved across the upgrade: %s on %s, had %s on %s", pod, a.Address, a.LoadBalancerID, b.Address, b.LoadBalancerID)
		}
	}
	if got := cloudTargets(); !slices.Equal(got, targets) {
		t.Errorf("targets changed across the upgrade: %d before, %d after", len(targets), len(got))
	}
	if r, d := cluster.Cloud.CallCount("BatchRegisterTargets"), cluster.Cloud.CallCount("BatchDeregisterTargets"); r != registered || d != deregistered {
		t.Errorf("target calls across the upgrade: %d registers, %d deregisters, want none", r-registered, d-deregistered)
	}
	for pod, b := range after {
		roundTrip(t, b.Address, pod)
	}

	// The new provider serves: a scale-down releases one address.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
		t.Fatal(err)
	}
	sts.Spec.Replicas = ptr.To[int32](upgradePods - 1)
	if err := kube.Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one address released after the scale-down", func() error {
		if n := len(cloudTargets()); n != 2*(upgradePods-1) {
			return fmt.Errorf("%d targets, want %d", n, 2*(upgradePods-1))
		}
		return nil
	})

	lbs := &clbv1alpha1.LoadBalancerList{}
	if err := kube.List(ctx, lbs, client.InNamespace(upgradeNamespace)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range lbs.Items {
		if lbs.Items[i].Name != consoleImport {
			ids = append(ids, xpmeta.GetExternalName(&lbs.Items[i]))
		}
	}
	if len(ids) != 3 {
		t.Fatalf("%d LoadBalancers composed (%v), want 3", len(ids), ids)
	}

	began = time.Now()
	if err := kube.Delete(ctx, sts); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, xr); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the composite's load balancers deleted", func() error {
		inv := cluster.Cloud.Inventory()
		var left []string
		for _, id := range ids {
			if lb, ok := inv.LoadBalancer(id); ok {
				left = append(left, fmt.Sprintf("%s (%d listeners)", id, len(lb.Listeners)))
			}
		}
		if len(left) != 0 {
			return fmt.Errorf("left: %s; %s", strings.Join(left, ", "), managedState(ctx, upgradeNamespace))
		}
		return nil
	})
	t.Logf("StatefulSet and PodPublicAddress deleted, their load balancers gone in %s", time.Since(began).Round(time.Millisecond))

	// The Observe-only import goes; the console's load balancer stays.
	if err := kube.Delete(ctx, imported); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the import deleted", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(imported), imported); err == nil {
			return errors.New("still there")
		}
		if _, ok := cluster.Cloud.Inventory().LoadBalancer(consoleID); !ok {
			t.Fatalf("deleting the Observe-only import deleted load balancer %s", consoleID)
		}
		return nil
	})
	deleteLBs(t, emulator.DefaultRegion, []string{consoleID})
}

// consoleImport is the upgrade's LoadBalancer that imports a load
// balancer made in the console.
const consoleImport = "console"

// setConsumers sets spec.consumers of ClusterProviderConfig default.
func setConsumers(t *testing.T, c *clusterv1alpha1.ConfigConsumers) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "set spec.consumers of ClusterProviderConfig default", func() error {
		cpc := &clusterv1alpha1.ClusterProviderConfig{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, cpc); err != nil {
			return err
		}
		cpc.Spec.Consumers = c
		return kube.Update(ctx, cpc)
	})
}

// lbSynced waits until every LoadBalancer of the upgrade's namespace is
// Synced with status (and a message saying msg) and still Ready; but the
// one named skip, or, with "!name", only that one.
func lbSynced(t *testing.T, status corev1.ConditionStatus, msg, skip string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, fmt.Sprintf("the LoadBalancers of %s Synced=%s %s", upgradeNamespace, status, msg), func() error {
		lbs := &clbv1alpha1.LoadBalancerList{}
		if err := kube.List(ctx, lbs, client.InNamespace(upgradeNamespace)); err != nil {
			return err
		}
		if len(lbs.Items) == 0 {
			return errors.New("no LoadBalancer")
		}
		only, isOnly := strings.CutPrefix(skip, "!")
		for i := range lbs.Items {
			lb := &lbs.Items[i]
			if (isOnly && lb.Name != only) || (!isOnly && lb.Name == skip) {
				continue
			}
			if c := lb.GetCondition(xpv2.TypeSynced); c.Status != status || !strings.Contains(c.Message, msg) {
				return fmt.Errorf("LoadBalancer %s: Synced=%s %q", lb.Name, c.Status, c.Message)
			}
			if c := lb.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
				return fmt.Errorf("LoadBalancer %s: Ready=%s %q", lb.Name, c.Status, c.Message)
			}
		}
		return nil
	})
}

// managedState names the LoadBalancers, PortPools and PodAddresses of
// namespace ns with their Synced message: what holds a deletion back.
func managedState(ctx context.Context, ns string) string {
	var out []string
	lbs := &clbv1alpha1.LoadBalancerList{}
	pools := &clbv1alpha1.PortPoolList{}
	pas := &networkv1alpha1.PodAddressList{}
	for _, l := range []client.ObjectList{lbs, pools, pas} {
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
	}
	for i := range lbs.Items {
		out = append(out, "LoadBalancer "+lbs.Items[i].Name+": "+lbs.Items[i].GetCondition(xpv2.TypeSynced).Message)
	}
	for i := range pools.Items {
		out = append(out, "PortPool "+pools.Items[i].Name+": "+pools.Items[i].GetCondition(xpv2.TypeSynced).Message)
	}
	out = append(out, fmt.Sprintf("%d PodAddresses", len(pas.Items)))
	return strings.Join(out, "; ")
}

// boundRooms waits until the n Pods room-<i> are bound and Ready, and
// returns their bindings by Pod name; no address may be held twice.
func boundRooms(t *testing.T, n int) map[string]networkv1alpha1.PortBinding {
	t.Helper()
	ctx := context.Background()
	out := map[string]networkv1alpha1.PortBinding{}
	eventually(t, fmt.Sprintf("%d Pods bound and Ready", n), func() error {
		l := &networkv1alpha1.PodAddressList{}
		if err := kube.List(ctx, l, client.InNamespace(upgradeNamespace)); err != nil {
			return err
		}
		clear(out)
		for _, pa := range l.Items {
			if pa.Status.State == networkv1alpha1.StateBound && len(pa.Status.Bindings) == 1 && pa.Status.Bindings[0].Address != "" {
				out[pa.Name] = pa.Status.Bindings[0]
			}
		}
		if len(out) != n {
			return fmt.Errorf("%d of %d PodAddresses bound", len(out), n)
		}
		pods := &corev1.PodList{}
		if err := kube.List(ctx, pods, client.InNamespace(upgradeNamespace), client.MatchingLabels{"app": "room"}); err != nil {
			return err
		}
		ready := 0
		for i := range pods.Items {
			if isReady(&pods.Items[i]) {
				ready++
			}
		}
		if ready != n {
			return fmt.Errorf("%d of %d Pods Ready", ready, n)
		}
		return nil
	})
	seen := map[string]string{}
	for _, pod := range slices.Sorted(maps.Keys(out)) {
		if other, ok := seen[out[pod].Address]; ok {
			t.Fatalf("%s and %s both hold %s", other, pod, out[pod].Address)
		}
		seen[out[pod].Address] = pod
	}
	return out
}

// cloudTargets is every target of the cloud as "lb listener ip:port",
// sorted.
func cloudTargets() []string {
	var out []string
	for _, lb := range cluster.Cloud.Inventory().LoadBalancers {
		for _, l := range lb.Listeners {
			for _, tg := range l.Targets {
				out = append(out, fmt.Sprintf("%s %s %s:%d", lb.ID, l.ID, tg.IP, tg.Port))
			}
		}
	}
	slices.Sort(out)
	return out
}

// providerRolled waits until the provider's active revision runs
// upgradeVersion, every provider Pod is Ready on its image and no other
// Pod is left, and one of them holds the leader Lease, whose holder it
// returns.
func providerRolled(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var leader string
	eventually(t, "the provider rolled to "+upgradeVersion, func() error {
		p := &pkgv1.Provider{}
		if err := kube.Get(ctx, client.ObjectKey{Name: xplocal.ProviderPackage}, p); err != nil {
			return err
		}
		rev := &pkgv1.ProviderRevision{}
		if err := kube.Get(ctx, client.ObjectKey{Name: p.Status.CurrentRevision}, rev); err != nil {
			return fmt.Errorf("current revision %q: %w", p.Status.CurrentRevision, err)
		}
		if !strings.HasSuffix(rev.GetSource(), ":"+upgradeVersion) {
			return fmt.Errorf("current revision %s: %s", rev.Name, rev.GetSource())
		}
		for _, c := range []xpv2.ConditionType{pkgv1.TypeRevisionHealthy, pkgv1.TypeRuntimeHealthy} {
			if s := rev.GetCondition(c).Status; s != corev1.ConditionTrue {
				return fmt.Errorf("current revision %s: %s %s", rev.Name, c, s)
			}
		}
		pods, err := deployed.PodsOf(ctx, kube, xpcluster.Namespace, "pkg.crossplane.io/provider", xplocal.ProviderPackage)
		if err != nil {
			return err
		}
		names := map[string]bool{}
		for i := range pods {
			pod := &pods[i]
			if img := pod.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+upgradeVersion) || !isReady(pod) || pod.DeletionTimestamp != nil {
				return fmt.Errorf("provider Pod %s: image %s, Ready %t, deleting %t", pod.Name, img, isReady(pod), pod.DeletionTimestamp != nil)
			}
			names[pod.Name] = true
		}
		if len(names) == 0 {
			return errors.New("no provider Pod")
		}
		lease := &coordinationv1.Lease{}
		if err := kube.Get(ctx, leaseKey, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity != nil {
			leader, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
		}
		if !names[leader] {
			return fmt.Errorf("the Lease is held by %q, not a Pod of %s", leader, upgradeVersion)
		}
		return nil
	})
	return leader
}
