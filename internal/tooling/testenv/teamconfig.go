package testenv

import (
	"context"
	"fmt"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
)

// ApplyTeamProviderConfig applies examples/providerconfig/providerconfig.yaml
// (its Secret and ProviderConfig "team-a") into ns, pointed at endpoint (a
// test's own emulator), with what a platform team adds for it: a
// ClusterProviderConfig "endpoint-<ns>" that serves ns and names endpoint,
// since a namespaced ProviderConfig may use only an endpoint that a
// ClusterProviderConfig serving its namespace names.
func ApplyTeamProviderConfig(ctx context.Context, kube client.Client, ns, endpoint string) error {
	cpc := &clusterv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "endpoint-" + ns}}
	_, err := controllerutil.CreateOrUpdate(ctx, kube, cpc, func() error {
		cpc.Spec = clusterv1alpha1.ClusterProviderConfigSpec{
			Region: "ap-guangzhou",
			Credentials: clusterv1alpha1.ClusterProviderCredentials{Source: xpv2.CredentialsSourceSecret,
				SecretRef: clusterv1alpha1.CredentialsSecretRef{Namespace: ns, Name: "team-a-creds"}},
			Endpoint: &v1alpha1.Endpoint{Host: endpoint, Scheme: "http"},
			Consumers: &clusterv1alpha1.ConfigConsumers{Namespaces: clbv1alpha1.NamespaceConsent{
				From: clbv1alpha1.ConsentSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			}},
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot allow endpoint %s for namespace %s: %w", endpoint, ns, err)
	}
	path := filepath.Join(RepoRoot(), "examples", "providerconfig", "providerconfig.yaml")
	_, err = Apply(ctx, kube, path, WithEndpoint(endpoint), func(u *unstructured.Unstructured) { u.SetNamespace(ns) })
	return err
}
