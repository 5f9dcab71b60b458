// Package certgrant decides which certificate a Pod's TCP_SSL or QUIC
// port may have on its listeners: the one its certSecret names, when an
// admin granted that certificate to the Pod's namespace.
//
// The Secret and the Pod's annotations are a namespace tenant's to write,
// while a certificate id is account-wide: without a grant, a tenant naming
// another team's certificate id would serve that team's certificate (and
// its private key) on a listener of hers. So every refusal is decided here,
// before any cloud call.
package certgrant

import (
	"context"
	"fmt"
	"slices"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
)

// SecretKey is the key of the certificate id in a certSecret, as
// tke-extend-network-controller reads it.
const SecretKey = "qcloud_cert_id"

// A Refusal is why a port may not have its certificate: the PodAddress
// state (Invalid or NotGranted) and the message that says why.
type Refusal struct {
	State   string
	Message string
}

func (r *Refusal) Error() string { return r.State + ": " + r.Message }

// Decide returns the certificate id port pr of a Pod of namespace ns may
// have on its listeners in pool: "" when it names no certSecret (the
// pool's certificate serves it). A *Refusal says why it may not; any
// other error is a failed read, to retry. kube reads the Secret in ns
// only (uncached: the provider watches no Secret), the ClusterProviderConfig
// and, for a grant by label selector, the Namespace.
func Decide(ctx context.Context, kube client.Reader, ns string, pr v1alpha1.PortRequest, pool *clbv1alpha1.PortPool) (string, error) {
	if pr.CertSecret == "" {
		return "", nil
	}
	if pr.Protocol != v1alpha1.ProtocolTCPSSL && pr.Protocol != v1alpha1.ProtocolQUIC {
		return "", &Refusal{v1alpha1.StateInvalid, fmt.Sprintf("port %s: certSecret %s applies to TCP_SSL and QUIC only, not %s", pr.Port.String(), pr.CertSecret, pr.Protocol)}
	}
	// The pool's certificate is what the listener gets back when the Pod
	// lets the slot go; without one the next Pod there would serve this
	// Pod's certificate.
	if l := pool.Spec.ForProvider.Listener; l == nil || l.Certificate == nil {
		return "", &Refusal{v1alpha1.StateInvalid, fmt.Sprintf("port %s: certSecret %s needs pool %s/%s to have a listener.certificate, which its listeners get back when the Pod lets them go",
			pr.Port.String(), pr.CertSecret, pool.GetNamespace(), pool.GetName())}
	}
	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: pr.CertSecret}, s); err != nil {
		if kerrors.IsNotFound(err) {
			return "", &Refusal{v1alpha1.StateInvalid, fmt.Sprintf("port %s: certSecret %s/%s not found", pr.Port.String(), ns, pr.CertSecret)}
		}
		return "", fmt.Errorf("cannot read certSecret %s/%s: %w", ns, pr.CertSecret, err)
	}
	id := string(s.Data[SecretKey])
	if id == "" {
		return "", &Refusal{v1alpha1.StateInvalid, fmt.Sprintf("port %s: certSecret %s/%s has no %s", pr.Port.String(), ns, pr.CertSecret, SecretKey)}
	}
	ok, err := granted(ctx, kube, pool.GetProviderConfigReference(), pool.GetNamespace(), ns, id)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", &Refusal{v1alpha1.StateNotGranted, fmt.Sprintf("port %s: certificate %s (certSecret %s) is not granted to namespace %s for pool %s/%s; a platform team grants it by id in the ClusterProviderConfig's spec.consumers.grants",
			pr.Port.String(), id, pr.CertSecret, ns, pool.GetNamespace(), pool.GetName())}
	}
	return id, nil
}

// granted reports whether the account of a pool of namespace poolNS,
// through ref, lets namespace ns use certificate id. Through a
// ClusterProviderConfig, a grant must name the id (a grant by tags or of
// every untagged object does not: certificates carry no tags and hold
// private keys) and let ns in. Through a namespaced ProviderConfig the
// account is poolNS's own: only its own Pods may use its certificates.
func granted(ctx context.Context, kube client.Reader, ref *xpv2.ProviderConfigReference, poolNS, ns, id string) (bool, error) {
	if ref == nil || ref.Kind != clusterv1alpha1.ClusterProviderConfigKind {
		return ns == poolNS, nil
	}
	cpc := &clusterv1alpha1.ClusterProviderConfig{}
	if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, cpc); err != nil {
		return false, fmt.Errorf("cannot get ClusterProviderConfig %s to read its grants: %w", ref.Name, err)
	}
	for _, g := range cpc.ObjectGrants() {
		if !slices.Contains(g.IDs, id) {
			continue
		}
		n, err := clients.Consumer(ctx, kube, g.Namespaces.NeedsLabels(), ns)
		if err != nil {
			return false, err
		}
		if g.Namespaces.Allows("", n) {
			return true, nil
		}
	}
	return false, nil
}
