package clients

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
)

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func pc(mods ...func(*v1alpha1.ProviderConfig)) *v1alpha1.ProviderConfig {
	p := &v1alpha1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pc"},
		Spec: v1alpha1.ProviderConfigSpec{
			Region:      "ap-guangzhou",
			Credentials: v1alpha1.ProviderCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: v1alpha1.LocalCredentialsSecretRef{Name: "creds"}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func sec(ns string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestResolveObject(t *testing.T) {
	cases := map[string]struct {
		reason  string
		objs    []client.Object
		config  client.Object
		want    Config
		wantErr string
	}{
		"Defaults": {
			reason: "Default keys are read and the public endpoint is used over https.",
			objs:   []client.Object{sec("ns", map[string]string{"secretId": "AKID1234", "secretKey": "key"})},
			config: pc(),
			want:   Config{SecretID: "AKID1234", SecretKey: "key", Region: "ap-guangzhou", Scheme: "https"},
		},
		"CustomKeysTokenAndEndpoint": {
			reason: "Renamed keys, a session token and an endpoint override are honoured; surrounding newlines are trimmed.",
			objs:   []client.Object{sec("ns", map[string]string{"id": "AKID1234\n", "key": "key", "sts": "tok"})},
			config: pc(func(p *v1alpha1.ProviderConfig) {
				p.Spec.Credentials.SecretRef.CredentialsKeys = v1alpha1.CredentialsKeys{SecretIDKey: "id", SecretKeyKey: "key", TokenKey: "sts"}
				p.Spec.Endpoint = &v1alpha1.Endpoint{Host: "127.0.0.1:9443", Scheme: "http"}
			}),
			want: Config{SecretID: "AKID1234", SecretKey: "key", Token: "tok", Region: "ap-guangzhou", Endpoint: "127.0.0.1:9443", Scheme: "http"},
		},
		"MissingSecret": {
			reason:  "A missing Secret is named with its namespace.",
			config:  pc(),
			wantErr: "secret ns/creds does not exist",
		},
		"MissingKey": {
			reason:  "A missing key is named.",
			objs:    []client.Object{sec("ns", map[string]string{"secretId": "AKID1234"})},
			config:  pc(),
			wantErr: `secret ns/creds has no key "secretKey"`,
		},
		"EmptyKey": {
			reason:  "An empty value is an error, not a signature failure later.",
			objs:    []client.Object{sec("ns", map[string]string{"secretId": " ", "secretKey": "k"})},
			config:  pc(),
			wantErr: `key "secretId" of secret ns/creds is empty`,
		},
		"ClusterConfigReadsNamedNamespace": {
			reason: "A ClusterProviderConfig reads the Secret from the namespace it names.",
			objs:   []client.Object{sec("other", map[string]string{"secretId": "AKID1234", "secretKey": "key"})},
			config: &clusterv1alpha1.ClusterProviderConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "default"},
				Spec: clusterv1alpha1.ClusterProviderConfigSpec{
					Region:      "ap-shanghai",
					Credentials: clusterv1alpha1.ClusterProviderCredentials{SecretRef: clusterv1alpha1.CredentialsSecretRef{Name: "creds", Namespace: "other"}},
				},
			},
			want: Config{SecretID: "AKID1234", SecretKey: "key", Region: "ap-shanghai", Scheme: "https"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.objs...).Build()
			got, err := ResolveObject(context.Background(), kube, tc.config)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nResolveObject(...): got error %v, want one containing %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nResolveObject(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nResolveObject(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestResolveManagedKinds(t *testing.T) {
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).
		WithObjects(pc(), sec("ns", map[string]string{"secretId": "AKID1234", "secretKey": "key"})).Build()
	if _, err := Resolve(context.Background(), kube, xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "pc"}, "ns"); err != nil {
		t.Errorf("ProviderConfig in the resource's namespace: %v", err)
	}
	if _, err := Resolve(context.Background(), kube, xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "pc"}, "elsewhere"); err == nil {
		t.Error("a ProviderConfig of another namespace was used")
	}
	if _, err := Resolve(context.Background(), kube, xpv2.ProviderConfigReference{Kind: "Bogus", Name: "pc"}, "ns"); err == nil || !strings.Contains(err.Error(), `"Bogus"`) {
		t.Errorf("unknown kind: got %v, want an error naming it", err)
	}
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	c := Config{SecretID: "AKIDabcdefgh1234", SecretKey: "super-secret-key", Token: "session-token", Region: "ap-guangzhou"}
	for _, s := range []string{c.String(), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(&c)} {
		if strings.Contains(s, c.SecretKey) || strings.Contains(s, c.Token) || strings.Contains(s, c.SecretID) {
			t.Errorf("printed config leaks a secret: %s", s)
		}
		if !strings.Contains(s, "1234") {
			t.Errorf("printed config should keep the SecretId's last four characters to tell keys apart: %s", s)
		}
	}
}
