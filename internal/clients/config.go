// Package clients is the one way the provider talks to Tencent Cloud: it turns
// a ProviderConfig into credentials, region and endpoint, and builds the SDK
// clients every controller shares.
package clients

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
)

// Config is what a Tencent Cloud SDK client needs. It never prints its
// secrets: String and GoString redact them so a Config can be logged.
type Config struct {
	SecretID  string
	SecretKey string
	Token     string
	Region    string
	// Endpoint is host[:port] of the API; empty means the public endpoint.
	Endpoint string
	// Scheme is "https" or "http".
	Scheme string
}

// String describes the Config without its secret key or token.
func (c Config) String() string {
	return fmt.Sprintf("Config{SecretID: %s, Region: %s, Endpoint: %s, Scheme: %s}", maskID(c.SecretID), c.Region, c.Endpoint, c.Scheme)
}

// GoString is String, so %#v does not print secrets either.
func (c Config) GoString() string { return c.String() }

// maskID keeps only the last four characters of a SecretId, enough to tell
// keys apart in logs.
func maskID(id string) string {
	if len(id) <= 4 {
		return "****"
	}
	return "****" + id[len(id)-4:]
}

// secretSource is where a config's credentials live.
type secretSource struct {
	namespace, name string
	keys            v1alpha1.CredentialsKeys
}

// ResolveManaged returns the Config of the ProviderConfig or
// ClusterProviderConfig a managed resource references. A
// ClusterProviderConfig serves only the namespaces its spec.consumers lets
// in: a managed resource anyone with edit rights in a namespace can write
// must not spend an account its platform team did not give that namespace.
func ResolveManaged(ctx context.Context, kube client.Reader, mg resource.ModernManaged) (Config, error) {
	ref := mg.GetProviderConfigReference()
	if ref == nil {
		return Config{}, errors.New("no providerConfigRef is set")
	}
	if ref.Kind != clusterv1alpha1.ClusterProviderConfigKind {
		return Resolve(ctx, kube, *ref, mg.GetNamespace())
	}
	cpc := &clusterv1alpha1.ClusterProviderConfig{}
	if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, cpc); err != nil {
		return Config{}, errors.Wrapf(err, "cannot get ClusterProviderConfig %s", ref.Name)
	}
	if err := Serves(ctx, kube, cpc, mg.GetNamespace()); err != nil {
		return Config{}, err
	}
	return ResolveObject(ctx, kube, cpc)
}

// Resolve returns the Config of a ProviderConfig (in namespace) or a
// ClusterProviderConfig. The caller decided that namespace may use a
// ClusterProviderConfig (an EIPGrant names it); a ProviderConfig is
// checked here, since whoever may edit its namespace may write it.
func Resolve(ctx context.Context, kube client.Reader, ref xpv2.ProviderConfigReference, namespace string) (Config, error) {
	switch ref.Kind {
	case v1alpha1.ProviderConfigKind:
		pc := &v1alpha1.ProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, pc); err != nil {
			return Config{}, errors.Wrapf(err, "cannot get ProviderConfig %s/%s", namespace, ref.Name)
		}
		if err := AllowedEndpoint(ctx, kube, pc); err != nil {
			return Config{}, err
		}
		return ResolveObject(ctx, kube, pc)
	case clusterv1alpha1.ClusterProviderConfigKind:
		cpc := &clusterv1alpha1.ClusterProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, cpc); err != nil {
			return Config{}, errors.Wrapf(err, "cannot get ClusterProviderConfig %s", ref.Name)
		}
		return ResolveObject(ctx, kube, cpc)
	default:
		return Config{}, errors.Errorf("providerConfigRef kind %q is not ProviderConfig or ClusterProviderConfig", ref.Kind)
	}
}

// ResolveObject reads the credentials Secret of a ProviderConfig or
// ClusterProviderConfig and returns its Config. Errors name the Secret and
// the key, never a value.
func ResolveObject(ctx context.Context, kube client.Reader, pc client.Object) (Config, error) {
	var (
		src      secretSource
		region   string
		endpoint *v1alpha1.Endpoint
		source   xpv2.CredentialsSource
	)
	switch c := pc.(type) {
	case *v1alpha1.ProviderConfig:
		src = secretSource{namespace: c.GetNamespace(), name: c.Spec.Credentials.SecretRef.Name, keys: c.Spec.Credentials.SecretRef.CredentialsKeys}
		region, endpoint, source = c.Spec.Region, c.Spec.Endpoint, c.Spec.Credentials.Source
	case *clusterv1alpha1.ClusterProviderConfig:
		src = secretSource{namespace: c.Spec.Credentials.SecretRef.Namespace, name: c.Spec.Credentials.SecretRef.Name, keys: c.Spec.Credentials.SecretRef.CredentialsKeys}
		region, endpoint, source = c.Spec.Region, c.Spec.Endpoint, c.Spec.Credentials.Source
	default:
		return Config{}, errors.Errorf("%T is not a provider config", pc)
	}
	if source != "" && source != xpv2.CredentialsSourceSecret {
		return Config{}, errors.Errorf("credentials source %q is not supported; use Secret", source)
	}

	cfg := Config{Region: region, Scheme: "https"}
	if endpoint != nil {
		cfg.Endpoint = endpoint.Host
		if endpoint.Scheme != "" {
			cfg.Scheme = endpoint.Scheme
		}
	}
	if err := readSecret(ctx, kube, src, &cfg); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func readSecret(ctx context.Context, kube client.Reader, src secretSource, cfg *Config) error {
	where := fmt.Sprintf("secret %s/%s", src.namespace, src.name)
	if src.name == "" {
		return errors.New("credentials secretRef has no name")
	}
	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: src.namespace, Name: src.name}, s); err != nil {
		if kerrors.IsNotFound(err) {
			return errors.Errorf("cannot read credentials: %s does not exist", where)
		}
		return errors.Wrapf(err, "cannot read credentials from %s", where)
	}
	keys := withDefaults(src.keys)

	var err error
	if cfg.SecretID, err = requiredKey(s, where, keys.SecretIDKey); err != nil {
		return err
	}
	if cfg.SecretKey, err = requiredKey(s, where, keys.SecretKeyKey); err != nil {
		return err
	}
	if tok, ok := s.Data[keys.TokenKey]; ok {
		cfg.Token = strings.TrimSpace(string(tok))
	}
	return nil
}

func requiredKey(s *corev1.Secret, where, key string) (string, error) {
	raw, ok := s.Data[key]
	if !ok {
		return "", errors.Errorf("cannot read credentials: %s has no key %q", where, key)
	}
	v := strings.TrimSpace(string(raw))
	if v == "" {
		return "", errors.Errorf("cannot read credentials: key %q of %s is empty", key, where)
	}
	if strings.ContainsAny(v, " \t\r\n") {
		// A pasted file or a JSON blob in one key is a common mistake; the
		// SDK would only fail later with a signature error.
		return "", errors.Errorf("cannot read credentials: key %q of %s contains whitespace; it must hold only the value", key, where)
	}
	return v, nil
}

func withDefaults(k v1alpha1.CredentialsKeys) v1alpha1.CredentialsKeys {
	if k.SecretIDKey == "" {
		k.SecretIDKey = v1alpha1.DefaultSecretIDKey
	}
	if k.SecretKeyKey == "" {
		k.SecretKeyKey = v1alpha1.DefaultSecretKeyKey
	}
	if k.TokenKey == "" {
		k.TokenKey = v1alpha1.DefaultTokenKey
	}
	return k
}
