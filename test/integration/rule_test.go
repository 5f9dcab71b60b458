package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// fixtureLB creates a load balancer directly in the emulated cloud (no
// managed resource) and waits until it is normal. It is deleted when the
// test ends.
func fixtureLB(t *testing.T) string {
	t.Helper()
	req := clbsdk.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.LoadBalancerName = clb.Ptr("OPEN"), clb.Ptr("fixture-"+strings.ToLower(t.Name()))
	if len(*req.LoadBalancerName) > 60 {
		req.LoadBalancerName = clb.Ptr((*req.LoadBalancerName)[:60])
	}
	var id string
	eventually(t, "create a fixture load balancer", func() error {
		resp, err := sdk(t).CreateLoadBalancer(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LoadBalancerIds[0]
		return nil
	})
	eventually(t, "the fixture load balancer becomes normal", func() error {
		if lb, _ := inventoryLB(id); lb.Status != 1 || lb.Busy {
			return errors.New("still creating")
		}
		return nil
	})
	t.Cleanup(func() {
		del := clbsdk.NewDeleteLoadBalancerRequest()
		// Forced: a fixture may still hold many targets, which the API
		// otherwise refuses to delete with (TargetNumCheckRisk).
		del.LoadBalancerIds, del.ForceDelete = []*string{&id}, clb.Ptr(true)
		err := testenvEventually(func() error {
			_, err := sdk(t).DeleteLoadBalancer(del)
			return err
		})
		if err != nil {
			t.Errorf("cannot delete fixture load balancer %s: %v", id, err)
		}
	})
	return id
}

// fixtureListener creates a listener directly in the emulated cloud.
func fixtureListener(t *testing.T, lbID, protocol string, port int64) string {
	t.Helper()
	req := clbsdk.NewCreateListenerRequest()
	req.LoadBalancerId, req.Protocol, req.Ports = &lbID, &protocol, []*int64{&port}
	if protocol == "HTTPS" {
		req.Certificate = &clbsdk.CertificateInput{SSLMode: clb.Ptr("UNIDIRECTIONAL"), CertId: clb.Ptr("cert-fixture")}
	}
	var id string
	eventually(t, "create a fixture listener", func() error {
		resp, err := sdk(t).CreateListener(req)
		if err != nil {
			return err
		}
		id = *resp.Response.ListenerIds[0]
		return nil
	})
	waitIdle(t, lbID)
	return id
}

// fixtureRule creates a rule directly in the emulated cloud.
func fixtureRule(t *testing.T, lbID, listenerID, domain, url string) string {
	t.Helper()
	req := clbsdk.NewCreateRuleRequest()
	req.LoadBalancerId, req.ListenerId = &lbID, &listenerID
	req.Rules = []*clbsdk.RuleInput{{Domain: &domain, Url: &url}}
	var id string
	eventually(t, "create a fixture rule", func() error {
		resp, err := sdk(t).CreateRule(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LocationIds[0]
		return nil
	})
	waitIdle(t, lbID)
	return id
}

// waitIdle waits until no task runs on the load balancer, so that what a
// test measures next does not start with a busy load balancer.
func waitIdle(t *testing.T, lbID string) {
	t.Helper()
	eventually(t, "load balancer "+lbID+" idle", func() error {
		if lb, _ := inventoryLB(lbID); lb.Busy {
			return errors.New("busy")
		}
		return nil
	})
}

// testenvEventually retries fn for the usual wait without failing a test.
func testenvEventually(fn func() error) error {
	deadline := time.Now().Add(mrWait)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// inventoryRule returns the emulator's rule id of a listener.
func inventoryRule(lbID, listenerID, id string) (emulator.InventoryRule, bool) {
	lb, _ := inventoryLB(lbID)
	for _, l := range lb.Listeners {
		if l.ID != listenerID {
			continue
		}
		for _, r := range l.Rules {
			if r.ID == id {
				return r, true
			}
		}
	}
	return emulator.InventoryRule{}, false
}

// describeRule reads one rule through the SDK, for the settings the
// inventory does not carry.
func describeRule(t *testing.T, lbID, listenerID, id string) *clbsdk.RuleOutput {
	t.Helper()
	req := clbsdk.NewDescribeListenersRequest()
	req.LoadBalancerId, req.ListenerIds = &lbID, []*string{&listenerID}
	var out *clbsdk.RuleOutput
	eventually(t, "describe rule "+id, func() error {
		resp, err := sdk(t).DescribeListeners(req)
		if err != nil {
			return err
		}
		for _, l := range resp.Response.Listeners {
			for _, r := range l.Rules {
				if clb.Deref(r.LocationId) == id {
					out = r
					return nil
				}
			}
		}
		return errors.Errorf("rule %s not found", id)
	})
	return out
}

func newRule(ns, name, lbID, listenerID string, mods ...func(*v1alpha1.Rule)) *v1alpha1.Rule {
	r := &v1alpha1.Rule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.RuleSpec{ForProvider: v1alpha1.RuleParameters{
			LoadBalancerID: clb.Ptr(lbID),
			ListenerID:     clb.Ptr(listenerID),
			Domain:         "www.example.com",
			URL:            "/",
		}},
	}
	for _, m := range mods {
		m(r)
	}
	return r
}

func orphanPolicies() xpv2.ManagementPolicies {
	return xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate,
		xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}
}

func TestRuleLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "HTTP", 80)

	cr := newRule(ns, "api", lbID, lisID, func(r *v1alpha1.Rule) {
		r.Spec.ForProvider.URL = "/api"
		r.Spec.ForProvider.HealthCheck = &v1alpha1.HealthCheck{Enabled: clb.Ptr(true), HTTPCheckPath: clb.Ptr("/healthz")}
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	id := meta.GetExternalName(cr)
	if got, ok := inventoryRule(lbID, lisID, id); !ok || got.Domain != "www.example.com" || got.URL != "/api" {
		t.Fatalf("cloud rule %s = %+v (found %v), want www.example.com/api", id, got, ok)
	}
	want := v1alpha1.RuleObservation{ID: id, LoadBalancerID: lbID, ListenerID: lisID, Protocol: "HTTP"}
	if got := cr.Status.AtProvider; got.ID != want.ID || got.LoadBalancerID != want.LoadBalancerID || got.ListenerID != want.ListenerID || got.Protocol != want.Protocol {
		t.Errorf("atProvider = %+v, want %+v", got, want)
	}
	// Late initialization filled what the spec left unset, and kept the rest.
	p := cr.Spec.ForProvider
	if clb.Deref(p.Scheduler) != "WRR" || clb.Deref(p.ForwardType) != "HTTP" || p.SessionExpireTime == nil {
		t.Errorf("late-init left scheduler/forwardType/sessionExpireTime unset: %+v", p)
	}
	if clb.Deref(p.HealthCheck.HTTPCheckPath) != "/healthz" {
		t.Errorf("late-init changed the health check path: %+v", p.HealthCheck)
	}

	// A spec change reaches the cloud.
	cr.Spec.ForProvider.URL = "/v2"
	cr.Spec.ForProvider.Scheduler = clb.Ptr("LEAST_CONN")
	if err := kube.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	eventually(t, "url /v2 and scheduler LEAST_CONN", func() error {
		r := describeRule(t, lbID, lisID, id)
		if u, s := clb.Deref(r.Url), clb.Deref(r.Scheduler); u != "/v2" || s != "LEAST_CONN" {
			return errors.Errorf("url %q, scheduler %q", u, s)
		}
		return nil
	})

	// A change in the cloud is corrected.
	req := clbsdk.NewModifyRuleRequest()
	req.LoadBalancerId, req.ListenerId, req.LocationId = &lbID, &lisID, &id
	req.Url, req.SessionExpireTime = clb.Ptr("/by-hand"), clb.Ptr(int64(600))
	eventually(t, "change the rule behind the provider's back", func() error {
		_, err := sdk(t).ModifyRule(req)
		return err
	})
	eventually(t, "drift corrected", func() error {
		r := describeRule(t, lbID, lisID, id)
		if u, s := clb.Deref(r.Url), clb.Deref(r.SessionExpireTime); u != "/v2" || s != clb.Deref(cr.Spec.ForProvider.SessionExpireTime) {
			return errors.Errorf("url %q, sessionExpireTime %d", u, s)
		}
		return nil
	})

	// A rule deleted behind the provider's back is created again.
	del := clbsdk.NewDeleteRuleRequest()
	del.LoadBalancerId, del.ListenerId, del.LocationIds = &lbID, &lisID, []*string{&id}
	eventually(t, "delete the rule behind the provider's back", func() error {
		_, err := sdk(t).DeleteRule(del)
		return err
	})
	waitFor(t, cr, func() error {
		if n := meta.GetExternalName(cr); n == id {
			return errors.New("not created again yet")
		}
		return nil
	})
	waitReady(t, cr)
	id = meta.GetExternalName(cr)
	if got, ok := inventoryRule(lbID, lisID, id); !ok || got.URL != "/v2" {
		t.Fatalf("recreated rule %s = %+v (found %v), want url /v2", id, got, ok)
	}

	// Deleting the resource deletes the rule.
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := inventoryRule(lbID, lisID, id); ok {
		t.Errorf("rule %s still in the cloud after delete", id)
	}
}

func TestRuleOrphan(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "HTTPS", 443)
	cr := newRule(ns, "kept", lbID, lisID, func(r *v1alpha1.Rule) { r.Spec.ManagementPolicies = orphanPolicies() })
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	id := meta.GetExternalName(cr)
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := inventoryRule(lbID, lisID, id); !ok {
		t.Errorf("orphaned rule %s was deleted from the cloud", id)
	}
}

func TestRuleObserveOnlyImport(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "HTTP", 8080)
	id := fixtureRule(t, lbID, lisID, "import.example.com", "/made-elsewhere")
	before := writeCalls()

	cr := newRule(ns, "imported", lbID, lisID, func(r *v1alpha1.Rule) {
		meta.SetExternalName(r, id)
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		r.Spec.ForProvider.Domain, r.Spec.ForProvider.URL = "import.example.com", "/made-elsewhere"
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cr)
	if got := cr.Status.AtProvider; got.ID != id || got.ListenerID != lisID || got.Protocol != "HTTP" {
		t.Errorf("atProvider = %+v, want the imported rule", got)
	}
	if cr.Spec.ForProvider.Scheduler != nil || cr.Spec.ForProvider.HealthCheck != nil {
		t.Errorf("Observe-only import changed the spec: %+v", cr.Spec.ForProvider)
	}
	time.Sleep(2 * time.Second) // a few more reconciles
	if after := writeCalls(); after != before {
		t.Errorf("Observe-only import wrote to the cloud: %d write calls before, %d after (%v)", before, after, cloud.Calls())
	}
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
	if _, ok := inventoryRule(lbID, lisID, id); !ok {
		t.Error("deleting an Observe-only resource deleted the rule")
	}
}

// TestRuleOnTCPListener shows that a rule on a listener that cannot hold
// rules is reported clearly and never sent to the cloud.
func TestRuleOnTCPListener(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "TCP", 7000)
	creates := cloud.CallCount("CreateRule")

	cr := newRule(ns, "on-tcp", lbID, lisID)
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	want := "listener " + lisID + " is TCP; rules need an HTTP or HTTPS listener"
	waitFor(t, cr, func() error {
		c := cr.GetCondition(xpv2.TypeSynced)
		if c.Status != "False" || !strings.Contains(c.Message, want) {
			return errors.Errorf("Synced=%s %q", c.Status, c.Message)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // a few retries
	if err := kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	if c := cr.GetCondition(xpv2.TypeSynced); c.Status != "False" || !strings.Contains(c.Message, want) {
		t.Errorf("Synced=%s %q, want it to stay False with %q", c.Status, c.Message, want)
	}
	if n := cloud.CallCount("CreateRule") - creates; n != 0 {
		t.Errorf("the provider sent %d CreateRule calls for a TCP listener", n)
	}
	// The reconciler's backoff (1 s, 2 s, 4 s…) spaces the retries: a few
	// attempts in these seconds, each a warning event, not hundreds.
	events := &corev1.EventList{}
	if err := kube.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	for _, e := range events.Items {
		if e.InvolvedObject.Name == cr.Name && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, want) {
			attempts += max(int(e.Count), 1)
		}
	}
	t.Logf("%d failed attempts with a stable message", attempts)
	if attempts < 1 || attempts > 6 {
		t.Errorf("%d failed attempts in about 3 s, want 1 to 6 (retried with backoff)", attempts)
	}

	// Nothing was created, so deletion does not wait for anything.
	if err := kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cr)
}

// TestRuleAdoptsUnsavedCreate leaves what a provider killed between
// CreateRule and saving the external name leaves behind: the rule in the
// cloud, and a resource with a pending create but no external name. The
// restarted provider must adopt that rule rather than fail on a duplicate.
// A rule the resource never tried to create is reported instead.
func TestRuleAdoptsUnsavedCreate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lbID := fixtureLB(t)
	lisID := fixtureListener(t, lbID, "HTTP", 80)

	foreign := fixtureRule(t, lbID, lisID, "www.example.com", "/someone-else")
	other := newRule(ns, "other", lbID, lisID, func(r *v1alpha1.Rule) { r.Spec.ForProvider.URL = "/someone-else" })
	if err := kube.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	waitFor(t, other, func() error {
		c := other.GetCondition(xpv2.TypeSynced)
		if c.Status != "False" || !strings.Contains(c.Message, "already has a rule for www.example.com/someone-else ("+foreign+")") {
			return errors.Errorf("Synced=%s %q", c.Status, c.Message)
		}
		return nil
	})
	if n := meta.GetExternalName(other); n != "" {
		t.Errorf("a rule made elsewhere was taken over as %q", n)
	}

	cr := newRule(ns, "crashed", lbID, lisID, func(r *v1alpha1.Rule) {
		r.Spec.ForProvider.URL = "/lost"
		r.SetAnnotations(map[string]string{
			meta.AnnotationKeyExternalCreatePending: time.Now().Format(time.RFC3339),
			meta.AnnotationKeyReconciliationPaused:  "true",
		})
	})
	if err := kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	id := fixtureRule(t, lbID, lisID, "www.example.com", "/lost") // what the killed provider sent
	eventually(t, "unpause", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		meta.RemoveAnnotations(cr, meta.AnnotationKeyReconciliationPaused)
		return kube.Update(ctx, cr)
	})
	waitReady(t, cr)
	if got := meta.GetExternalName(cr); got != id {
		t.Errorf("external name = %q, want the rule created before the crash, %q", got, id)
	}
	lb, _ := inventoryLB(lbID)
	n := 0
	for _, l := range lb.Listeners {
		for _, r := range l.Rules {
			if r.URL == "/lost" {
				n++
			}
		}
	}
	if n != 1 {
		t.Errorf("%d rules for www.example.com/lost, want exactly 1", n)
	}
	for _, o := range []*v1alpha1.Rule{other, cr} {
		if err := kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		waitGone(t, o)
	}
	if _, ok := inventoryRule(lbID, lisID, foreign); !ok {
		t.Error("deleting a resource that never managed the foreign rule deleted it")
	}
}

// TestRuleExample applies examples/clb/rule.yaml, waits for all of it to
// be Ready, and deletes it without leaving anything in the cloud.
func TestRuleExample(t *testing.T) {
	objs, names := applyExampleReady(t, "clb/rule.yaml")
	ruleID := names[len(names)-1]
	lbID, lisID := names[0], names[1]
	got, ok := inventoryRule(lbID, lisID, ruleID)
	if !ok || got.Domain != "www.example.com" || got.URL != "/api" {
		t.Errorf("example rule %s = %+v (found %v), want www.example.com/api on %s", ruleID, got, ok, lisID)
	}
	deleteExample(t, objs, names)
}
