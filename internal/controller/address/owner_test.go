package address

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/vpc/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc/fake"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// noCloud fails the test on any cloud call: for checks that must come
// before one.
type noCloud struct {
	api
	t *testing.T
}

func (n noCloud) Describe(context.Context, []string) ([]vpc.Address, error) {
	n.t.Error("Describe called")
	return nil, errors.New("no cloud")
}

func (n noCloud) DescribeByTag(context.Context, string, string) ([]vpc.Address, error) {
	n.t.Error("DescribeByTag called")
	return nil, errors.New("no cloud")
}

func addressOf(mods ...func(*v1alpha1.Address)) *v1alpha1.Address {
	cr := &v1alpha1.Address{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "uid-a"}}
	for _, m := range mods {
		m(cr)
	}
	return cr
}

func named(id string) func(*v1alpha1.Address) {
	return func(cr *v1alpha1.Address) { meta.SetExternalName(cr, id) }
}

// rebound asks to bind the EIP elsewhere and rename it: both writes.
func rebound(cr *v1alpha1.Address) {
	cr.Spec.ForProvider.Name = clb.Ptr("mine")
	cr.Spec.ForProvider.Association = &v1alpha1.AddressAssociation{PrivateIPAddress: clb.Ptr("10.0.0.5")}
}

func deleted(cr *v1alpha1.Address) {
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
}

// TestOwnership: an Address acts only on EIPs whose owner tags name its
// namespace, or that carry none; another namespace's is not imported,
// adopted, renamed, re-bound or released, and deleting the resource lets
// go of it without a cloud call.
func TestOwnership(t *testing.T) {
	type want struct {
		err    string // part of the error; "" for none
		exists bool
		writes []string
	}
	cases := map[string]struct {
		reason string
		tags   map[string]string // of eip-1, unbound
		cr     *v1alpha1.Address
		want   want
	}{
		"OtherImported": {
			reason: "Another namespace's EIP named by id is refused before any write.",
			tags:   map[string]string{mr.TagNamespace: "team-b", mr.TagUID: "uid-b"},
			cr:     addressOf(named("eip-1"), rebound),
			want:   want{err: "address eip-1 belongs to namespace team-b, not team-a: " + mr.OwnerRule},
		},
		"OtherAdoptedByUIDTag": {
			reason: "An EIP carrying this resource's UID tag but another namespace's tag is not adopted.",
			tags:   map[string]string{mr.TagNamespace: "team-b", mr.TagUID: "uid-a"},
			cr:     addressOf(rebound),
			want:   want{err: "belongs to namespace team-b"},
		},
		"OtherWarmPool": {
			reason: "A warm EIP of another namespace's PodAddressPolicy is refused.",
			tags:   map[string]string{mr.TagEIPWarmPool: "team-b/lobby"},
			cr:     addressOf(named("eip-1"), rebound),
			want:   want{err: "belongs to namespace team-b"},
		},
		"OldPodAddressEIP": {
			reason: "The EIP of a PodAddress whose namespace it does not carry is refused.",
			tags:   map[string]string{mr.TagEIPOwner: "uid-pa"},
			cr:     addressOf(named("eip-1"), rebound),
			want:   want{err: "belongs to a PodAddress"},
		},
		"OtherWhileDeleting": {
			reason: "Deleting an import of another namespace's EIP lets go of it: no Release.",
			tags:   map[string]string{mr.TagNamespace: "team-b"},
			cr:     addressOf(named("eip-1"), deleted),
		},
		"OwnRenamedAndBound": {
			reason: "Its own namespace's EIP is renamed and bound.",
			tags:   map[string]string{mr.TagNamespace: "team-a"},
			cr:     addressOf(named("eip-1"), rebound),
			want:   want{exists: true, writes: []string{"Rename eip-1 mine", "Associate eip-1 eni-1/10.0.0.5"}},
		},
		"OwnReleased": {
			reason: "Its own namespace's EIP is released.",
			tags:   map[string]string{mr.TagNamespace: "team-a"},
			cr:     addressOf(named("eip-1"), deleted),
			want:   want{exists: true, writes: []string{"Release [eip-1]"}},
		},
		"UntaggedReleased": {
			reason: "An EIP made in the console (no owner tags) is imported and released as before.",
			tags:   map[string]string{"team": "b"},
			cr:     addressOf(named("eip-1"), deleted),
			want:   want{exists: true, writes: []string{"Release [eip-1]"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cloud := fake.New()
			cloud.ENIs["10.0.0.5"] = "eni-1"
			cloud.Addresses["eip-1"] = &vpc.Address{ID: "eip-1", Name: "theirs", Status: vpc.StatusUnbind, Tags: tc.tags}
			e := &external{c: cloud}
			ctx := context.Background()
			obs, err := e.Observe(ctx, tc.cr)
			if err == nil {
				switch {
				case meta.WasDeleted(tc.cr) && obs.ResourceExists:
					_, err = e.Delete(ctx, tc.cr)
				case obs.ResourceExists && !obs.ResourceUpToDate:
					_, err = e.Update(ctx, tc.cr)
				}
			}
			if tc.want.err == "" && err != nil || tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Fatalf("%s\nreconcile: %v, want error containing %q", tc.reason, err, tc.want.err)
			}
			if obs.ResourceExists != tc.want.exists {
				t.Errorf("%s\nObserve: exists %t, want %t", tc.reason, obs.ResourceExists, tc.want.exists)
			}
			if diff := cmp.Diff(tc.want.writes, cloud.Log()); diff != "" {
				t.Errorf("%s\ncloud writes: -want +got:\n%s", tc.reason, diff)
			}
			if tc.want.err != "" && tc.cr.Status.AtProvider.AddressID != "" {
				t.Errorf("%s\nthe refused EIP's state was written to the status: %+v", tc.reason, tc.cr.Status.AtProvider)
			}
			if name == "OtherAdoptedByUIDTag" && meta.GetExternalName(tc.cr) != "" {
				t.Errorf("%s\nexternal name %q saved on a refusal", tc.reason, meta.GetExternalName(tc.cr))
			}
		})
	}
}

// TestWritesCheckTheStatusOwner: Update and Delete refuse on their own an
// EIP whose observed owner is another namespace.
func TestWritesCheckTheStatusOwner(t *testing.T) {
	cloud := fake.New()
	cloud.Addresses["eip-1"] = &vpc.Address{ID: "eip-1", Status: vpc.StatusUnbind}
	cr := addressOf(named("eip-1"), rebound)
	cr.Status.AtProvider = v1alpha1.AddressObservation{AddressID: "eip-1", Status: vpc.StatusUnbind, Tags: map[string]string{mr.TagNamespace: "team-b"}}
	e := &external{c: cloud}
	if _, err := e.Update(context.Background(), cr); !mr.IsNotOwned(err) {
		t.Errorf("Update: %v, want the owner refusal", err)
	}
	if _, err := e.Delete(context.Background(), cr); !mr.IsNotOwned(err) {
		t.Errorf("Delete: %v, want the owner refusal", err)
	}
	if w := cloud.Log(); len(w) > 0 {
		t.Errorf("cloud writes %v, want none", w)
	}
}

// TestReservedTags: a spec whose tags hold the provider's own keys (an
// object older than the admission rule) is refused before any cloud call.
func TestReservedTags(t *testing.T) {
	want := errors.New("spec.forProvider.tags: " + mr.ReservedTagsRule + " (crossplane-namespace)")
	cr := addressOf(func(cr *v1alpha1.Address) { cr.Spec.ForProvider.Tags = map[string]string{mr.TagNamespace: "team-b"} })
	e := &external{c: noCloud{t: t}}
	_, err := e.Observe(context.Background(), cr)
	if diff := cmp.Diff(want, err, test.EquateErrors()); diff != "" {
		t.Errorf("Observe: -want error, +got error:\n%s", diff)
	}
	_, err = e.Create(context.Background(), cr)
	if diff := cmp.Diff(want, err, test.EquateErrors()); diff != "" {
		t.Errorf("Create: -want error, +got error:\n%s", diff)
	}
}

// TestAllocateRequestOwnerTags: an allocated EIP carries its owner.
func TestAllocateRequestOwnerTags(t *testing.T) {
	cr := addressOf(func(cr *v1alpha1.Address) { cr.Spec.ForProvider.Tags = map[string]string{"team": "a"} })
	want := map[string]string{"team": "a", mr.TagNamespace: "team-a", mr.TagKind: "Address", mr.TagName: "web", mr.TagUID: "uid-a"}
	if diff := cmp.Diff(want, AllocateRequest(cr).Tags); diff != "" {
		t.Errorf("tags: -want +got:\n%s", diff)
	}
}
