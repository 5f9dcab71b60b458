package targetset

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
)

var _ api = (*fake.Cloud)(nil)

// cloud is load balancer lb-1 holding listener b, if any.
func cloud(b *clbsdk.ListenerBackend) *fake.Cloud {
	c := fake.New("lb-1")
	if b != nil {
		c.SetTargets("lb-1", b)
	}
	return c
}

func backend(ip string, port, weight int64) *clbsdk.Backend {
	return &clbsdk.Backend{Type: clb.Ptr("ENI"), InstanceId: clb.Ptr(""), Port: clb.Ptr(port), Weight: clb.Ptr(weight),
		PrivateIpAddresses: []*string{clb.Ptr(ip)}}
}

func tcp(bs ...*clbsdk.Backend) *clbsdk.ListenerBackend {
	return &clbsdk.ListenerBackend{ListenerId: clb.Ptr("lbl-1"), Protocol: clb.Ptr("TCP"), Targets: bs}
}

func http(rule string, bs ...*clbsdk.Backend) *clbsdk.ListenerBackend {
	return &clbsdk.ListenerBackend{ListenerId: clb.Ptr("lbl-1"), Protocol: clb.Ptr("HTTP"),
		Rules: []*clbsdk.RuleTargets{{LocationId: clb.Ptr(rule), Targets: bs}}}
}

func targetSet(mods ...func(*v1alpha1.TargetSet)) *v1alpha1.TargetSet {
	cr := &v1alpha1.TargetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ts"},
		Spec: v1alpha1.TargetSetSpec{ForProvider: v1alpha1.TargetSetParameters{
			LoadBalancerID: clb.Ptr("lb-1"), ListenerID: clb.Ptr("lbl-1"),
			Targets: []v1alpha1.Target{eni("10.0.0.1", 80), eni("10.0.0.2", 80, 20)},
		}},
	}
	for _, m := range mods {
		m(cr)
	}
	return cr
}

func named(name string) func(*v1alpha1.TargetSet) {
	return func(cr *v1alpha1.TargetSet) { meta.SetExternalName(cr, name) }
}

func deleted(cr *v1alpha1.TargetSet) { cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()}) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestObserve(t *testing.T) {
	cases := map[string]struct {
		reason  string
		cr      *v1alpha1.TargetSet
		api     *fake.Cloud
		want    managed.ExternalObservation
		wantErr string
		ready   xpv2.ConditionReason
		seen    []v1alpha1.TargetObservation
	}{
		"NoLoadBalancer": {
			reason:  "An unresolved load balancer reference is named.",
			cr:      targetSet(func(cr *v1alpha1.TargetSet) { cr.Spec.ForProvider.LoadBalancerID = nil }),
			api:     cloud(nil),
			wantErr: "spec.forProvider.loadBalancerId is not set and no reference resolved it",
		},
		"ListenerMissing": {
			reason:  "A listener that does not exist is a clear error.",
			cr:      targetSet(),
			api:     cloud(nil),
			wantErr: "listener lbl-1 of load balancer lb-1 does not exist",
		},
		"LoadBalancerMissing": {
			reason:  "A load balancer that does not exist is named as such.",
			cr:      targetSet(),
			api:     fake.New(),
			wantErr: "load balancer lb-1 does not exist",
		},
		"ListenerMissingWhileDeleting": {
			reason: "Targets of a deleted listener are gone with it.",
			cr:     targetSet(named("lbl-1"), deleted),
			api:    cloud(nil),
		},
		"L7WithoutRule": {
			reason:  "The targets of an HTTP listener belong to a rule.",
			cr:      targetSet(),
			api:     cloud(http("loc-1")),
			wantErr: "listener lbl-1 is HTTP; its targets belong to its rules: set ruleId",
		},
		"RuleMissing": {
			reason:  "A rule the listener does not have is named.",
			cr:      targetSet(func(cr *v1alpha1.TargetSet) { cr.Spec.ForProvider.RuleID = clb.Ptr("loc-9") }),
			api:     cloud(http("loc-1")),
			wantErr: "rule loc-9 of listener lbl-1 does not exist",
		},
		"MovedListener": {
			reason:  "A spec that names another listener than the external name is refused.",
			cr:      targetSet(named("lbl-0")),
			api:     cloud(tcp()),
			wantErr: "spec.forProvider names lbl-1 but this TargetSet holds the targets of lbl-0; a TargetSet cannot move: create a new one",
		},
		"NotCreated": {
			reason: "Without an external name the set does not exist yet; the targets are still reported.",
			cr:     targetSet(),
			api:    cloud(tcp(backend("10.0.0.9", 80, 10))),
			seen:   []v1alpha1.TargetObservation{seen("10.0.0.9", 80, 10)},
		},
		"UpToDate": {
			reason: "The cloud's set equals the spec's: Available.",
			cr:     targetSet(named("lbl-1")),
			api:    cloud(tcp(backend("10.0.0.2", 80, 20), backend("10.0.0.1", 80, 10))),
			want:   managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			ready:  xpv2.ReasonAvailable,
			seen:   []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10), seen("10.0.0.2", 80, 20)},
		},
		"RuleTargets": {
			reason: "The targets of a rule are those of the rule the external name names.",
			cr: targetSet(named("lbl-1/loc-1"), func(cr *v1alpha1.TargetSet) {
				cr.Spec.ForProvider.RuleID = clb.Ptr("loc-1")
			}),
			api:   cloud(http("loc-1", backend("10.0.0.2", 80, 20), backend("10.0.0.1", 80, 10))),
			want:  managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			ready: xpv2.ReasonAvailable,
			seen:  []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10), seen("10.0.0.2", 80, 20)},
		},
		"Drift": {
			reason: "A changed weight is drift, shown readably; the set is still Creating until it first matches.",
			cr:     targetSet(named("lbl-1")),
			api:    cloud(tcp(backend("10.0.0.2", 80, 10), backend("10.0.0.1", 80, 10))),
			want:   managed.ExternalObservation{ResourceExists: true, Diff: "weight of 10.0.0.2:80: want 20, got 10"},
			ready:  xpv2.ReasonCreating,
			seen:   []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10), seen("10.0.0.2", 80, 10)},
		},
		"ObserveOnlyImport": {
			reason: "An imported set is Available whatever the spec lists, and its listener is not written into the spec.",
			cr: targetSet(named("lbl-1"), func(cr *v1alpha1.TargetSet) {
				cr.Spec.ForProvider.ListenerID, cr.Spec.ForProvider.Targets = nil, nil
				cr.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
			}),
			api:   cloud(tcp(backend("10.0.0.1", 80, 10))),
			want:  managed.ExternalObservation{ResourceExists: true, Diff: "deregister 10.0.0.1:80"},
			ready: xpv2.ReasonAvailable,
			seen:  []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10)},
		},
		"DeletingWithTargets": {
			reason: "While targets remain a deleted set still exists.",
			cr:     targetSet(named("lbl-1"), deleted),
			api:    cloud(tcp(backend("10.0.0.1", 80, 10))),
			want:   managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			seen:   []v1alpha1.TargetObservation{seen("10.0.0.1", 80, 10)},
		},
		"DeletingEmpty": {
			reason: "A deleted set without targets is gone.",
			cr:     targetSet(named("lbl-1"), deleted),
			api:    cloud(tcp()),
			want:   managed.ExternalObservation{ResourceUpToDate: true},
			seen:   []v1alpha1.TargetObservation{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := (&external{c: tc.api}).Observe(context.Background(), tc.cr)
			if d := cmp.Diff(tc.wantErr, errString(err)); d != "" {
				t.Errorf("%s\nObserve(...): -want error, +got error:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.ready, tc.cr.GetCondition(xpv2.TypeReady).Reason); d != "" {
				t.Errorf("%s\nReady reason: -want, +got:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.seen, tc.cr.Status.AtProvider.Targets); d != "" {
				t.Errorf("%s\natProvider.targets: -want, +got:\n%s", tc.reason, d)
			}
			if w := tc.api.Writes(); len(w) > 0 {
				t.Errorf("%s\nObserve wrote to the cloud: %v", tc.reason, w)
			}
		})
	}
}

func TestWrites(t *testing.T) {
	cases := map[string]struct {
		reason string
		cr     *v1alpha1.TargetSet
		cloud  *clbsdk.ListenerBackend
		do     func(*external, *v1alpha1.TargetSet) error
		writes []string // after one DescribeTargets
		name   string
	}{
		"CreateRegistersMissing": {
			reason: "Create registers the targets not bound yet, with their weights, and names the set after its listener.",
			cr:     targetSet(),
			cloud:  tcp(backend("10.0.0.1", 80, 10)),
			do:     create,
			writes: []string{"RegisterTargets lb-1 lbl-1//10.0.0.2:80=20"},
			name:   "lbl-1",
		},
		"CreateForRule": {
			reason: "A rule's set is named listenerId/ruleId and registers on the rule.",
			cr:     targetSet(func(cr *v1alpha1.TargetSet) { cr.Spec.ForProvider.RuleID = clb.Ptr("loc-1") }),
			cloud:  http("loc-1"),
			do:     create,
			writes: []string{"RegisterTargets lb-1 lbl-1/loc-1/10.0.0.1:80=10 lbl-1/loc-1/10.0.0.2:80=20"},
			name:   "lbl-1/loc-1",
		},
		"UpdateSendsTheDifference": {
			reason: "Update deregisters, registers and re-weights only what differs.",
			cr: targetSet(named("lbl-1"), func(cr *v1alpha1.TargetSet) {
				cr.Spec.ForProvider.Targets = append(cr.Spec.ForProvider.Targets, eni("10.0.0.4", 80))
			}),
			cloud: tcp(backend("10.0.0.1", 80, 10), backend("10.0.0.2", 80, 10), backend("10.0.0.3", 80, 10)),
			do:    update,
			writes: []string{"DeregisterTargets lb-1 lbl-1//10.0.0.3:80", "RegisterTargets lb-1 lbl-1//10.0.0.4:80=10",
				"ModifyTargetWeight lb-1 lbl-1//10.0.0.2:80=20"},
			name: "lbl-1",
		},
		"DeleteDeregistersAll": {
			reason: "Delete removes every target of the listener, listed in the spec or not.",
			cr:     targetSet(named("lbl-1")),
			cloud:  tcp(backend("10.0.0.1", 80, 10), backend("10.0.0.9", 80, 10)),
			do:     remove,
			writes: []string{"DeregisterTargets lb-1 lbl-1//10.0.0.1:80 lbl-1//10.0.0.9:80"},
			name:   "lbl-1",
		},
		"DeleteNothing": {
			reason: "Delete of an empty listener sends nothing.",
			cr:     targetSet(named("lbl-1")),
			cloud:  tcp(),
			do:     remove,
			writes: nil,
			name:   "lbl-1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api := cloud(tc.cloud)
			if err := tc.do(&external{c: api}, tc.cr); err != nil {
				t.Fatal(err)
			}
			if api.TargetReads != 1 {
				t.Errorf("%s\nDescribeTargets calls = %d, want 1", tc.reason, api.TargetReads)
			}
			if d := cmp.Diff(tc.writes, api.Writes()); d != "" {
				t.Errorf("%s\nwrites: -want, +got:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.name, meta.GetExternalName(tc.cr)); d != "" {
				t.Errorf("%s\nexternal name: -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

func create(e *external, cr *v1alpha1.TargetSet) error {
	_, err := e.Create(context.Background(), cr)
	return err
}

func update(e *external, cr *v1alpha1.TargetSet) error {
	_, err := e.Update(context.Background(), cr)
	return err
}

func remove(e *external, cr *v1alpha1.TargetSet) error {
	_, err := e.Delete(context.Background(), cr)
	return err
}

func TestUpdateWeightsInParts(t *testing.T) {
	var bs []*clbsdk.Backend
	var spec []v1alpha1.Target
	for i := range 120 {
		bs = append(bs, backend("10.0.0.1", int64(1000+i), 10))
		spec = append(spec, eni("10.0.0.1", int64(1000+i), 30))
	}
	api := cloud(tcp(bs...))
	cr := targetSet(named("lbl-1"), func(cr *v1alpha1.TargetSet) { cr.Spec.ForProvider.Targets = spec })
	if _, err := (&external{c: api}).Update(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	writes := api.Writes()
	if api.TargetReads != 1 || len(writes) != 1 || !strings.HasPrefix(writes[0], "ModifyTargetWeight ") {
		t.Fatalf("%d describes, writes %q: want a describe and one weight change", api.TargetReads, writes)
	}
	if got := cr.Status.AtProvider.Task; got.ID != "task" || got.State != "Running" {
		t.Errorf("task = %+v, want the weight task running", got)
	}
	// One call changes at most 50 weights of one listener; the rest wait
	// for the next reconcile, after the task.
	if got := strings.Count(writes[0], "="); got != maxWeightChanges {
		t.Errorf("weight call changed %d targets, want %d", got, maxWeightChanges)
	}
}
