package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	providerv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
)

// TestRoundBackoff: a load balancer whose read fails is skipped by the
// rounds until its wait (doubled per failure, capped) is over, without
// holding up the others; a read that succeeds again clears it.
func TestRoundBackoff(t *testing.T) {
	ctx := context.Background()
	pp := portPool()
	pp.Status.AtProvider.LoadBalancers = append(pp.Status.AtProvider.LoadBalancers,
		clbv1alpha1.PoolLoadBalancerStatus{ID: "lb-2", State: clbv1alpha1.PoolLBReady, Listeners: map[string]string{"TCP/100": "lbl-2"}})
	cloud := region(nil) // lb-2 is not in the region: its read fails
	kube := newKube(t, interceptor.Funcs{}, pp, bound("pa-1", binding(lbl100, "10.0.0.1")))
	a := auditor(kube, kube, cloud, nil, &eventLog{}, &logLog{})
	pa1 := types.NamespacedName{Namespace: "team-a", Name: "pa-1"}

	// waits checks lb-2's failures and that it is skipped for about want.
	waits := func(step string, failures int, want time.Duration) {
		t.Helper()
		f, ok := a.failing["lb-2"]
		if !ok || f.failures != failures {
			t.Fatalf("%s: lb-2 failing %+v (%t), want %d failures", step, f, ok, failures)
		}
		if left := time.Until(f.until); left > want || left < want-time.Minute/2 {
			t.Errorf("%s: lb-2 skipped for %v more, want about %v", step, left, want)
		}
	}

	err := a.round(ctx)
	if err == nil || !strings.Contains(err.Error(), "load balancer lb-2") {
		t.Fatalf("a failed read: round = %v, want the load balancer's error", err)
	}
	if cloud.TargetReads != 2 {
		t.Errorf("first round: %d reads, want 2", cloud.TargetReads)
	}
	if _, ok := a.repairs.Get(pa1); !ok {
		t.Error("lb-2's failure held up the audit of lb-1")
	}
	waits("first failure", 1, 2*time.Minute)

	if err := a.round(ctx); err != nil {
		t.Errorf("a round skipping the failing load balancer: %v", err)
	}
	if cloud.TargetReads != 3 {
		t.Errorf("second round: %d reads in all, want 3 (lb-2 skipped)", cloud.TargetReads)
	}

	a.failing["lb-2"] = failure{until: time.Now().Add(-time.Second), failures: 1}
	if err := a.round(ctx); err == nil {
		t.Error("lb-2's read failed again without an error")
	}
	waits("second failure", 2, 4*time.Minute)

	a.failing["lb-2"] = failure{until: time.Now().Add(-time.Second), failures: 6}
	_ = a.round(ctx)
	waits("capped", 7, maxAuditBackoff)

	a.failing["lb-2"] = failure{until: time.Now().Add(-time.Second), failures: 7}
	cloud.AddLB("lb-2", nil)
	if err := a.round(ctx); err != nil {
		t.Errorf("lb-2 readable again: round = %v", err)
	}
	if _, ok := a.failing["lb-2"]; ok {
		t.Error("a load balancer read again is still skipped")
	}
}

// TestRepairs: a finding is handed out until its reconcile finishes or
// drops it; one read before the last repair ended is dropped; old repair
// times are forgotten.
func TestRepairs(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "team-a", Name: "pa-1"}
	other := types.NamespacedName{Namespace: "team-a", Name: "pa-2"}
	ts := []clb.Target{{ListenerID: lbl100, EniIP: "10.0.0.1", Port: 8080}}
	rs := NewRepairs(prometheus.NewRegistry())

	rs.add(ctx, key, Repair{BoundAt: boundAt, seenAt: time.Now(), Targets: ts})
	if rp, ok := rs.Get(key); !ok || len(rp.Targets) != 1 || !rp.BoundAt.Equal(&boundAt) {
		t.Fatalf("Get after add = %+v, %t", rp, ok)
	}
	select {
	case e := <-rs.Wake():
		if e.Object.GetNamespace() != key.Namespace || e.Object.GetName() != key.Name {
			t.Errorf("woke %s/%s, want %s", e.Object.GetNamespace(), e.Object.GetName(), key)
		}
	default:
		t.Error("add woke no reconcile")
	}

	seenBefore := time.Now()
	rs.Finish(key, 2)
	if _, ok := rs.Get(key); ok {
		t.Error("a finished repair is still waiting")
	}
	if got := drift(rs, driftMissing); got != 2 {
		t.Errorf("drift missing = %v, want 2", got)
	}

	// Record, the tests' way in, goes the same way as the Auditor's add.
	rs.Record(ctx, key, boundAt, ts, seenBefore)
	if _, ok := rs.Get(key); ok || len(rs.Wake()) != 0 {
		t.Error("a finding read before the last repair ended was kept")
	}
	rs.Record(ctx, key, boundAt, ts, time.Now())
	if _, ok := rs.Get(key); !ok {
		t.Error("a finding read after the last repair was dropped")
	}
	<-rs.Wake()

	rs.Drop(key)
	if _, ok := rs.Get(key); ok {
		t.Error("a dropped repair is still waiting")
	}
	if got := drift(rs, driftMissing); got != 2 {
		t.Errorf("a dropped repair was counted: drift missing = %v", got)
	}

	// A repair time older than an hour is forgotten at the next finding.
	rs.mu.Lock()
	rs.done[other] = time.Now().Add(-2 * time.Hour)
	rs.mu.Unlock()
	rs.add(ctx, key, Repair{BoundAt: boundAt, seenAt: time.Now(), Targets: ts})
	rs.mu.Lock()
	_, kept := rs.done[other]
	_, recent := rs.done[key]
	rs.mu.Unlock()
	if kept || !recent {
		t.Errorf("repair times: an old one kept %t, the recent one kept %t", kept, recent)
	}
}

// TestStart: the auditor audits every interval until the manager stops,
// logs an incomplete round and counts every round.
func TestStart(t *testing.T) {
	log := &logLog{}
	kube := newKube(t, failList(&clbv1alpha1.PortPoolList{}, errBoom))
	a := auditor(kube, kube, region(nil), nil, &eventLog{}, log)
	a.interval = time.Millisecond
	if !a.NeedLeaderElection() {
		t.Error("the audit runs without the leader")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(a.repairs.metrics.audits) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return when the manager stopped")
	}
	if n := testutil.ToFloat64(a.repairs.metrics.audits); n < 2 {
		t.Errorf("%v rounds counted, want at least 2", n)
	}
	if got := log.String(); !strings.Contains(got, "Target audit incomplete") || !strings.Contains(got, "cannot list PortPools") {
		t.Errorf("logged %q; want the incomplete round and why", got)
	}
}

// TestBinderClients: the auditor NewAuditor builds gets the binder's
// client of a pool's provider config, and a nil API (never a nil
// *clb.Client in one, which the round would take for a client) when there
// is none.
func TestBinderClients(t *testing.T) {
	ctx := context.Background()
	pp := portPool()
	pp.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: providerv1alpha1.ProviderConfigKind, Name: "default"}
	pc := &providerv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "default"}}
	pc.Spec.Region = "ap-guangzhou"
	pc.Spec.Credentials.SecretRef.Name = "creds"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "creds"},
		Data: map[string][]byte{"secretId": []byte("AKID"), "secretKey": []byte("key")}}
	kube := newKube(t, interceptor.Funcs{}, pp, pc, secret)
	a := NewAuditor(kube, kube, targets.NewBinder(kube, clb.NewPool(clb.Options{})), NewRepairs(prometheus.NewRegistry()), &eventLog{}, &logLog{}, time.Minute)

	c, err := a.clients(ctx, poolKey, "ap-shanghai")
	if err != nil {
		t.Fatalf("clients(%s) = %v", poolKey, err)
	}
	if cc, ok := c.(*clb.Client); !ok || cc == nil {
		t.Errorf("clients(%s) = %T %v, want the binder's *clb.Client", poolKey, c, c)
	}

	c, err = a.clients(ctx, "team-a/missing", "")
	if err == nil || c != nil {
		t.Errorf("clients of a missing pool = %#v, %v; want a nil API and an error", c, err)
	}
}
