package mr

import (
	"context"
	"fmt"
	"slices"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
)

// OwnNamespaceRefs resolves a managed resource's references within its
// own namespace, and into another only with the consent of the object
// referenced. Crossplane's namespaced references and selectors may name
// another namespace, and whoever may edit a namespace may write them:
// resolved without consent, a Listener or a PortPool of hers would act on
// another team's load balancer.
type OwnNamespaceRefs struct {
	managed.ReferenceResolver
	Kube client.Reader
}

// ResolveReferences refuses a reference or selector into another
// namespace that no consent lets in, then resolves them all.
func (r OwnNamespaceRefs) ResolveReferences(ctx context.Context, mg resource.Managed) error {
	if err := CheckRefNamespaces(ctx, r.Kube, mg); err != nil {
		return err
	}
	return r.ReferenceResolver.ResolveReferences(ctx, mg)
}

// RefRule is the rule CheckRefNamespaces enforces, and who can change the
// answer.
const RefRule = "references and selectors resolve within the resource's own namespace; into another only a reference (not a selector) " +
	"to a LoadBalancer whose spec.consumers.namespaces lets this namespace in, which its owners set"

// CheckRefNamespaces returns an error naming every field of mg's spec
// (…Ref, …Refs, …Selector) that names another namespace without its
// consent: only a loadBalancerId reference to a LoadBalancer that lets
// mg's namespace in (spec.consumers) crosses namespaces.
func CheckRefNamespaces(ctx context.Context, kube client.Reader, mg resource.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mg)
	if err != nil {
		return errors.Wrap(err, "cannot read the resource's references")
	}
	own := mg.GetNamespace()
	var bad []string
	var failed error
	walkRefs("spec", u["spec"], func(path, key, ns, name string) {
		if ns == "" || ns == own {
			return
		}
		why, err := refConsent(ctx, kube, key, ns, name, own)
		if err != nil {
			failed = err
			return
		}
		if why != "" {
			bad = append(bad, fmt.Sprintf("%s names namespace %s (%s)", path, ns, why))
		}
	})
	if failed != nil {
		return failed
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return errors.Errorf("%s: %s", strings.Join(bad, ", "), RefRule)
}

// refConsent says why the reference key to ns/name may not be resolved
// from namespace own, "" when it may.
func refConsent(ctx context.Context, kube client.Reader, key, ns, name, own string) (string, error) {
	switch {
	case strings.HasSuffix(key, "Selector"):
		return "a selector", nil
	case key != "loadBalancerIdRef" && key != "loadBalancerIdRefs":
		return "not a load balancer", nil
	case kube == nil:
		return "no consent can be read", nil
	}
	lb := &clbv1alpha1.LoadBalancer{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, lb); err != nil {
		if kerrors.IsNotFound(err) {
			return "no such LoadBalancer", nil
		}
		return "", errors.Wrapf(err, "cannot read LoadBalancer %s/%s to check whom it lets in", ns, name)
	}
	c := lb.NamespaceConsent()
	consumer, err := clients.Consumer(ctx, kube, c.NeedsLabels(), own)
	if err != nil {
		return "", err
	}
	if !c.Allows(ns, consumer) {
		return "its spec.consumers.namespaces " + c.String() + " does not let " + own + " in", nil
	}
	return "", nil
}

// walkRefs calls fn with the path and namespace of every reference or
// selector under v.
func walkRefs(path string, v any, fn func(path, key, ns, name string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			p := path + "." + k
			if isRef(k) {
				eachRef(p, k, c, fn)
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

func eachRef(path, key string, v any, fn func(path, key, ns, name string)) {
	switch t := v.(type) {
	case map[string]any:
		ns, _ := t["namespace"].(string)
		name, _ := t["name"].(string)
		fn(path, key, ns, name)
	case []any:
		for i, c := range t {
			eachRef(fmt.Sprintf("%s[%d]", path, i), key, c, fn)
		}
	}
}
