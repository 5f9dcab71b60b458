package mr

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// OwnNamespaceRefs resolves a managed resource's references only within
// its own namespace. Crossplane's namespaced references and selectors may
// name another namespace, and whoever may edit a namespace may write
// them: resolved, a Listener or a PortPool of hers would act on another
// team's load balancer.
type OwnNamespaceRefs struct {
	managed.ReferenceResolver
}

// ResolveReferences refuses a reference or selector into another
// namespace, then resolves the rest.
func (r OwnNamespaceRefs) ResolveReferences(ctx context.Context, mg resource.Managed) error {
	if err := CheckRefNamespaces(mg); err != nil {
		return err
	}
	return r.ReferenceResolver.ResolveReferences(ctx, mg)
}

// CheckRefNamespaces returns an error naming the first field of mg's spec
// (…Ref, …Refs, …Selector) whose namespace is not mg's own.
func CheckRefNamespaces(mg resource.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mg)
	if err != nil {
		return errors.Wrap(err, "cannot read the resource's references")
	}
	own := mg.GetNamespace()
	var bad []string
	walkRefs("spec", u["spec"], func(path, ns string) {
		if ns != "" && ns != own {
			bad = append(bad, fmt.Sprintf("%s names namespace %s", path, ns))
		}
	})
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return errors.Errorf("%s: references and selectors resolve only within the resource's own namespace (%s); name the object by its id where it may be used",
		strings.Join(bad, ", "), own)
}

// walkRefs calls fn with the path and namespace of every reference or
// selector under v.
func walkRefs(path string, v any, fn func(path, ns string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			p := path + "." + k
			if isRef(k) {
				eachRef(p, c, fn)
				continue
			}
			walkRefs(p, c, fn)
		}
	case []any:
		for i, c := range t {
			walkRefs(fmt.Sprintf("%s[%d]", path, i), c, fn)
		}
	}
}

func isRef(key string) bool {
	return strings.HasSuffix(key, "Ref") || strings.HasSuffix(key, "Refs") || strings.HasSuffix(key, "Selector")
}

func eachRef(path string, v any, fn func(path, ns string)) {
	switch t := v.(type) {
	case map[string]any:
		ns, _ := t["namespace"].(string)
		fn(path, ns)
	case []any:
		for i, c := range t {
			eachRef(fmt.Sprintf("%s[%d]", path, i), c, fn)
		}
	}
}
