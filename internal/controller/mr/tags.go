package mr

import "github.com/crossplane/crossplane-runtime/v2/pkg/resource"

// Tags the provider puts on every cloud resource it creates. The UID tag
// finds a resource whose id was never saved (the provider stopped between
// the create call and persisting the external name).
const (
	TagUID       = "crossplane-uid"
	TagNamespace = "crossplane-namespace"
	TagName      = "crossplane-name"
)

// OwnerTags are the tags naming mg, plus the user's tags.
func OwnerTags(mg resource.Object, user map[string]string) map[string]string {
	tags := map[string]string{TagUID: string(mg.GetUID()), TagNamespace: mg.GetNamespace(), TagName: mg.GetName()}
	for k, v := range user {
		tags[k] = v
	}
	return tags
}
