package rule

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
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// region is a cloud holding load balancer lb-1 with listeners ls, whose
// tasks are in state task.
func region(task clb.TaskState, ls ...*clbsdk.Listener) *fake.Cloud {
	c := fake.New("lb-1")
	c.Task = task
	c.Listeners["lb-1"] = ls
	return c
}

// creates counts the rules created in c.
func creates(c *fake.Cloud) int {
	n := 0
	for _, w := range c.Log() {
		if strings.HasPrefix(w, "CreateRule ") {
			n++
		}
	}
	return n
}

func listener(protocol string, rules ...*clbsdk.RuleOutput) *clbsdk.Listener {
	return &clbsdk.Listener{ListenerId: clb.Ptr("lbl-1"), Protocol: clb.Ptr(protocol), Rules: rules}
}

func rule(mods ...func(*v1alpha1.Rule)) *v1alpha1.Rule {
	cr := &v1alpha1.Rule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: v1alpha1.RuleSpec{ForProvider: v1alpha1.RuleParameters{
			LoadBalancerID: clb.Ptr("lb-1"), ListenerID: clb.Ptr("lbl-1"), Domain: "www.example.com", URL: "/",
		}},
	}
	for _, m := range mods {
		m(cr)
	}
	return cr
}

func withExternalName(id string) func(*v1alpha1.Rule) {
	return func(cr *v1alpha1.Rule) { meta.SetExternalName(cr, id) }
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestObserve(t *testing.T) {
	deleted := func(cr *v1alpha1.Rule) { cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()}) }
	cases := map[string]struct {
		reason   string
		cr       *v1alpha1.Rule
		api      *fake.Cloud
		want     managed.ExternalObservation
		wantErr  string
		wantName string
		ready    xpv2.ConditionReason
	}{
		"NoListenerID": {
			reason:  "An unresolved listener is reported before any call.",
			cr:      rule(func(cr *v1alpha1.Rule) { cr.Spec.ForProvider.ListenerID = nil }),
			api:     fake.New(),
			wantErr: "spec.forProvider.listenerId is not set and no reference resolved it",
		},
		"TCPListener": {
			reason:  "A rule on a TCP listener is a stable, readable error.",
			cr:      rule(),
			api:     region(clb.TaskSucceeded, listener("TCP")),
			wantErr: "listener lbl-1 is TCP; rules need an HTTP or HTTPS listener",
		},
		"TCPListenerWhileDeleting": {
			reason: "A rule on a TCP listener never existed, so deletion may finish.",
			cr:     rule(deleted),
			api:    region(clb.TaskSucceeded, listener("TCP")),
			want:   managed.ExternalObservation{},
		},
		"ListenerMissing": {
			reason:  "A listener that does not exist is named in the error.",
			cr:      rule(),
			api:     region(clb.TaskSucceeded),
			wantErr: "listener lbl-1 of load balancer lb-1 does not exist",
		},
		"LoadBalancerMissing": {
			reason:  "A load balancer that does not exist is named as such.",
			cr:      rule(),
			api:     fake.New(),
			wantErr: "load balancer lb-1 does not exist",
		},
		"ListenerMissingWhileDeleting": {
			reason:   "A rule whose listener is gone is gone too.",
			cr:       rule(withExternalName("loc-1"), deleted),
			api:      region(clb.TaskSucceeded),
			want:     managed.ExternalObservation{},
			wantName: "loc-1",
		},
		"NotCreated": {
			reason: "Without an external name and without a matching rule, the rule does not exist.",
			cr:     rule(),
			api:    region(clb.TaskSucceeded, listener("HTTP", cloudRule(func(r *clbsdk.RuleOutput) { r.Url = clb.Ptr("/other") }))),
			want:   managed.ExternalObservation{},
		},
		"AdoptsLostCreate": {
			reason: "A rule with the same domain and url is the one a create whose result was lost made.",
			cr: rule(func(cr *v1alpha1.Rule) {
				meta.SetExternalCreateFailed(cr, time.Now().Add(-time.Minute))
				meta.SetExternalCreatePending(cr, time.Now())
			}),
			api:      region(clb.TaskSucceeded, listener("HTTP", cloudRule())),
			want:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
			wantName: "loc-1",
			ready:    xpv2.ReasonAvailable,
		},
		"ForeignRule": {
			reason:  "A rule with the same domain and url that this resource never tried to create is not taken over.",
			cr:      rule(),
			api:     region(clb.TaskSucceeded, listener("HTTP", cloudRule())),
			wantErr: "listener lbl-1 already has a rule for www.example.com/ (loc-1); set its id as this resource's external name to manage it",
		},
		"FailedCreate": {
			reason: "A create that failed (say, as a duplicate) made nothing to adopt.",
			cr: rule(func(cr *v1alpha1.Rule) {
				meta.SetExternalCreatePending(cr, time.Now().Add(-time.Minute))
				meta.SetExternalCreateFailed(cr, time.Now())
			}),
			api:     region(clb.TaskSucceeded, listener("HTTP", cloudRule())),
			wantErr: "listener lbl-1 already has a rule for www.example.com/ (loc-1); set its id as this resource's external name to manage it",
		},
		"DeletedInCloud": {
			reason:   "A rule the listener no longer lists is recreated.",
			cr:       rule(withExternalName("loc-9")),
			api:      region(clb.TaskSucceeded, listener("HTTP", cloudRule())),
			want:     managed.ExternalObservation{},
			wantName: "loc-9",
		},
		"Drift": {
			reason:   "A changed url is reported with a readable diff.",
			cr:       rule(withExternalName("loc-1"), func(cr *v1alpha1.Rule) { cr.Spec.ForProvider.URL = "/api" }),
			api:      region(clb.TaskSucceeded, listener("HTTPS", cloudRule())),
			want:     managed.ExternalObservation{ResourceExists: true, Diff: "url: want /api, got /", ResourceLateInitialized: true},
			wantName: "loc-1",
			ready:    xpv2.ReasonAvailable,
		},
		"CreateTaskRunning": {
			reason: "While the create task runs the rule is Creating and drift waits.",
			cr: rule(withExternalName("loc-1"), func(cr *v1alpha1.Rule) {
				cr.Spec.ForProvider.URL = "/api"
				meta.AddAnnotations(cr, map[string]string{v1alpha1.AnnotationTask: "task-1"})
			}),
			api:      region(clb.TaskRunning, listener("HTTP", cloudRule())),
			want:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
			wantName: "loc-1",
			ready:    xpv2.ReasonCreating,
		},
		"DomainChanged": {
			reason:   "A rule whose domain is not the spec's is an error that says what to do.",
			cr:       rule(withExternalName("loc-1"), func(cr *v1alpha1.Rule) { cr.Spec.ForProvider.Domain = "api.example.com" }),
			api:      region(clb.TaskSucceeded, listener("HTTP", cloudRule())),
			wantErr:  `rule loc-1 matches domain "www.example.com", not "api.example.com"; the domain of a rule cannot change: set "www.example.com" or create a new Rule`,
			wantName: "loc-1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{c: tc.api}
			got, err := e.Observe(context.Background(), tc.cr)
			if d := cmp.Diff(tc.wantErr, errString(err)); d != "" {
				t.Errorf("%s\nObserve(...): -want error, +got error:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.wantName, meta.GetExternalName(tc.cr)); d != "" {
				t.Errorf("%s\nexternal name: -want, +got:\n%s", tc.reason, d)
			}
			if d := cmp.Diff(tc.ready, tc.cr.GetCondition(xpv2.TypeReady).Reason); d != "" {
				t.Errorf("%s\nReady reason: -want, +got:\n%s", tc.reason, d)
			}
			if creates(tc.api) != 0 {
				t.Errorf("%s\nObserve created a rule", tc.reason)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	api := region(clb.TaskSucceeded, listener("HTTP"))
	cr := rule()
	if _, err := (&external{c: api}).Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if got := meta.GetExternalName(cr); got != "loc-1" {
		t.Errorf("external name = %q, want loc-1", got)
	}
	if got := cr.GetAnnotations()[v1alpha1.AnnotationTask]; got != "task" {
		t.Errorf("task annotation = %q, want task", got)
	}
}

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		reason string
		task   v1alpha1.TaskStatus
		want   v1alpha1.TaskStatus
	}{
		"Starts": {
			reason: "Delete starts a DeleteRule task.",
			want:   v1alpha1.TaskStatus{ID: "task", Operation: mr.OpDelete, State: mr.TaskRunning},
		},
		"AlreadyRunning": {
			reason: "A running delete task is not started twice.",
			task:   v1alpha1.TaskStatus{ID: "task-0", Operation: mr.OpDelete, State: mr.TaskRunning},
			want:   v1alpha1.TaskStatus{ID: "task-0", Operation: mr.OpDelete, State: mr.TaskRunning},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := rule(withExternalName("loc-1"))
			cr.Status.AtProvider.Task = tc.task
			if _, err := (&external{c: region(clb.TaskRunning, listener("HTTP", cloudRule()))}).Delete(context.Background(), cr); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, cr.Status.AtProvider.Task); d != "" {
				t.Errorf("%s\ntask: -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}

var _ api = &fake.Cloud{}
