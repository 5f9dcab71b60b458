package loadbalancer

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

var _ api = (*fake.Cloud)(nil)

// noCloud fails the test on any cloud call: for checks that must come
// before one.
type noCloud struct {
	api
	t *testing.T
}

func (n noCloud) DescribeLoadBalancer(context.Context, string) (*clbsdk.LoadBalancer, error) {
	n.t.Error("DescribeLoadBalancer called")
	return nil, errors.New("no cloud")
}

func (n noCloud) FindLoadBalancersByTag(context.Context, string, string) ([]*clbsdk.LoadBalancer, error) {
	n.t.Error("FindLoadBalancersByTag called")
	return nil, errors.New("no cloud")
}

func lbOf(mods ...func(*v1alpha1.LoadBalancer)) *v1alpha1.LoadBalancer {
	cr := &v1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "uid-a"}}
	for _, m := range mods {
		m(cr)
	}
	return cr
}

func withExternalName(id string) func(*v1alpha1.LoadBalancer) {
	return func(cr *v1alpha1.LoadBalancer) { meta.SetExternalName(cr, id) }
}

// importing is an Observe-only import by name.
func importing(name string) func(*v1alpha1.LoadBalancer) {
	return func(cr *v1alpha1.LoadBalancer) {
		cr.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		cr.Spec.ForProvider.Name = clb.Ptr(name)
	}
}

func deleting(cr *v1alpha1.LoadBalancer) {
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
}

// drift makes the spec differ from the cloud, so Observe asks for an Update.
func drift(cr *v1alpha1.LoadBalancer) { cr.Spec.ForProvider.Name = clb.Ptr("renamed") }

// reconcile is what the managed reconciler does with Observe's answer:
// delete, create or update.
func reconcile(ctx context.Context, e *external, cr *v1alpha1.LoadBalancer) (exists bool, err error) {
	obs, err := e.Observe(ctx, cr)
	switch {
	case err != nil:
		return false, err
	case meta.WasDeleted(cr):
		if obs.ResourceExists {
			_, err = e.Delete(ctx, cr)
		}
	case !obs.ResourceExists && mayCreate(cr):
		_, err = e.Create(ctx, cr)
	case obs.ResourceExists && !obs.ResourceUpToDate:
		_, err = e.Update(ctx, cr)
	}
	return obs.ResourceExists, err
}

// TestOwnership: a LoadBalancer acts only on load balancers whose owner
// tags name its namespace, or that carry none (through its own account or
// a grant); another namespace's is not
// imported, adopted, changed or deleted, and deleting the resource lets go
// of it without a cloud call.
func TestOwnership(t *testing.T) {
	ownTags := map[string]string{mr.TagNamespace: "team-a", mr.TagUID: "uid-other"}
	otherTags := map[string]string{mr.TagNamespace: "team-b", mr.TagUID: "uid-b", mr.TagName: "prod"}
	type want struct {
		err     string // part of the error; "" for none
		exists  bool
		writes  []string
		patched bool
	}
	cases := map[string]struct {
		reason string
		tags   map[string]string // of lb-1, named "shared"
		cr     *v1alpha1.LoadBalancer
		want   want
	}{
		"OtherByExternalName": {
			reason: "Another namespace's load balancer named by id is refused before any write.",
			tags:   otherTags,
			cr:     lbOf(withExternalName("lb-1"), drift),
			want:   want{err: "load balancer lb-1 belongs to namespace team-b, not team-a: " + mr.OwnerRule},
		},
		"OtherByName": {
			reason: "Another namespace's load balancer imported by name is refused, and its id is not saved.",
			tags:   otherTags,
			cr:     lbOf(importing("shared")),
			want:   want{err: "belongs to namespace team-b"},
		},
		"OtherByUIDTag": {
			reason: "A load balancer carrying this resource's UID tag but another namespace's tag (written by a user before the rule) is not adopted.",
			tags:   map[string]string{mr.TagNamespace: "team-b", mr.TagUID: "uid-a"},
			cr:     lbOf(),
			want:   want{err: "belongs to namespace team-b"},
		},
		"OtherWhileDeleting": {
			reason: "Deleting an import of another namespace's load balancer lets go of it: no DeleteLoadBalancer.",
			tags:   otherTags,
			cr:     lbOf(withExternalName("lb-1"), deleting),
		},
		"OtherPortPools": {
			reason: "A load balancer another namespace's PortPool created (pool tag only) is refused.",
			tags:   map[string]string{mr.TagPool: "team-b/games", mr.TagPoolUID: "u"},
			cr:     lbOf(withExternalName("lb-1"), drift),
			want:   want{err: "belongs to namespace team-b"},
		},
		"OwnUpdated": {
			reason: "Its own namespace's load balancer is changed.",
			tags:   ownTags,
			cr:     lbOf(withExternalName("lb-1"), drift),
			want:   want{exists: true, writes: []string{"ModifyLoadBalancerAttributes lb-1"}},
		},
		"OwnDeleted": {
			reason: "Its own namespace's load balancer is deleted.",
			tags:   ownTags,
			cr:     lbOf(withExternalName("lb-1"), deleting),
			want:   want{exists: true, writes: []string{"DeleteLoadBalancer lb-1"}},
		},
		"UntaggedImportedByName": {
			reason: "A load balancer made in the console (no owner tags) is imported as before.",
			tags:   map[string]string{"team": "b"},
			cr:     lbOf(importing("shared")),
			want:   want{exists: true, patched: true},
		},
		"UntaggedDeleted": {
			reason: "A load balancer with no owner tags is deleted as before.",
			cr:     lbOf(withExternalName("lb-1"), deleting),
			want:   want{exists: true, writes: []string{"DeleteLoadBalancer lb-1"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cloud := fake.New()
			cloud.AddLB("lb-1", tc.tags)
			cloud.LBs["lb-1"].LoadBalancerName = clb.Ptr("shared")
			patched := false
			kube := &test.MockClient{
				MockList: test.NewMockListFn(nil),
				MockPatch: func(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
					patched = true
					return nil
				},
			}
			e := &external{c: cloud, kube: kube}
			exists, err := reconcile(context.Background(), e, tc.cr)
			if tc.want.err == "" && err != nil || tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nreconcile: %v, want error containing %q", tc.reason, err, tc.want.err)
			}
			if exists != tc.want.exists {
				t.Errorf("%s\nObserve: exists %t, want %t", tc.reason, exists, tc.want.exists)
			}
			if diff := cmp.Diff(tc.want.writes, cloud.Writes()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
			if patched != tc.want.patched {
				t.Errorf("%s\nexternal name saved: %t, want %t", tc.reason, patched, tc.want.patched)
			}
			if tc.want.err != "" && meta.GetExternalName(tc.cr) != "" && meta.GetExternalName(tc.cr) != "lb-1" {
				t.Errorf("%s\nexternal name %q set on a refusal", tc.reason, meta.GetExternalName(tc.cr))
			}
			if tc.want.err != "" && tc.cr.Status.AtProvider.ID != "" {
				t.Errorf("%s\nthe refused load balancer's state was written to the status: %+v", tc.reason, tc.cr.Status.AtProvider)
			}
		})
	}
}

// TestWritesCheckTheStatusOwner: Update and Delete refuse on their own a
// load balancer whose observed owner is another namespace.
func TestWritesCheckTheStatusOwner(t *testing.T) {
	cloud := fake.New()
	cloud.AddLB("lb-1", map[string]string{mr.TagNamespace: "team-b"})
	cr := lbOf(withExternalName("lb-1"))
	cr.Status.AtProvider.Tags = map[string]string{mr.TagNamespace: "team-b"}
	e := &external{c: cloud, kube: &test.MockClient{MockList: test.NewMockListFn(nil)}}
	if _, err := e.Update(context.Background(), cr); !mr.IsNotOwned(err) {
		t.Errorf("Update: %v, want the owner refusal", err)
	}
	if _, err := e.Delete(context.Background(), cr); !mr.IsNotOwned(err) {
		t.Errorf("Delete: %v, want the owner refusal", err)
	}
	if w := cloud.Writes(); len(w) > 0 {
		t.Errorf("cloud writes %v, want none", w)
	}
}

// TestReservedTags: a spec whose tags hold the provider's own keys (an
// object older than the admission rule) is refused before any cloud call;
// its deletion still goes on.
func TestReservedTags(t *testing.T) {
	cases := map[string]struct {
		reason string
		tags   map[string]string
		want   error
	}{
		"UID": {
			reason: "A crossplane-uid tag could get another resource's load balancer adopted.",
			tags:   map[string]string{mr.TagUID: "uid-b"},
			want:   errors.New("spec.forProvider.tags: " + mr.ReservedTagsRule + " (crossplane-uid)"),
		},
		"EIPOwner": {
			reason: "Any key of the provider's prefixes is refused.",
			tags:   map[string]string{"team": "a", mr.TagEIPOwner: "x"},
			want:   errors.New("spec.forProvider.tags: " + mr.ReservedTagsRule + " (network.tencentcloud.m.crossplane.io/owner)"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := lbOf(func(cr *v1alpha1.LoadBalancer) { cr.Spec.ForProvider.Tags = tc.tags })
			e := &external{c: noCloud{t: t}}
			_, err := e.Observe(context.Background(), cr)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nObserve: -want error, +got error:\n%s", tc.reason, diff)
			}
			_, err = e.Create(context.Background(), cr)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nCreate: -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}

	// Deleting such a resource is decided by the cloud object's owner.
	cloud := fake.New()
	cloud.AddLB("lb-1", nil)
	cr := lbOf(withExternalName("lb-1"), deleting, func(cr *v1alpha1.LoadBalancer) { cr.Spec.ForProvider.Tags = map[string]string{mr.TagUID: "x"} })
	e := &external{c: cloud, kube: &test.MockClient{MockList: test.NewMockListFn(nil)}}
	if _, err := reconcile(context.Background(), e, cr); err != nil {
		t.Fatalf("deleting a resource with reserved tags: %v", err)
	}
	if diff := cmp.Diff([]string{"DeleteLoadBalancer lb-1"}, cloud.Writes()); diff != "" {
		t.Errorf("deleting: -want +got writes:\n%s", diff)
	}
}

// TestCreateRequestOwnerTags: a created load balancer carries its owner:
// namespace, kind, name and UID.
func TestCreateRequestOwnerTags(t *testing.T) {
	cr := lbOf(func(cr *v1alpha1.LoadBalancer) { cr.Spec.ForProvider.Tags = map[string]string{"team": "a"} })
	got := map[string]string{}
	for _, tag := range CreateRequest(cr).Tags {
		got[*tag.TagKey] = *tag.TagValue
	}
	want := map[string]string{"team": "a", TagNamespace: "team-a", TagKind: "LoadBalancer", TagName: "web", TagUID: "uid-a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tags: -want +got:\n%s", diff)
	}
}
