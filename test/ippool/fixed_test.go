package ippool

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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

// pod is a Pod object with annotations; no kubelet runs it.
func pod(ns, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/c:1"}}},
	}
}

// statefulSetPod creates a StatefulSet and a Pod it controls.
func statefulSetPod(t *testing.T, ns, name string, annotations map[string]string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod(ns, name, nil).Spec},
		},
	}
	if err := kube.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	p := pod(ns, name+"-0", annotations)
	p.Labels = labels
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitIP waits until a NetIP's status satisfies ok.
func waitIP(t *testing.T, name string, ok func(v1alpha1.NetIPStatus) bool) v1alpha1.NetIPStatus {
	t.Helper()
	ip := &v1alpha1.NetIP{}
	if err := testenv.Eventually(context.Background(), time.Minute, func() error {
		if err := kube.Get(context.Background(), types.NamespacedName{Name: name}, ip); err != nil {
			return err
		}
		if !ok(ip.Status) {
			return fmt.Errorf("NetIP %s status %+v", name, ip.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ip.Status
}

// TestFixedIPStatefulSet: a StatefulSet Pod's next container gets the
// same IP within the keep time; after it the IP is Available again.
func TestFixedIPStatefulSet(t *testing.T) {
	base := startProvider(t, time.Hour)
	newPool(t, "fixed-sts", 36, 20, "10.36.255.1", "10.36.255.2")
	namespace(t, "ippool-sts")
	p := statefulSetPod(t, "ippool-sts", "db", map[string]string{v1alpha1.AnnotationFixedIPKeep: "3s"})
	req := ippool.Request{Host: "10.36.255.1", ContainerID: "first", PodName: p.Name, PodNamespace: p.Namespace}
	first := allocate(t, base, req)
	if !first.Fixed {
		t.Errorf("a StatefulSet Pod's lease is not fixed: %+v", first)
	}
	release(t, base, req)
	s := netIP(t, first.IPAddr).Status
	if s.Status != v1alpha1.NetIPReserved || s.PodPrimaryKey != "ippool-sts/db-0" || s.KeepDuration != "3s" || s.FixedIPExpiredTime == "" || s.ContainerID != "" {
		t.Fatalf("released fixed IP: %+v", s)
	}
	waitCounts(t, "fixed-sts", 20, 19, 0, 1)
	// Another Pod cannot take it, by name or by chance.
	if _, e, _ := call(base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "10.36.255.1", ContainerID: "other", IPAddr: first.IPAddr}); e.Code != ippool.CodeIPTaken {
		t.Errorf("another container asking for the reserved IP: %+v", e)
	}
	// The next container of the Pod, on the other host of the pool.
	req.ContainerID, req.Host = "second", "10.36.255.2"
	if again := allocate(t, base, req); again.IPAddr != first.IPAddr {
		t.Fatalf("the Pod's second container got %s, want %s", again.IPAddr, first.IPAddr)
	}
	release(t, base, req)
	// Expired: Available, and nothing of the Pod left on it.
	waitIP(t, first.IPAddr, func(s v1alpha1.NetIPStatus) bool {
		return s.Status == v1alpha1.NetIPAvailable && !s.Fixed && s.PodPrimaryKey == "" && s.FixedIPExpiredTime == ""
	})
	waitCounts(t, "fixed-sts", 20, 20, 0, 0)
}

// TestFixedIPClaim applies examples/network/netpool-claim.yaml's claim
// and Pod (expiredDuration shortened): the claim is Bound to one IP that
// the Pod's containers get back, then Expired once the time is up; a
// claim naming its IP gets that IP, and keeps it while it exists.
func TestFixedIPClaim(t *testing.T) {
	base := startProvider(t, time.Hour)
	ctx := context.Background()
	newPool(t, "fixed-claim", 37, 20, "10.37.255.1")
	objs, err := testenv.ReadYAML(examplePath("netpool-claim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	namespace(t, "ippool-example")
	for _, o := range objs {
		if o.GetKind() == "NetIPClaim" {
			o.Object["spec"] = map[string]any{"expiredDuration": "3s"}
		}
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	claim := types.NamespacedName{Namespace: "ippool-example", Name: "game-db"}
	req := ippool.Request{Host: "10.37.255.1", ContainerID: "first", PodName: "game-db-0", PodNamespace: "ippool-example"}
	first := allocate(t, base, req)
	c := &v1alpha1.NetIPClaim{}
	if err := kube.Get(ctx, claim, c); err != nil || claimIs(c, v1alpha1.ClaimBound, first.IPAddr) != nil {
		t.Fatalf("claim %+v %v", c.Status, err)
	}
	if s := netIP(t, first.IPAddr).Status; s.IPClaimKey != "ippool-example/game-db" || !s.Fixed {
		t.Errorf("NetIP status %+v", s)
	}
	release(t, base, req)
	req.ContainerID = "second"
	if again := allocate(t, base, req); again.IPAddr != first.IPAddr {
		t.Fatalf("the claim's second container got %s, want %s", again.IPAddr, first.IPAddr)
	}
	release(t, base, req)
	waitIP(t, first.IPAddr, func(s v1alpha1.NetIPStatus) bool { return s.Status == v1alpha1.NetIPAvailable && s.IPClaimKey == "" })
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		if err := kube.Get(ctx, claim, c); err != nil {
			return err
		}
		return claimIs(c, v1alpha1.ClaimExpired, "")
	}); err != nil {
		t.Fatal(err)
	}

	// A claim that names its IP and keeps it forever: kept until deleted.
	named := &v1alpha1.NetIPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ippool-example", Name: "named"}, Spec: v1alpha1.NetIPClaimSpec{NetIPName: "10.37.1.7"}}
	if err := kube.Create(ctx, named); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, pod("ippool-example", "named-0", map[string]string{v1alpha1.AnnotationBCSIPClaim: "named"})); err != nil {
		t.Fatal(err)
	}
	nreq := ippool.Request{Host: "10.37.255.1", ContainerID: "n1", PodName: "named-0", PodNamespace: "ippool-example"}
	if l := allocate(t, base, nreq); l.IPAddr != "10.37.1.7" {
		t.Fatalf("the named claim got %s, want 10.37.1.7", l.IPAddr)
	}
	release(t, base, nreq)
	if s := netIP(t, "10.37.1.7").Status; s.Status != v1alpha1.NetIPReserved || s.FixedIPExpiredTime != "" {
		t.Fatalf("a claim without expiredDuration: %+v", s)
	}
	if err := kube.Delete(ctx, named); err != nil {
		t.Fatal(err)
	}
	waitIP(t, "10.37.1.7", func(s v1alpha1.NetIPStatus) bool { return s.Status == v1alpha1.NetIPAvailable && !s.Fixed })
	_ = kube.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("ippool-example"))
	_ = kube.DeleteAllOf(ctx, &v1alpha1.NetIPClaim{}, client.InNamespace("ippool-example"))
}

// TestClaimStatusMirrorsNetIP: a new claim is Pending; a claim whose
// status was lost (a provider killed between the NetIP write and the
// claim write) is put right from the NetIP; after its IP expires it is
// Expired.
func TestClaimStatusMirrorsNetIP(t *testing.T) {
	base := startProvider(t, time.Hour)
	ctx := context.Background()
	newPool(t, "claim-mirror", 38, 4, "10.38.255.1")
	namespace(t, "ippool-mirror")
	claim := &v1alpha1.NetIPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ippool-mirror", Name: "db"},
		Spec: v1alpha1.NetIPClaimSpec{ExpiredDuration: &metav1.Duration{Duration: time.Second}}}
	if err := kube.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	waitClaim := func(phase, ip string) {
		t.Helper()
		if err := testenv.Eventually(ctx, time.Minute, func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
				return err
			}
			return claimIs(claim, phase, ip)
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitClaim(v1alpha1.ClaimPending, "")

	if err := kube.Create(ctx, pod("ippool-mirror", "db-0", map[string]string{v1alpha1.AnnotationIPClaim: "db"})); err != nil {
		t.Fatal(err)
	}
	req := ippool.Request{Host: "10.38.255.1", ContainerID: "c1", PodName: "db-0", PodNamespace: "ippool-mirror"}
	l := allocate(t, base, req)
	waitClaim(v1alpha1.ClaimBound, l.IPAddr)

	// The claim's status lost: the NetIP still says whose it is.
	claim.Status = v1alpha1.NetIPClaimStatus{Phase: v1alpha1.ClaimPending}
	if err := kube.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	waitClaim(v1alpha1.ClaimBound, l.IPAddr)

	release(t, base, req)
	waitIP(t, l.IPAddr, func(s v1alpha1.NetIPStatus) bool { return s.Status == v1alpha1.NetIPAvailable })
	waitClaim(v1alpha1.ClaimExpired, "")
	_ = kube.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("ippool-mirror"))
}

// TestFixedIPRemovedFromPool: a Reserved IP taken out of its pool goes at
// once, like an Available one, and is not given back even to its Pod,
// whose next container gets another IP of the pool.
func TestFixedIPRemovedFromPool(t *testing.T) {
	base := startProvider(t, time.Hour)
	ctx := context.Background()
	newPool(t, "fixed-removed", 42, 3, "10.42.255.1")
	namespace(t, "ippool-removed")
	p := statefulSetPod(t, "ippool-removed", "db", nil)
	req := ippool.Request{Host: "10.42.255.1", ContainerID: "first", PodName: p.Name, PodNamespace: p.Namespace}
	first := allocate(t, base, req)
	release(t, base, req)
	waitCounts(t, "fixed-removed", 3, 2, 0, 1)

	update(t, "fixed-removed", func(p *v1alpha1.NetPool) {
		p.Spec.AvailableIPs = slices.DeleteFunc(p.Spec.AvailableIPs, func(s string) bool { return s == first.IPAddr })
	})
	waitCounts(t, "fixed-removed", 2, 2, 0, 0)
	if err := kube.Get(ctx, types.NamespacedName{Name: first.IPAddr}, &v1alpha1.NetIP{}); !kerrors.IsNotFound(err) {
		t.Errorf("the removed Reserved IP's NetIP: %v", err)
	}
	req.ContainerID = "second"
	if again := allocate(t, base, req); again.IPAddr == first.IPAddr || !again.Fixed {
		t.Errorf("the Pod's next container after its IP left the pool: %+v", again)
	}
	waitCounts(t, "fixed-removed", 2, 1, 1, 0)
	release(t, base, req)
	_ = kube.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("ippool-removed"))
}

// claimIs checks a claim's phase, its IP and the Ready condition that says
// the same (True only while Bound), which Argo CD's built-in check reads.
func claimIs(c *v1alpha1.NetIPClaim, phase, ip string) error {
	ready := corev1.ConditionFalse
	if phase == v1alpha1.ClaimBound {
		ready = corev1.ConditionTrue
	}
	if r := c.Status.GetCondition(xpv2.TypeReady); c.Status.Phase != phase || c.Status.BoundedIP != ip || r.Status != ready {
		return fmt.Errorf("claim %s %q Ready=%s (%s), want %s %q Ready=%s", c.Status.Phase, c.Status.BoundedIP, r.Status, r.Reason, phase, ip, ready)
	}
	return nil
}
