package mr

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

func TestReservedTagsHaveAReservedPrefix(t *testing.T) {
	for _, k := range ReservedTags() {
		if !IsReservedTag(k) {
			t.Errorf("%s is written by the provider but no reserved prefix refuses it in users' tags", k)
		}
	}
	for _, p := range ReservedTagPrefixes() {
		if !strings.Contains(ReservedTagsRule, p) {
			t.Errorf("the rule's words %q do not name the prefix %s", ReservedTagsRule, p)
		}
	}
}

func TestCheckTags(t *testing.T) {
	cases := map[string]struct {
		reason string
		tags   map[string]string
		want   error
	}{
		"None": {
			reason: "No tags are fine.",
		},
		"Users": {
			reason: "Keys of the user's own are fine, even ones that mention crossplane.",
			tags:   map[string]string{"team": "a", "my-crossplane-uid": "x", "Crossplane-UID": "y"},
		},
		"UID": {
			reason: "The UID tag would get another resource's object adopted.",
			tags:   map[string]string{"team": "a", TagUID: "x"},
			want:   errors.New("spec.forProvider.tags: " + ReservedTagsRule + " (crossplane-uid)"),
		},
		"Several": {
			reason: "Every reserved key is named, sorted.",
			tags:   map[string]string{TagEIPWarmPool: "b/p", TagNamespace: "b", "crossplane-future": "x"},
			want:   errors.New("spec.forProvider.tags: " + ReservedTagsRule + " (crossplane-future, crossplane-namespace, network.tencentcloud.m.crossplane.io/warm-pool)"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckTags("spec.forProvider.tags", tc.tags)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nCheckTags(...): -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOwnerTags(t *testing.T) {
	mg := &metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "uid-1"}
	user := map[string]string{"team": "a", TagNamespace: "team-b", TagUID: "uid-of-b"}
	got := OwnerTags("LoadBalancer", mg, user)
	want := map[string]string{"team": "a", TagNamespace: "team-a", TagUID: "uid-1", TagName: "web", TagKind: "LoadBalancer"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OwnerTags: the owner's tags win over the user's: -want +got:\n%s", diff)
	}
	if user[TagNamespace] != "team-b" {
		t.Error("OwnerTags changed the user's map")
	}
}

func TestCheckOwner(t *testing.T) {
	const what = "load balancer lb-1"
	cases := map[string]struct {
		reason string
		tags   map[string]string
		want   string // "" for allowed
	}{
		"Untagged": {
			reason: "An object made in the console carries no owner: allowed, as before.",
			tags:   map[string]string{"team": "b"},
		},
		"Own": {
			reason: "An object whose namespace tag names the resource's namespace is its own.",
			tags:   map[string]string{TagNamespace: "team-a", TagUID: "other-uid"},
		},
		"OtherNamespace": {
			reason: "An object of another namespace is refused, naming the rule and who can hand it over.",
			tags:   map[string]string{TagNamespace: "team-b", TagUID: "uid-b"},
			want:   "load balancer lb-1 belongs to namespace team-b, not team-a: " + OwnerRule,
		},
		"OwnPortPool": {
			reason: "A load balancer of an older PortPool names its owner only in the pool tag.",
			tags:   map[string]string{TagPool: "team-a/games", TagPoolUID: "u"},
		},
		"OtherPortPool": {
			reason: "A load balancer of another namespace's PortPool is refused.",
			tags:   map[string]string{TagPool: "team-b/games", TagPoolUID: "u"},
			want:   "load balancer lb-1 belongs to namespace team-b, not team-a",
		},
		"NamespaceTagFirst": {
			reason: "The namespace tag decides over the pool tag.",
			tags:   map[string]string{TagNamespace: "team-b", TagPool: "team-a/games"},
			want:   "belongs to namespace team-b",
		},
		"OtherWarmPool": {
			reason: "A warm EIP of another namespace's policy is refused.",
			tags:   map[string]string{TagEIPWarmPool: "team-b/lobby"},
			want:   "belongs to namespace team-b",
		},
		"OldPodAddressEIP": {
			reason: "An EIP of a PodAddress made before EIPs carried their namespace belongs to no namespace anyone can tell.",
			tags:   map[string]string{TagEIPOwner: "uid-x"},
			want:   "belongs to a PodAddress (tag network.tencentcloud.m.crossplane.io/owner) of no known namespace",
		},
		"EmptyNamespaceTag": {
			reason: "A namespace tag with no value names no namespace: refused.",
			tags:   map[string]string{TagNamespace: ""},
			want:   "load balancer lb-1 carries owner tags that name no namespace",
		},
		"NewPodAddressEIP": {
			reason: "An EIP of a PodAddress of the same namespace is its own.",
			tags:   map[string]string{TagEIPOwner: "uid-x", TagNamespace: "team-a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckOwner("team-a", what, tc.tags)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s\nCheckOwner(...): %v, want allowed", tc.reason, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s\nCheckOwner(...): %v, want one containing %q", tc.reason, err, tc.want)
			case tc.want != "" && !IsNotOwned(errors.Wrap(err, "wrapped")):
				t.Errorf("%s\nIsNotOwned(%v) is false", tc.reason, err)
			}
		})
	}
}

func TestRefuse(t *testing.T) {
	refused := CheckOwner("a", "load balancer lb-1", map[string]string{TagNamespace: "b"})
	other := errors.New("cannot describe load balancer: boom")
	cases := map[string]struct {
		reason   string
		deleting bool
		err      error
		want     error
	}{
		"Refused": {
			reason: "A refusal is Observe's error: Synced=False.",
			err:    refused,
			want:   refused,
		},
		"RefusedWhileDeleting": {
			reason:   "Deleting the resource lets go of the object: reported gone, so Delete is never called.",
			deleting: true,
			err:      refused,
		},
		"OtherWhileDeleting": {
			reason:   "Any other error stands, even while deleting: a failed read must not let go of an object.",
			deleting: true,
			err:      other,
			want:     other,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := &v1alpha1.LoadBalancer{}
			if tc.deleting {
				now := metav1.Now()
				cr.SetDeletionTimestamp(&now)
			}
			obs, err := Refuse(cr, tc.err)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nRefuse(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalObservation{}, obs); diff != "" {
				t.Errorf("%s\nRefuse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
