package xplocal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpextv1alpha1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1alpha1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Activate creates a ManagedResourceActivationPolicy with these patterns,
// as a user of a safe-start provider does, and waits until the CRD of
// every ManagedResourceDefinition it activates is established. It returns
// the names of those CRDs, sorted.
func (l *Local) Activate(ctx context.Context, timeout time.Duration, name string, patterns ...xpextv1alpha1.ActivationPolicy) ([]string, error) {
	policy := &xpextv1alpha1.ManagedResourceActivationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       xpextv1alpha1.ManagedResourceActivationPolicySpec{Activations: patterns},
	}
	if err := l.Kube.Create(ctx, policy); err != nil && !kerrors.IsAlreadyExists(err) {
		return nil, err
	}
	var names []string
	err := testenv.Eventually(ctx, timeout, func() error {
		mrds := &xpextv1alpha1.ManagedResourceDefinitionList{}
		if err := l.Kube.List(ctx, mrds); err != nil {
			return err
		}
		names = names[:0]
		for _, m := range mrds.Items {
			if policy.Activates(m.Name) {
				names = append(names, m.Name)
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("no ManagedResourceDefinition matches %v", patterns)
		}
		for _, n := range names {
			if err := established(ctx, l.Kube, n); err != nil {
				return err
			}
		}
		return nil
	})
	slices.Sort(names)
	return names, err
}

func established(ctx context.Context, kube client.Client, name string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return err
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return nil
		}
	}
	return fmt.Errorf("CRD %s is not established", name)
}

// Composed lists the resources a composite composed: its
// spec.crossplane.resourceRefs (v2 composites) or spec.resourceRefs
// (legacy ones). Namespaced references without a namespace are in the
// composite's.
func Composed(xr *unstructured.Unstructured) []*unstructured.Unstructured {
	refs, found, _ := unstructured.NestedSlice(xr.Object, "spec", "crossplane", "resourceRefs")
	if !found {
		refs, _, _ = unstructured.NestedSlice(xr.Object, "spec", "resourceRefs")
	}
	out := make([]*unstructured.Unstructured, 0, len(refs))
	for _, r := range refs {
		m, _ := r.(map[string]any)
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(fmt.Sprint(m["apiVersion"]))
		u.SetKind(fmt.Sprint(m["kind"]))
		u.SetName(fmt.Sprint(m["name"]))
		if ns, ok := m["namespace"].(string); ok {
			u.SetNamespace(ns)
		} else {
			u.SetNamespace(xr.GetNamespace())
		}
		out = append(out, u)
	}
	return out
}

// DeleteComposite deletes a claim or a composite and then, because the
// local control plane runs no garbage collector, what it composed, as the
// collector would; it waits until all of it is gone. The provider's
// finalizers make "gone" mean deleted in the cloud too (for managed
// resources that are not observe-only). It returns what it deleted,
// composite first.
func (l *Local) DeleteComposite(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, timeout time.Duration) ([]*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := l.Kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return nil, err
	}
	xr, err := l.Composite(ctx, u)
	if err != nil {
		return nil, err
	}
	composed := Composed(xr)
	if len(composed) == 0 {
		return nil, fmt.Errorf("%s %s/%s composed nothing", gvk.Kind, namespace, name)
	}
	if err := l.Kube.Delete(ctx, u); err != nil {
		return nil, err
	}
	deleted := []*unstructured.Unstructured{u}
	if xr != u {
		deleted = append(deleted, xr)
	}
	if err := testenv.Eventually(ctx, timeout, func() error { return errors.Join(l.gone(ctx, u), l.gone(ctx, xr)) }); err != nil {
		return nil, err
	}
	for _, c := range composed {
		if err := l.Kube.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
	}
	err = testenv.Eventually(ctx, timeout, func() error {
		var errs []error
		for _, c := range composed {
			errs = append(errs, l.gone(ctx, c))
		}
		return errors.Join(errs...)
	})
	return append(deleted, composed...), err
}

// Composite returns the composite of a claim (its spec.resourceRef), or u
// itself when u is a composite.
func (l *Local) Composite(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ref, found, _ := unstructured.NestedMap(u.Object, "spec", "resourceRef")
	if !found {
		return u, nil
	}
	xr := &unstructured.Unstructured{}
	xr.SetAPIVersion(fmt.Sprint(ref["apiVersion"]))
	xr.SetKind(fmt.Sprint(ref["kind"]))
	return xr, l.Kube.Get(ctx, client.ObjectKey{Name: fmt.Sprint(ref["name"])}, xr)
}

func (l *Local) gone(ctx context.Context, u *unstructured.Unstructured) error {
	err := l.Kube.Get(ctx, client.ObjectKeyFromObject(u), u.DeepCopy())
	if err == nil {
		return fmt.Errorf("%s %s still there", u.GetKind(), client.ObjectKeyFromObject(u))
	}
	return client.IgnoreNotFound(err)
}
