// Package optional reads objects that may not exist: for a controller, an
// absent Pod, Node or PodAddress is a state to act on, not an error.
package optional

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Get reads key into obj and returns it, or the zero value (nil) when the
// object does not exist. Any other error is returned, naming the object.
func Get[T client.Object](ctx context.Context, kube client.Reader, key types.NamespacedName, obj T) (T, error) {
	var zero T
	if err := kube.Get(ctx, key, obj); err != nil {
		if kerrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, errors.Wrapf(err, "cannot get %T %s", obj, key)
	}
	return obj, nil
}
