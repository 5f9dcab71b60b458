package podaddress

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// narrow is a grant of the defaults (10 Mbps, traffic billing, BGP,
// AfterKeepDuration), max EIPs, none warm.
func narrow(maxEIPs int32) func(*v1alpha1.EIPGrantSpec) {
	return func(s *v1alpha1.EIPGrantSpec) { s.MaxEIPs = maxEIPs }
}

// notGranted waits for name to be NotGranted with a message containing
// want and its Pod to have an EIPNotGranted event.
func notGranted(t *testing.T, ns, name, want string) {
	t.Helper()
	pa := state(t, ns, name, v1alpha1.StateNotGranted)
	if !strings.Contains(pa.Status.Message, want) {
		t.Errorf("%s: %q, want it to say %q", name, pa.Status.Message, want)
	}
	if pa.Status.EIP != nil {
		t.Errorf("%s: an EIP is recorded: %+v", name, pa.Status.EIP)
	}
	waitEvent(t, ns, name, "EIPNotGranted")
}

// TestEIPGrantRefusals asks for EIPs beyond what the grant of the
// namespace admits, and from a namespace no grant covers: each Pod is
// NotGranted with a message naming the grant and the limit, an
// EIPNotGranted warning, and nothing reaches the cloud (no
// AllocateAddresses, no EIP); a policy asking for 100 Mbps and 5 warm EIPs
// gets none either. A grant created later for the other namespace serves
// its waiting Pod without anything else changing.
func TestEIPGrantRefusals(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, ips := eipCloudWith(t, ns, 50, 1, 10, narrow(10))

	cases := []struct{ name, ann, want string }{
		{"fat", "providerConfig=team-a bandwidth=100", "EIPGrant " + ns + ": bandwidth 100 Mbps is over its maxBandwidth 10"},
		{"billed", "providerConfig=team-a chargeType=BANDWIDTH_POSTPAID_BY_HOUR", "charge type BANDWIDTH_POSTPAID_BY_HOUR is not among its chargeTypes"},
		{"forever", "providerConfig=team-a releasePolicy=Never", "release policy Never is not among its releasePolicies"},
		{"other-config", "providerConfig=someone-else", "the request names ProviderConfig someone-else, the grant allocates through ProviderConfig team-a"},
		{"other-grant", "grant=nobodys", "no EIPGrant nobodys"},
	}
	for i, c := range cases {
		pod(t, ns, c.name, ips[i], map[string]string{podannotation.AnnotationEIP: c.ann})
	}
	// TKE's annotations are held to the same grant.
	pod(t, ns, "tke", ips[5], map[string]string{podannotation.TKEAnnotationEIPAttributes: `{"InternetMaxBandwidthOut":100000,"InternetChargeType":"BANDWIDTH_POSTPAID_BY_HOUR"}`})
	// The policy: 100 Mbps, 5 warm.
	eipPolicy(t, ns, "greedy", v1alpha1.EIPRequest{Bandwidth: ptr.To[int64](100)}, ptr.To[int32](5))
	pod(t, ns, "greedy-0", ips[6], nil)

	for _, c := range cases {
		notGranted(t, ns, c.name, c.want)
	}
	notGranted(t, ns, "tke", "bandwidth 100000 Mbps is over its maxBandwidth 10")
	notGranted(t, ns, "greedy-0", "bandwidth 100 Mbps is over its maxBandwidth 10")

	// A namespace no grant covers.
	other := namespace(t)
	if err := testenv.ApplyTeamProviderConfig(context.Background(), kube, other, emu.Endpoint()); err != nil {
		t.Fatal(err)
	}
	pod(t, other, "stranger", ips[7], map[string]string{podannotation.AnnotationEIP: "true"})
	notGranted(t, other, "stranger", "no EIPGrant covers namespace "+other)

	// Several warm rounds (300 ms each) later, still nothing in the cloud.
	time.Sleep(2 * time.Second)
	if n, es := emu.CallCount("AllocateAddresses"), eipsIn(emu); n != 0 || len(es) != 0 {
		t.Fatalf("%d AllocateAddresses calls, %d EIPs: want none before a grant admits a request", n, len(es))
	}

	// The admin grants the other namespace: its Pod binds.
	eipGrant(t, other, teamA.DeepCopy(), nil)
	checkAssociated(t, emu, bound(t, other, "stranger"), ips[7])
	if pa := bound(t, other, "stranger"); pa.Status.EIP.Grant != other || pa.Status.EIP.ProviderConfigRef == nil || *pa.Status.EIP.ProviderConfigRef != *teamA {
		t.Errorf("stranger's EIP recorded under grant %q through %v", pa.Status.EIP.Grant, pa.Status.EIP.ProviderConfigRef)
	}
	deletePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "stranger"}})
	noEIPsLeft(t, emu)
	// Its PodAddress goes while this cloud still answers: one left behind
	// is reconciled by the next tests' providers against a cloud that is
	// gone, and their reconcile error counts are not theirs.
	gone(t, &v1alpha1.PodAddress{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "stranger"}})
}

// TestEIPGrantQuota: a grant of 3 EIPs and a burst of 8 Pods. Exactly 3
// bind, the others are QuotaExceeded with a message naming the grant, and
// the emulator saw 3 AllocateAddresses; a new provider process (the
// counts rebuilt from the statuses) lets no fourth through; a Pod that
// goes frees a place that a waiting Pod takes. The grant's status counts
// them.
func TestEIPGrantQuota(t *testing.T) {
	stop := startProvider(t)
	ns := namespace(t)
	emu, ips := eipCloudWith(t, ns, 50, 1, 10, narrow(3))

	const n = 8
	for i := range n {
		pod(t, ns, fmt.Sprintf("q-%d", i), ips[i], map[string]string{podannotation.AnnotationEIP: "true"})
	}
	states := func() (bound, over []string, err error) {
		l := &v1alpha1.PodAddressList{}
		if err := kube.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return nil, nil, err
		}
		for _, pa := range l.Items {
			switch pa.Status.State {
			case v1alpha1.StateBound:
				bound = append(bound, pa.Name)
			case v1alpha1.StateQuotaExceeded:
				if !strings.Contains(pa.Status.Message, "EIPGrant "+ns+" allows 3 EIPs at once and all are in use") {
					return nil, nil, errors.Errorf("%s: %q", pa.Name, pa.Status.Message)
				}
				over = append(over, pa.Name)
			}
		}
		return bound, over, nil
	}
	var held []string
	eventually(t, "3 Bound, 5 QuotaExceeded", func() error {
		b, o, err := states()
		if err != nil {
			return err
		}
		if len(b) != 3 || len(o) != n-3 {
			return errors.Errorf("bound %v, over %v", b, o)
		}
		held = b
		return nil
	})
	if c, es := emu.CallCount("AllocateAddresses"), len(eipsIn(emu)); c != 3 || es != 3 {
		t.Fatalf("%d AllocateAddresses, %d EIPs: want 3 and 3", c, es)
	}
	grantStatus(t, ns, 3)

	// A new process counts from the statuses: still no fourth.
	stop()
	startProvider(t)
	time.Sleep(3 * time.Second) // the QuotaExceeded Pods retry within it
	if b, o, err := states(); err != nil || len(b) != 3 || len(o) != n-3 {
		t.Fatalf("after a restart: bound %v, over %v (%v)", b, o, err)
	}
	if c := len(eipsIn(emu)); c != 3 {
		t.Fatalf("%d EIPs after a restart, want 3", c)
	}

	// One goes, one waiting Pod takes its place.
	deletePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: held[0]}})
	eventually(t, "a waiting Pod bound in the freed place", func() error {
		b, o, err := states()
		if err != nil {
			return err
		}
		if len(b) != 3 || len(o) != n-4 {
			return errors.Errorf("bound %v, over %v", b, o)
		}
		return nil
	})
	if c := len(eipsIn(emu)); c != 3 {
		t.Fatalf("%d EIPs, want 3", c)
	}
	grantStatus(t, ns, 3)
	for i := range n {
		deletePod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("q-%d", i)}})
	}
	noEIPsLeft(t, emu)
	grantStatus(t, ns, 0)
}

// grantStatus waits for the status of grant name to count n EIPs.
func grantStatus(t *testing.T, name string, n int32) {
	t.Helper()
	eventually(t, fmt.Sprintf("grant %s counts %d EIPs", name, n), func() error {
		g := &v1alpha1.EIPGrant{}
		if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, g); err != nil {
			return err
		}
		if g.Status.EIPs != n {
			return errors.Errorf("status %+v", g.Status)
		}
		return nil
	})
}

// TestEIPRefusedGonePodStops: Pods ask for EIPs the grant admits and the
// cloud does not give: one the cloud refuses (100000 Mbps billed by
// bandwidth, which the cloud caps at 100, release policy Never), which
// says Invalid with the cloud's reason and retries with a growing
// backoff, and one that waits for the account's quota (release policy
// Never, QuotaExceeded, its allocation recorded). Once their Pods are
// deleted there is nothing to hold, the PodAddresses go, and no
// AllocateAddresses is sent any more: it used to be sent for them every
// minute, for Pods that no longer existed.
func TestEIPRefusedGonePodStops(t *testing.T) {
	startProvider(t)
	ns := namespace(t)
	emu, ips := eipCloud(t, ns, 1, 1, 3)
	holder := pod(t, ns, "holder", ips[0], map[string]string{podannotation.AnnotationEIP: "providerConfig=team-a"})
	checkAssociated(t, emu, bound(t, ns, "holder"), ips[0])
	refused := pod(t, ns, "refused", ips[1], map[string]string{
		podannotation.AnnotationEIP: "providerConfig=team-a bandwidth=100000 chargeType=BANDWIDTH_POSTPAID_BY_HOUR releasePolicy=Never",
	})
	pa := state(t, ns, "refused", v1alpha1.StateInvalid)
	if !strings.Contains(pa.Status.Message, "the cloud refuses the EIP") || !strings.Contains(pa.Status.Message, "BandwidthOutOfRange") {
		t.Errorf("message %q", pa.Status.Message)
	}
	waitEvent(t, ns, "refused", "InvalidAddressRequest")
	waiting := pod(t, ns, "waiting", ips[2], map[string]string{podannotation.AnnotationEIP: "providerConfig=team-a releasePolicy=Never"})
	if pa := state(t, ns, "waiting", v1alpha1.StateQuotaExceeded); pa.Status.EIP == nil || pa.Status.EIP.State != v1alpha1.EIPAllocating {
		t.Fatalf("waiting: EIP %+v, want its allocation recorded", pa.Status.EIP)
	}

	for _, p := range []*corev1.Pod{refused, waiting} {
		deletePod(t, p)
		eventually(t, "the PodAddress of the gone Pod "+p.Name+" deleted", func() error {
			err := kube.Get(context.Background(), client.ObjectKeyFromObject(p), &v1alpha1.PodAddress{})
			if err == nil {
				return errors.New("still there")
			}
			return client.IgnoreNotFound(err)
		})
	}
	after := emu.CallCount("AllocateAddresses")
	time.Sleep(5 * time.Second)
	if c := emu.CallCount("AllocateAddresses"); c != after {
		t.Fatalf("%d AllocateAddresses calls after the Pods and their PodAddresses were gone", c-after)
	}
	deletePod(t, holder)
	noEIPsLeft(t, emu)
}
