package testenv

import (
	"context"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ClearNamespace removes the Pods and every object of the provider's
// kinds from namespace at once: finalizers dropped, no grace. A suite
// whose tests each start a provider calls it as a test ends, so that the
// next test's provider does not reconcile every earlier test's objects
// (what each test asserts was asserted before). The cloud keeps what
// those objects made.
func (e *Env) ClearNamespace(ctx context.Context, namespace string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		return errors.Wrap(err, "cannot make a discovery client")
	}
	dyn, err := dynamic.NewForConfig(e.Config)
	if err != nil {
		return errors.Wrap(err, "cannot make a dynamic client")
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil {
		return errors.Wrap(err, "cannot discover the namespaced kinds")
	}
	var kinds []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return err
		}
		if gv.Group != "" && !strings.Contains(gv.Group, "tencent") {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || (gv.Group == "" && r.Name != "pods") {
				continue
			}
			kinds = append(kinds, gv.WithResource(r.Name))
		}
	}
	zero := int64(0)
	for _, k := range kinds {
		c := dyn.Resource(k).Namespace(namespace)
		l, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			return errors.Wrapf(err, "cannot list %s", k)
		}
		for _, o := range l.Items {
			if len(o.GetFinalizers()) > 0 {
				if _, err := c.Patch(ctx, o.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !kerrors.IsNotFound(err) {
					return errors.Wrapf(err, "cannot drop the finalizers of %s %s", k.Resource, o.GetName())
				}
			}
			if err := c.Delete(ctx, o.GetName(), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !kerrors.IsNotFound(err) {
				return errors.Wrapf(err, "cannot delete %s %s", k.Resource, o.GetName())
			}
		}
	}
	return nil
}
