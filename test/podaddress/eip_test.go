package podaddress

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	vpcclient "github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/eip"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// eipCloud starts an emulator of its own for one test, with an EIP quota
// (and the daily limit of twice as many), and a ProviderConfig "team-a"
// for it in ns. The emulator keeps the VPC's ENIs: nodes × ipsPerNode
// private IPs 10.<node>.0.<i> (node from 1), one ENI per node, as VPC-CNI
// gives Pods. It returns the IPs, node by node.
func eipCloud(t *testing.T, ns string, quota, nodes, ipsPerNode int) (*emulator.Emulator, []string) {
	t.Helper()
	return eipCloudWith(t, ns, quota, nodes, ipsPerNode, func(s *v1alpha1.EIPGrantSpec) {
		s.ChargeTypes = []string{"TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE"}
		s.ReleasePolicies = []string{v1alpha1.EIPReleaseAfterKeep, v1alpha1.EIPReleaseNever}
		s.MaxBandwidth, s.MaxEIPs, s.MaxWarm = 100000, 1000, ptr.To[int32](100)
	})
}

// eipCloudWith is eipCloud with the EIPGrant ns (covering ns, through
// "team-a") as eipGrant makes it and grant changes.
func eipCloudWith(t *testing.T, ns string, quota, nodes, ipsPerNode int, grant func(*v1alpha1.EIPGrantSpec)) (*emulator.Emulator, []string) {
	t.Helper()
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	cfg.EIPQuota = quota
	emu, endpoint, err := emulator.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	if err := testenv.ApplyTeamProviderConfig(context.Background(), kube, ns, endpoint); err != nil {
		t.Fatal(err)
	}
	eipGrant(t, ns, teamA.DeepCopy(), grant)
	var ips []string
	for n := 1; n <= nodes; n++ {
		var node []string
		for i := 1; i <= ipsPerNode; i++ {
			node = append(node, fmt.Sprintf("10.%d.0.%d", n, i))
		}
		emulatortest.AddENI(t, emu, "", node...)
		ips = append(ips, node...)
	}
	return emu, ips
}

var teamA = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team-a"}

// eipGrant creates the EIPGrant ns (deleted when the test ends) covering
// namespace ns, allocating through ref: 10 Mbps, 10 EIPs, none warm, the
// default charge type, ISP and release policy, unless mut says otherwise.
func eipGrant(t *testing.T, ns string, ref *xpv2.ProviderConfigReference, mut func(*v1alpha1.EIPGrantSpec)) *v1alpha1.EIPGrant {
	t.Helper()
	g := &v1alpha1.EIPGrant{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.EIPGrantSpec{
		ProviderConfigRef: *ref, Namespaces: v1alpha1.GrantNamespaces{Names: []string{ns}},
		MaxBandwidth: 10, MaxEIPs: 10,
	}}
	if mut != nil {
		mut(&g.Spec)
	}
	if err := kube.Create(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), g) })
	return g
}

// eniOf is the ENI that holds ip in the emulator.
func eniOf(emu *emulator.Emulator, ip string) string {
	for _, n := range emu.Inventory().ENIs {
		if slices.Contains(n.IPs, ip) {
			return n.ID
		}
	}
	return ""
}

// eipsIn lists the EIPs of the emulator.
func eipsIn(emu *emulator.Emulator) []emulator.InventoryEIP { return emu.Inventory().EIPs }

// checkAssociated checks that pa's EIP is, in the emulator, bound to the
// Pod IP's ENI and that IP, and that the Pod was told it.
func checkAssociated(t *testing.T, emu *emulator.Emulator, pa *v1alpha1.PodAddress, ip string) {
	t.Helper()
	e := pa.Status.EIP
	if e == nil || e.AddressID == "" || e.PublicIP == "" {
		t.Fatalf("%s: no EIP recorded: %+v", pa.Name, e)
	}
	got, ok := emu.Inventory().EIP(e.AddressID)
	switch {
	case !ok:
		t.Fatalf("%s: EIP %s is not in the emulator", pa.Name, e.AddressID)
	case got.PrivateIP != ip || got.ENIID != eniOf(emu, ip) || got.ENIID == "":
		t.Fatalf("%s: EIP %s is bound to %s/%s, want %s/%s", pa.Name, e.AddressID, got.ENIID, got.PrivateIP, eniOf(emu, ip), ip)
	case got.IP != e.PublicIP:
		t.Fatalf("%s: EIP %s has address %s, status says %s", pa.Name, e.AddressID, got.IP, e.PublicIP)
	case e.ENIID != got.ENIID || e.PrivateIP != ip || e.State != v1alpha1.EIPAssociated:
		t.Fatalf("%s: status %+v does not match the cloud %+v", pa.Name, e, got)
	}
	// The Pod is told right after the state is recorded.
	eventually(t, pa.Name+" told its EIP", func() error {
		pod := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pa), pod); err != nil {
			return err
		}
		as, err := podannotation.ParseAddresses(pod.Annotations[podannotation.AnnotationAddresses])
		if err != nil || len(as) != 1 || as[0].Address != e.PublicIP || as[0].AddressID != e.AddressID {
			return errors.Errorf("told %q (%v), want its EIP %s", pod.Annotations[podannotation.AnnotationAddresses], err, e.PublicIP)
		}
		if s := pod.Annotations[podannotation.AnnotationStatus]; s != podannotation.StatusReady {
			return errors.Errorf("status annotation %q", s)
		}
		return nil
	})
}

// noEIPsLeft waits until the emulator holds no EIP.
func noEIPsLeft(t *testing.T, emu *emulator.Emulator) {
	t.Helper()
	eventually(t, "every EIP released", func() error {
		if es := eipsIn(emu); len(es) > 0 {
			return errors.Errorf("%d EIPs left, e.g. %+v", len(es), es[0])
		}
		return nil
	})
}

func eipPolicy(t *testing.T, ns, name string, req v1alpha1.EIPRequest, warm *int32) *v1alpha1.PodAddressPolicy {
	t.Helper()
	pol := &v1alpha1.PodAddressPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodAddressPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "battle"}},
			EIP:      &req,
			EIPWarm:  warm,
		},
	}
	if err := kube.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	return pol
}

// TestEIPPerPod gives 50 Pods of a policy one EIP each: every EIP is its
// Pod's own, bound in the emulator to the ENI that holds the Pod's IP and
// to that IP, and the Pod is told it. Deleting the Pods releases every EIP.
func TestEIPPerPod(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, ips := eipCloud(t, ns, 60, 5, 10)
	pol := eipPolicy(t, ns, "rooms", v1alpha1.EIPRequest{Bandwidth: ptr.To[int64](10), ProviderConfigRef: teamA}, nil)

	const n = 50
	pods := make([]*corev1.Pod, n)
	for i := range n {
		pods[i] = pod(t, ns, fmt.Sprintf("room-%d", i), ips[i], nil)
	}
	ids, addrs := map[string]string{}, map[string]string{}
	for i, p := range pods {
		pa := bound(t, ns, p.Name)
		checkAssociated(t, emu, pa, ips[i])
		e := pa.Status.EIP
		if other, dup := ids[e.AddressID]; dup {
			t.Fatalf("EIP %s given to %s and %s", e.AddressID, other, p.Name)
		}
		if other, dup := addrs[e.PublicIP]; dup {
			t.Fatalf("address %s given to %s and %s", e.PublicIP, other, p.Name)
		}
		ids[e.AddressID], addrs[e.PublicIP] = p.Name, p.Name
		if e.Bandwidth != 10 {
			t.Errorf("%s: bandwidth %d, want 10", p.Name, e.Bandwidth)
		}
	}
	if got := len(eipsIn(emu)); got != n {
		t.Fatalf("%d EIPs in the emulator, want %d", got, n)
	}
	policyStatus(t, pol, n, n, corev1.ConditionTrue)
	t.Logf("%d Pods bound with %d AllocateAddresses, %d AssociateAddress calls", n,
		emu.CallCount("AllocateAddresses"), emu.CallCount("AssociateAddress"))

	for _, p := range pods {
		deletePod(t, p)
	}
	noEIPsLeft(t, emu)
	eventually(t, "PodAddresses gone", func() error {
		l := &v1alpha1.PodAddressList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return errors.Errorf("%d left", len(l.Items))
		}
		return nil
	})
}

// TestEIPRetained recreates StatefulSet Pods within their keep duration,
// and with release policy Never: each gets the same EIP again, bound to
// its new IP (on another ENI); while the Pod is gone its EIP is bound to
// nothing, so that the old IP's next owner does not get it. Deleting the
// held PodAddress releases the EIP.
func TestEIPRetained(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, ips := eipCloud(t, ns, 10, 2, 5)
	cases := map[string]map[string]string{
		"keep-0":  {podannotation.AnnotationEIP: "providerConfig=team-a", podannotation.AnnotationKeepDuration: "1h"},
		"never-0": {podannotation.AnnotationEIP: "providerConfig=team-a releasePolicy=Never"},
	}
	first := map[string]*v1alpha1.PodAddress{}
	i := 0
	for name, ann := range cases {
		p := pod(t, ns, name, ips[i], ann)
		pa := bound(t, ns, name)
		checkAssociated(t, emu, pa, ips[i])
		first[name] = pa
		deletePod(t, p)
		held := state(t, ns, name, v1alpha1.StateHeld)
		if (held.Status.ReleaseAt == nil) != (name == "never-0") {
			t.Errorf("%s: releaseAt %v", name, held.Status.ReleaseAt)
		}
		got, _ := emu.Inventory().EIP(pa.Status.EIP.AddressID)
		if got.ENIID != "" || got.PrivateIP != "" || got.Status != "UNBIND" {
			t.Fatalf("%s: a held EIP is still bound: %+v", name, got)
		}
		// The new Pod lands on the other node.
		newIP := ips[5+i]
		pod(t, ns, name, newIP, ann)
		again := bound(t, ns, name)
		if again.Status.EIP.AddressID != pa.Status.EIP.AddressID || again.Status.EIP.PublicIP != pa.Status.EIP.PublicIP {
			t.Fatalf("%s: recreated with EIP %s (%s), want %s (%s)", name, again.Status.EIP.AddressID, again.Status.EIP.PublicIP,
				pa.Status.EIP.AddressID, pa.Status.EIP.PublicIP)
		}
		checkAssociated(t, emu, again, newIP)
		i++
	}
	if got := emu.CallCount("AllocateAddresses"); got != 2 {
		t.Errorf("%d AllocateAddresses calls, want 2", got)
	}
	// A Pod gone for good under Never: its EIP goes with the PodAddress.
	deletePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "never-0"}})
	state(t, ns, "never-0", v1alpha1.StateHeld)
	if err := kube.Delete(context.Background(), &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "never-0"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "never-0's EIP released", func() error {
		if _, ok := emu.Inventory().EIP(first["never-0"].Status.EIP.AddressID); ok {
			return errors.New("still there")
		}
		return nil
	})
	// Its PodAddress goes too, before this test's emulator closes: a
	// finalizer left calling a closed endpoint would fail reconciles of
	// the tests after this one.
	eventually(t, "never-0's PodAddress gone", func() error {
		err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "never-0"}, &v1alpha1.PodAddress{})
		if err == nil {
			return errors.New("still there")
		}
		return client.IgnoreNotFound(err)
	})
	if _, ok := emu.Inventory().EIP(first["keep-0"].Status.EIP.AddressID); !ok {
		t.Fatal("keep-0's EIP went too")
	}
}

// TestEIPQuotaFallback exhausts an account's EIP quota of 2: a third Pod
// that names a fallback pool gets a port of it (state FallbackPort, an
// EIPFallback event, its address told as a port address); a fourth without
// one is QuotaExceeded and told NotReady, and binds an EIP once one is
// released (it retries with backoff).
func TestEIPQuotaFallback(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, ips := eipCloud(t, ns, 2, 1, 6)
	lb(t, ns, "fb-lb", "BGP")
	pool(t, ns, "fallback", []string{"fb-lb"}, 31000, 31009)

	ann := map[string]string{podannotation.AnnotationEIP: "providerConfig=team-a fallbackPool=fallback"}
	for i := range 2 {
		pod(t, ns, fmt.Sprintf("eip-%d", i), ips[i], ann)
		checkAssociated(t, emu, bound(t, ns, fmt.Sprintf("eip-%d", i)), ips[i])
	}
	fb := pod(t, ns, "fb-0", ips[2], ann)
	pa := state(t, ns, "fb-0", v1alpha1.StateFallbackPort)
	if pa.Status.EIP == nil || pa.Status.EIP.State != v1alpha1.EIPFallback || !strings.Contains(pa.Status.EIP.Reason, "quota") {
		t.Fatalf("fallback not recorded: %+v", pa.Status.EIP)
	}
	if !strings.Contains(pa.Status.Message, "fallback pool") || len(pa.Status.Bindings) != 1 {
		t.Fatalf("message %q, bindings %+v", pa.Status.Message, pa.Status.Bindings)
	}
	b := pa.Status.Bindings[0]
	if b.Pool != ns+"/fallback" || b.ContainerPort != 7777 || b.Address == "" {
		t.Fatalf("fallback binding %+v", b)
	}
	if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); !slices.Equal(got, []string{ips[2] + ":7777"}) {
		t.Fatalf("targets of the fallback listener: %v", got)
	}
	podAnnotation(t, fb, podannotation.AnnotationStatus, podannotation.StatusReady)
	got := &corev1.Pod{}
	_ = kube.Get(context.Background(), client.ObjectKeyFromObject(fb), got)
	if as, _ := podannotation.ParseAddresses(got.Annotations[podannotation.AnnotationAddresses]); len(as) != 1 || as[0].Address != b.Address {
		t.Fatalf("fallback Pod told %q, want %s", got.Annotations[podannotation.AnnotationAddresses], b.Address)
	}
	waitEvent(t, ns, "fb-0", "EIPFallback")

	none := pod(t, ns, "none-0", ips[3], map[string]string{podannotation.AnnotationEIP: "providerConfig=team-a"})
	pa = state(t, ns, "none-0", v1alpha1.StateQuotaExceeded)
	if !strings.Contains(pa.Status.Message, "quota") {
		t.Fatalf("message %q", pa.Status.Message)
	}
	podAnnotation(t, none, podannotation.AnnotationStatus, podannotation.StatusNotReady)
	if n := len(eipsIn(emu)); n != 2 {
		t.Fatalf("%d EIPs, want the quota's 2", n)
	}

	// Freeing one EIP lets the waiting Pod bind, by its own retries.
	deletePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "eip-0"}})
	checkAssociated(t, emu, bound(t, ns, "none-0"), ips[3])
	// The fallback Pod stays on its port (fallback lasts for the Pod).
	if pa := state(t, ns, "fb-0", v1alpha1.StateFallbackPort); pa.Status.Bindings[0].Address != b.Address {
		t.Fatalf("fallback address changed to %s", pa.Status.Bindings[0].Address)
	}
	deletePod(t, fb)
	eventually(t, "fallback port released", func() error {
		if got := cloudTargets(b.LoadBalancerID, b.ListenerIDs["TCP"]); len(got) > 0 {
			return errors.Errorf("targets %v", got)
		}
		return nil
	})
}

// waitEvent waits for an Event of reason on the Pod.
func waitEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	eventually(t, "event "+reason+" on "+name, func() error {
		l := &corev1.EventList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "Pod" && e.Reason == reason {
				return nil
			}
		}
		return errors.New("none yet")
	})
}

// TestEIPWarmPool keeps 10 EIPs warm for a policy: a burst of 10 Pods
// takes them, so that the burst costs fewer AllocateAddresses calls than
// Pods (the refill after it is one call), every Pod still gets its own
// EIP, and the pool is refilled. Lowering eipWarm to 0 releases the idle
// ones; the emulator's idle account shows what they cost.
func TestEIPWarmPool(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, ips := eipCloud(t, ns, 40, 2, 10)
	pol := eipPolicy(t, ns, "warm", v1alpha1.EIPRequest{ProviderConfigRef: teamA}, ptr.To[int32](10))
	key := ns + "/warm"
	warmFree := func() int {
		n := 0
		for _, e := range eipsIn(emu) {
			if e.Tags[eip.TagWarmPool] == key && e.Status == "UNBIND" {
				n++
			}
		}
		return n
	}
	eventually(t, "10 warm EIPs", func() error {
		if n := warmFree(); n != 10 {
			return errors.Errorf("%d free warm EIPs", n)
		}
		return nil
	})
	before := emu.CallCount("AllocateAddresses")

	const n = 10
	seen := map[string]string{}
	for i := range n {
		pod(t, ns, fmt.Sprintf("burst-%d", i), ips[i], nil)
	}
	for i := range n {
		name := fmt.Sprintf("burst-%d", i)
		pa := bound(t, ns, name)
		checkAssociated(t, emu, pa, ips[i])
		if other, dup := seen[pa.Status.EIP.AddressID]; dup {
			t.Fatalf("EIP %s given to %s and %s", pa.Status.EIP.AddressID, other, name)
		}
		seen[pa.Status.EIP.AddressID] = name
	}
	during := emu.CallCount("AllocateAddresses") - before
	taken := 0
	for _, pa := range seen {
		got := &v1alpha1.PodAddress{}
		_ = kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pa}, got)
		if got.Status.EIP.WarmPool == key {
			taken++
		}
	}
	// The calls during the burst include the warmer's refills, whose
	// number depends on how long the burst took on this machine: what the
	// pool absorbed is the Pods that took a warm EIP.
	t.Logf("burst of %d Pods: %d taken from the warm pool, %d AllocateAddresses calls during it (refills included)", n, taken, during)
	if taken == 0 {
		t.Fatal("no Pod took a warm EIP")
	}
	eventually(t, "the warm pool refilled", func() error {
		if f := warmFree(); f != 10 {
			return errors.Errorf("%d free warm EIPs", f)
		}
		return nil
	})

	// No warm pool: the idle EIPs are released, the Pods' kept.
	eventually(t, "eipWarm set to 0", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(pol), pol); err != nil {
			return err
		}
		pol.Spec.EIPWarm = ptr.To[int32](0)
		return kube.Update(context.Background(), pol)
	})
	// Also those still being created when eipWarm changed, on a later round.
	eventually(t, "idle warm EIPs released", func() error {
		if got := len(eipsIn(emu)); got != n {
			return errors.Errorf("%d EIPs left (%d free warm ones), want the %d Pods'", got, warmFree(), n)
		}
		return nil
	})
	idle := emu.EIPIdle()
	t.Logf("idle EIP time: %.1f s released, %.1f s in all", idle.ReleasedIdleSeconds, idle.TotalIdleSeconds)
	if idle.ReleasedIdleSeconds <= 0 {
		t.Error("the emulator accounted no idle time for the released warm EIPs")
	}
}

// TestEIPProviderKilled SIGKILLs the provider process while 40 Pods of a
// policy get EIPs (allocations and associations slowed down, so that some
// are sent and not answered when it dies), deletes a quarter of the Pods
// while no provider runs, and lets a new provider process finish. Then
// every live Pod has its own EIP bound to its IP, and the emulator holds
// exactly those EIPs: none leaked, none given twice.
func TestEIPProviderKilled(t *testing.T) {
	bin, err := testenv.BuildProvider(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := startProviderProcess(t, bin, "first")
	ns := namespace(t)
	emu, ips := eipCloud(t, ns, 100, 4, 10)
	if err := emu.SetFaults(emulator.Faults{Delays: []emulator.FaultDelay{
		{Action: "AllocateAddresses", MinSeconds: 0.05, MaxSeconds: 0.5},
		{Action: "AssociateAddress", MinSeconds: 0.05, MaxSeconds: 0.5},
	}}); err != nil {
		t.Fatal(err)
	}
	eipPolicy(t, ns, "rooms", v1alpha1.EIPRequest{ProviderConfigRef: teamA}, nil)

	const n = 40
	pods := make([]*corev1.Pod, n)
	for i := range n {
		pods[i] = pod(t, ns, fmt.Sprintf("room-%d", i), ips[i], nil)
	}
	eventually(t, "allocations under way", func() error {
		if c := emu.CallCount("AllocateAddresses"); c < n/4 {
			return errors.Errorf("%d AllocateAddresses calls", c)
		}
		return nil
	})
	first.Kill()
	inv := eipsIn(emu)
	t.Logf("provider SIGKILLed after %d AllocateAddresses and %d AssociateAddress calls; %d EIPs in the cloud",
		emu.CallCount("AllocateAddresses"), emu.CallCount("AssociateAddress"), len(inv))
	for _, p := range pods[:n/4] {
		deletePod(t, p)
	}
	second := startProviderProcess(t, bin, "second")

	live := pods[n/4:]
	seen := map[string]string{}
	for i, p := range live {
		pa := bound(t, ns, p.Name)
		checkAssociated(t, emu, pa, ips[n/4+i])
		if other, dup := seen[pa.Status.EIP.AddressID]; dup {
			t.Fatalf("EIP %s given to %s and %s", pa.Status.EIP.AddressID, other, p.Name)
		}
		seen[pa.Status.EIP.AddressID] = p.Name
	}
	eventually(t, "only the live Pods' EIPs in the cloud", func() error {
		var extra []string
		for _, e := range eipsIn(emu) {
			if _, ok := seen[e.ID]; !ok {
				extra = append(extra, fmt.Sprintf("%s(%s %s)", e.ID, e.Status, e.Tags[eip.TagOwner]))
			}
		}
		if len(extra) > 0 || len(eipsIn(emu)) != len(live) {
			return errors.Errorf("%d EIPs for %d live Pods; not theirs: %v", len(eipsIn(emu)), len(live), extra)
		}
		return nil
	})
	t.Logf("done with %d AllocateAddresses, %d ReleaseAddresses calls in all", emu.CallCount("AllocateAddresses"), emu.CallCount("ReleaseAddresses"))
	second.StopWithin(t, 10*time.Second)
}

// TestEIPExamples applies examples/network/eip-statefulset.yaml and
// eip-policy.yaml (with the port pool example they fall back to) against
// the shared emulator, whose provider may do what README's CAM policy
// allows: the StatefulSet's Pods and a lobby Pod get EIPs bound to their
// IPs, the lobby Pod one of the policy's two warm EIPs. Everything is
// released at the end.
func TestEIPExamples(t *testing.T) {
	startProvider(t)
	ctx := context.Background()
	root := testenv.RepoRoot()
	if _, err := testenv.Apply(ctx, kube, filepath.Join(root, "examples", "clb", "portpool.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"eip-grant.yaml", "eip-statefulset.yaml", "eip-policy.yaml"} {
		if _, err := testenv.Apply(ctx, kube, filepath.Join(root, "examples", "network", f)); err != nil {
			t.Fatal(err)
		}
	}
	emulatortest.AddENI(t, cloud, "", "10.23.0.1", "10.23.0.2", "10.24.0.1")
	pol := &v1alpha1.PodAddressPolicy{}
	pol.SetNamespace("examples")
	pol.SetName("lobby")
	warmFree := func() int {
		n := 0
		for _, e := range eipsIn(cloud) {
			if e.Tags[eip.TagWarmPool] == "examples/lobby" && e.Status == "UNBIND" {
				n++
			}
		}
		return n
	}
	eventually(t, "2 warm EIPs", func() error {
		if n := warmFree(); n != 2 {
			return errors.Errorf("%d", n)
		}
		return nil
	})

	rooms := runStatefulSet(t, "eip-rooms", "10.23.0")
	for i, p := range rooms {
		pa := bound(t, "examples", p.Name)
		checkAssociated(t, cloud, pa, fmt.Sprintf("10.23.0.%d", i+1))
		if pa.Status.EIP.Bandwidth != 10 || pa.Spec.EIP.ReleasePolicy != v1alpha1.EIPReleaseNever {
			t.Errorf("%s: %+v from %+v", p.Name, pa.Status.EIP, pa.Spec.EIP)
		}
	}
	lobby := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "examples", Name: "lobby-0", Labels: map[string]string{"app": "lobby"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "lobby", Image: "example/lobby"}}},
	}
	if err := kube.Create(ctx, lobby); err != nil {
		t.Fatal(err)
	}
	setIP(t, lobby, "10.24.0.1")
	pa := bound(t, "examples", "lobby-0")
	checkAssociated(t, cloud, pa, "10.24.0.1")
	if pa.Status.EIP.WarmPool != "examples/lobby" || pa.Status.EIP.Bandwidth != 5 {
		t.Errorf("lobby-0 EIP %+v, want one of the warm pool's, 5 Mbps", pa.Status.EIP)
	}
	// The grant counts what it handed out: three Pods' EIPs, two warm.
	grant := &v1alpha1.EIPGrant{ObjectMeta: metav1.ObjectMeta{Name: "examples"}}
	t.Cleanup(func() { _ = kube.Delete(ctx, grant) })
	eventually(t, "the grant's status counts 3 EIPs and 2 warm", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(grant), grant); err != nil {
			return err
		}
		if grant.Status.EIPs != 3 || grant.Status.Warm != 2 || pa.Status.EIP.Grant != "examples" {
			return errors.Errorf("status %+v, lobby-0's grant %q", grant.Status, pa.Status.EIP.Grant)
		}
		return nil
	})

	// Clean up: no warm pool, no Pods, no held PodAddresses, no EIP.
	eventually(t, "eipWarm 0", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pol), pol); err != nil {
			return err
		}
		pol.Spec.EIPWarm = ptr.To[int32](0)
		return kube.Update(ctx, pol)
	})
	eventually(t, "warm EIPs released", func() error {
		if n := warmFree(); n != 0 {
			return errors.Errorf("%d", n)
		}
		return nil
	})
	for _, p := range append(rooms, lobby) {
		deletePod(t, p)
		_ = kube.Delete(ctx, &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: "examples", Name: p.Name}})
	}
	if err := kube.Delete(ctx, pol); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the examples' EIPs released", func() error {
		for _, e := range eipsIn(cloud) {
			if strings.HasPrefix(e.PrivateIP, "10.23.") || strings.HasPrefix(e.PrivateIP, "10.24.") || e.Tags[eip.TagWarmPool] != "" {
				return errors.Errorf("%+v left", e)
			}
		}
		if n := len(eipsIn(cloud)); n > 0 {
			return errors.Errorf("%d EIPs left", n)
		}
		return nil
	})
}

// TestEIPIsolated isolates a Pod with an EIP: the EIP is disassociated and
// kept (state Isolated), and associated again with the Pod's IP when the
// annotation goes.
func TestEIPIsolated(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, ips := eipCloud(t, ns, 5, 1, 2)
	p := pod(t, ns, "iso-0", ips[0], map[string]string{podannotation.AnnotationEIP: "providerConfig=team-a"})
	pa := bound(t, ns, "iso-0")
	checkAssociated(t, emu, pa, ips[0])
	id := pa.Status.EIP.AddressID

	annotate := func(v string) {
		eventually(t, "annotate", func() error {
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			if v == "" {
				delete(p.Annotations, podannotation.AnnotationIsolated)
			} else {
				p.Annotations[podannotation.AnnotationIsolated] = v
			}
			return kube.Update(context.Background(), p)
		})
	}
	annotate("true")
	iso := state(t, ns, "iso-0", v1alpha1.StateIsolated)
	got, _ := emu.Inventory().EIP(id)
	if iso.Status.EIP.AddressID != id || got.Status != "UNBIND" || got.PrivateIP != "" {
		t.Fatalf("isolated: status %+v, cloud %+v", iso.Status.EIP, got)
	}
	annotate("")
	again := bound(t, ns, "iso-0")
	if again.Status.EIP.AddressID != id {
		t.Fatalf("EIP %s after isolation, want %s", again.Status.EIP.AddressID, id)
	}
	checkAssociated(t, emu, again, ips[0])
}

// TestEIPRequestChangedMidAllocation: a provider was killed after its
// AllocateAddresses (bandwidth 5) landed and before it recorded the
// answer; the Pod's request then changed to bandwidth 10, and the tag
// index does not show the EIP yet. The new provider sends the recorded
// allocation again (same ClientToken, same parameters: the same EIP, not a
// refusal), and, as no Pod was told that EIP, releases it and binds one of
// bandwidth 10. The first EIP is not leaked.
func TestEIPRequestChangedMidAllocation(t *testing.T) {
	ns := namespace(t)
	emu, ips := eipCloud(t, ns, 10, 1, 2)
	ctx := context.Background()
	p := pod(t, ns, "room", ips[0], map[string]string{podannotation.AnnotationEIP: "bandwidth=5 providerConfig=team-a"})

	// What the killed provider left: the PodAddress of the request then,
	// with its allocation recorded as sent ...
	pa := &v1alpha1.PodAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name, Finalizers: []string{podaddress.Finalizer}},
		Spec: v1alpha1.PodAddressSpec{
			PodUID: string(p.UID), Source: "annotation/native",
			EIP: &v1alpha1.EIPRequest{Bandwidth: ptr.To[int64](5), ProviderConfigRef: teamA},
		},
	}
	if err := kube.Create(ctx, pa); err != nil {
		t.Fatal(err)
	}
	pa.Status.State = v1alpha1.StateAllocated
	pa.Status.EIP = &v1alpha1.EIPBinding{
		State: v1alpha1.EIPAllocating, OwnerTag: string(pa.UID), Region: emulator.DefaultRegion,
		ISP: "BGP", ChargeType: "TRAFFIC_POSTPAID_BY_HOUR", Bandwidth: 5,
	}
	if err := sealOf(t).Seal(pa); err != nil {
		t.Fatal(err)
	}
	if err := kube.Status().Update(ctx, pa); err != nil {
		t.Fatal(err)
	}
	// ... and its call, which landed.
	c, err := vpcclient.NewPool(vpcclient.Options{}).Client(clients.Config{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey,
		Region: emulator.DefaultRegion, Endpoint: emu.Endpoint(), Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := c.Allocate(ctx, eip.AllocateRequest(pa))
	if err != nil || len(first) != 1 {
		t.Fatalf("the killed provider's allocation: %v %v", first, err)
	}
	if err := emu.SetFaults(emulator.Faults{TagFilterLagSeconds: 3600}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request changed", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Annotations[podannotation.AnnotationEIP] = "bandwidth=10 providerConfig=team-a"
		return kube.Update(ctx, p)
	})

	startProvider(t)
	pa = bound(t, ns, p.Name)
	checkAssociated(t, emu, pa, ips[0])
	if e := pa.Status.EIP; e.Bandwidth != 10 || e.AddressID == first[0] {
		t.Errorf("bound to %s of %d Mbps, want a new EIP of 10 Mbps (not %s)", e.AddressID, e.Bandwidth, first[0])
	}
	eventually(t, "only the Pod's EIP in the cloud", func() error {
		if es := eipsIn(emu); len(es) != 1 || es[0].ID != pa.Status.EIP.AddressID {
			return errors.Errorf("EIPs %+v, want only %s", es, pa.Status.EIP.AddressID)
		}
		return nil
	})
	calls := emu.Calls()["AllocateAddresses"]
	t.Logf("AllocateAddresses: %v", calls)
	if len(calls) != 1 || calls["OK"] != 3 {
		t.Errorf("AllocateAddresses answered %v, want 3 OK (the killed provider's, sent again, the replacement) and no refusal", calls)
	}
}
