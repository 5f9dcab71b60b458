package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Default keys of the credentials Secret.
const (
	DefaultSecretIDKey  = "secretId"
	DefaultSecretKeyKey = "secretKey"
	DefaultTokenKey     = "token"
)

// CredentialsKeys names the keys of a credentials Secret. The defaults match
// the names Tencent Cloud uses for an API key pair.
type CredentialsKeys struct {
	// SecretIDKey is the key holding the SecretId.
	// +kubebuilder:default=secretId
	// +optional
	SecretIDKey string `json:"secretIdKey,omitempty"`

	// SecretKeyKey is the key holding the SecretKey.
	// +kubebuilder:default=secretKey
	// +optional
	SecretKeyKey string `json:"secretKeyKey,omitempty"`

	// TokenKey is the key holding an optional STS session token. A missing
	// key means long-lived credentials.
	// +kubebuilder:default=token
	// +optional
	TokenKey string `json:"tokenKey,omitempty"`
}

// LocalCredentialsSecretRef selects a Secret in the ProviderConfig's own
// namespace.
type LocalCredentialsSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	CredentialsKeys `json:",inline"`
}

// Endpoint overrides where the provider sends Tencent Cloud API calls, for a
// private endpoint or the emulated cloud.
type Endpoint struct {
	// Host is host[:port] of the API, for example clb.internal.tencentcloudapi.com
	// or 127.0.0.1:9443.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches(r'^[A-Za-z0-9.\\-\\[\\]:]+$')",message="host is host[:port] without a scheme or path, e.g. clb.tencentcloudapi.com or 127.0.0.1:9443"
	Host string `json:"host"`

	// Scheme is https (the default) or http.
	// +kubebuilder:validation:Enum=https;http
	// +kubebuilder:default=https
	// +optional
	Scheme string `json:"scheme,omitempty"`
}

// ProviderConfigStatus is the observed state of a provider configuration.
type ProviderConfigStatus struct {
	xpv2.ProviderConfigStatus `json:",inline"`
}
