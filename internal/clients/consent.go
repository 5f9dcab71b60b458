package clients

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
)

// Serves returns nil when cpc lets the managed resources of namespace use
// it, else an error that names the rule and who may change it.
func Serves(ctx context.Context, kube client.Reader, cpc *clusterv1alpha1.ClusterProviderConfig, namespace string) error {
	consent := cpc.NamespaceConsent()
	ns, err := Consumer(ctx, kube, consent.NeedsLabels(), namespace)
	if err != nil {
		return err
	}
	if consent.Allows("", ns) {
		return nil
	}
	rule := "spec.consumers.namespaces " + consent.String()
	if cpc.Spec.Consumers == nil {
		rule = "no spec.consumers: it serves no namespace"
	}
	return errors.Errorf("ClusterProviderConfig %s does not serve namespace %s (%s); a platform team lets a namespace in through the config's spec.consumers",
		cpc.GetName(), namespace, rule)
}

// AllowedEndpoint returns nil when pc uses the public endpoint, or the
// endpoint (host and scheme) of a ClusterProviderConfig that serves pc's
// namespace: a ProviderConfig is written by whoever may edit its
// namespace, and the provider must not send signed requests wherever she
// points it.
func AllowedEndpoint(ctx context.Context, kube client.Reader, pc *v1alpha1.ProviderConfig) error {
	ep := pc.Spec.Endpoint
	if ep == nil || ep.Host == "" {
		return nil
	}
	l := &clusterv1alpha1.ClusterProviderConfigList{}
	if err := kube.List(ctx, l); err != nil {
		return errors.Wrap(err, "cannot list ClusterProviderConfigs to check the ProviderConfig's endpoint")
	}
	for i := range l.Items {
		cpc := &l.Items[i]
		if sameEndpoint(cpc.Spec.Endpoint, ep) && Serves(ctx, kube, cpc, pc.GetNamespace()) == nil {
			return nil
		}
	}
	return errors.Errorf("ProviderConfig %s/%s: endpoint %s://%s is not allowed; a ProviderConfig may use only the public endpoint or the endpoint of a ClusterProviderConfig that serves namespace %s, which a platform team sets",
		pc.GetNamespace(), pc.GetName(), schemeOf(ep), ep.Host, pc.GetNamespace())
}

func sameEndpoint(a, b *v1alpha1.Endpoint) bool {
	return a != nil && b != nil && a.Host == b.Host && schemeOf(a) == schemeOf(b)
}

func schemeOf(e *v1alpha1.Endpoint) string {
	if e.Scheme == "" {
		return "https"
	}
	return e.Scheme
}

// Consumer is the Namespace as a consent reads it: by name, or with its
// labels when the consent selects by them.
func Consumer(ctx context.Context, kube client.Reader, labels bool, name string) (*corev1.Namespace, error) {
	if !labels {
		return clbv1alpha1.NamedNamespace(name), nil
	}
	ns := &corev1.Namespace{}
	if err := kube.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		return nil, errors.Wrapf(err, "cannot read namespace %s to check what consents let it in", name)
	}
	return ns, nil
}

// Granted returns nil when a managed resource of namespace, using the
// provider config ref, may act on the cloud object id that carries no
// owner tags: always through a namespaced ProviderConfig (its credentials
// are the namespace's own account), through a ClusterProviderConfig only
// when one of its grants selects the object and lets the namespace in.
func Granted(ctx context.Context, kube client.Reader, ref *xpv2.ProviderConfigReference, namespace, id string, tags map[string]string) error {
	if ref == nil || ref.Kind != clusterv1alpha1.ClusterProviderConfigKind {
		return nil
	}
	cpc := &clusterv1alpha1.ClusterProviderConfig{}
	if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, cpc); err != nil {
		return errors.Wrapf(err, "cannot get ClusterProviderConfig %s to read its grants", ref.Name)
	}
	for _, g := range cpc.ObjectGrants() {
		if !g.Selects(id, tags) {
			continue
		}
		ns, err := Consumer(ctx, kube, g.Namespaces.NeedsLabels(), namespace)
		if err != nil {
			return err
		}
		if g.Namespaces.Allows("", ns) {
			return nil
		}
	}
	return errors.Errorf("no grant of ClusterProviderConfig %s gives it to namespace %s; a platform team grants such objects through the config's spec.consumers.grants (by id or tags)",
		cpc.GetName(), namespace)
}
