package mr

import (
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// MayLateInitialize reports whether the resource's management policies let
// Observe fill its spec. The reconciler persists the in-memory object when
// it adds its finalizer, so an Observe-only resource must not be touched
// at all rather than rely on the reconciler skipping the late-init update.
func MayLateInitialize(mg resource.ModernManaged) bool {
	p := mg.GetManagementPolicies()
	return len(p) == 0 || slices.Contains(p, xpv2.ManagementActionAll) || slices.Contains(p, xpv2.ManagementActionLateInitialize)
}
