package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	nsv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
)

// CredentialsSecretRef selects a Secret in a named namespace.
type CredentialsSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the Secret.
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`

	nsv1alpha1.CredentialsKeys `json:",inline"`
}

// ClusterProviderCredentials selects the Tencent Cloud API key pair.
type ClusterProviderCredentials struct {
	// Source of the credentials. Only Secret is supported.
	// +kubebuilder:validation:Enum=Secret
	// +kubebuilder:default=Secret
	Source xpv2.CredentialsSource `json:"source"`

	// SecretRef selects the Secret that holds the SecretId, the SecretKey and
	// an optional session token.
	SecretRef CredentialsSecretRef `json:"secretRef"`
}

// ClusterProviderConfigSpec configures how the provider reaches Tencent Cloud.
type ClusterProviderConfigSpec struct {
	// Credentials used to sign API calls.
	Credentials ClusterProviderCredentials `json:"credentials"`

	// Region of the resources managed through this config, for example
	// ap-guangzhou.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]+(-[a-z0-9]+)+$')",message="region is a Tencent Cloud region such as ap-guangzhou"
	Region string `json:"region"`

	// Endpoint overrides the public API endpoint. ProviderConfigs of the
	// namespaces this config serves may use the same endpoint.
	// +optional
	Endpoint *nsv1alpha1.Endpoint `json:"endpoint,omitempty"`

	// Consumers say which namespaces' managed resources may spend this
	// config's account. Without it the config serves no namespace: a
	// platform team lets each team in.
	// +optional
	Consumers *ConfigConsumers `json:"consumers,omitempty"`
}

// ConfigConsumers say which namespaces may use a ClusterProviderConfig.
type ConfigConsumers struct {
	// Namespaces whose managed resources may use the config: All, or
	// Selector (the label kubernetes.io/metadata.name selects a namespace
	// by name). A cluster-scoped config has no namespace of its own, so
	// Same lets no namespace in.
	// +kubebuilder:validation:XValidation:rule="!has(self.from) || self.from != 'Same'",message="a ClusterProviderConfig has no namespace of its own: from is All or Selector"
	Namespaces clbv1alpha1.NamespaceConsent `json:"namespaces"`

	// Grants give namespaces cloud objects of this account that carry no
	// owner tags (made in the console or by other tools): a namespace may
	// import, change, delete and build on such an object only when a grant
	// names it. Objects the provider made carry their owner namespace in
	// tags and are never granted here.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Grants []ObjectGrant `json:"grants,omitempty"`
}

// An ObjectGrant gives the namespaces it lets in the untagged cloud
// objects (load balancers, EIPs) it selects: by id, or by tags. A grant
// with neither selects every untagged object of the account.
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces.from) || self.namespaces.from != 'Same'",message="a ClusterProviderConfig has no namespace of its own: namespaces.from is All or Selector"
type ObjectGrant struct {
	// IDs of the granted objects (lb-…, eip-…).
	// +kubebuilder:validation:MaxItems=256
	// +optional
	IDs []string `json:"ids,omitempty"`

	// Tags every granted object carries (all of them, with these values).
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// Namespaces the grant lets in: All, or Selector.
	Namespaces clbv1alpha1.NamespaceConsent `json:"namespaces"`
}

// Selects reports whether the grant names the untagged object id, with
// tags.
func (g ObjectGrant) Selects(id string, tags map[string]string) bool {
	if len(g.IDs) > 0 && !slices.Contains(g.IDs, id) {
		return false
	}
	for k, v := range g.Tags {
		if t, ok := tags[k]; !ok || t != v {
			return false
		}
	}
	return true
}

// ObjectGrants are the config's grants of untagged objects.
func (c *ClusterProviderConfig) ObjectGrants() []ObjectGrant {
	if c.Spec.Consumers == nil {
		return nil
	}
	return c.Spec.Consumers.Grants
}

// NamespaceConsent is the config's consent to namespaces; one that says
// nothing lets no namespace in.
func (c *ClusterProviderConfig) NamespaceConsent() clbv1alpha1.NamespaceConsent {
	if c.Spec.Consumers == nil {
		return clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentSame}
	}
	return c.Spec.Consumers.Namespaces
}

// +kubebuilder:object:root=true

// A ClusterProviderConfig configures the Tencent Cloud provider for managed
// resources of the namespaces its spec.consumers lets in. Managed resources
// use the ClusterProviderConfig named "default" unless they reference
// another config.
// +kubebuilder:printcolumn:name="REGION",type="string",JSONPath=".spec.region"
// +kubebuilder:printcolumn:name="SECRET",type="string",JSONPath=".spec.credentials.secretRef.name"
// +kubebuilder:printcolumn:name="CONSUMERS",type="string",JSONPath=".spec.consumers.namespaces.from"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider,tencentcloud}
type ClusterProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterProviderConfigSpec       `json:"spec"`
	Status nsv1alpha1.ProviderConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterProviderConfigList contains a list of ClusterProviderConfig.
type ClusterProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProviderConfig `json:"items"`
}
