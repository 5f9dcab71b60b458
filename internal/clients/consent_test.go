package clients

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
)

func cpc(name string, consumers *clusterv1alpha1.ConfigConsumers, ep *v1alpha1.Endpoint) *clusterv1alpha1.ClusterProviderConfig {
	return &clusterv1alpha1.ClusterProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterProviderConfigSpec{
			Region:      "ap-guangzhou",
			Credentials: clusterv1alpha1.ClusterProviderCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: clusterv1alpha1.CredentialsSecretRef{Namespace: "crossplane-system", Name: "creds"}},
			Endpoint:    ep,
			Consumers:   consumers,
		},
	}
}

func consumers(from string, labels map[string]string) *clusterv1alpha1.ConfigConsumers {
	c := &clusterv1alpha1.ConfigConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: from}}
	if labels != nil {
		c.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: labels}
	}
	return c
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestServes(t *testing.T) {
	cases := map[string]struct {
		reason  string
		config  *clusterv1alpha1.ClusterProviderConfig
		objs    []client.Object
		getErr  error
		wantErr string
	}{
		"NoConsumers": {
			reason:  "A config that says nothing serves no namespace: a fresh install gives a team no spend.",
			config:  cpc("default", nil, nil),
			wantErr: "ClusterProviderConfig default does not serve namespace team-a (no spec.consumers: it serves no namespace); a platform team lets a namespace in",
		},
		"Same": {
			reason:  "Same names the owner's namespace, and a cluster-scoped config has none.",
			config:  cpc("default", consumers(clbv1alpha1.ConsentSame, nil), nil),
			wantErr: "does not serve namespace team-a (spec.consumers.namespaces from: Same",
		},
		"All": {
			reason: "from: All serves every namespace without reading it.",
			config: cpc("default", consumers(clbv1alpha1.ConsentAll, nil), nil),
		},
		"SelectorMatches": {
			reason: "A namespace whose labels match is served.",
			config: cpc("default", consumers(clbv1alpha1.ConsentSelector, map[string]string{"cloud": "default"}), nil),
			objs:   []client.Object{namespace("team-a", map[string]string{"cloud": "default"})},
		},
		"SelectorMisses": {
			reason:  "A namespace whose labels do not match is refused, naming the selector.",
			config:  cpc("default", consumers(clbv1alpha1.ConsentSelector, map[string]string{"cloud": "default"}), nil),
			objs:    []client.Object{namespace("team-a", map[string]string{"cloud": "other"})},
			wantErr: "(spec.consumers.namespaces from: Selector, selector cloud=default)",
		},
		"NamespaceUnreadable": {
			reason:  "A namespace that cannot be read is not served.",
			config:  cpc("default", consumers(clbv1alpha1.ConsentSelector, map[string]string{"cloud": "default"}), nil),
			getErr:  errBoom,
			wantErr: "cannot read namespace team-a",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.objs...).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if tc.getErr != nil {
						return tc.getErr
					}
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			err := Serves(context.Background(), kube, tc.config, "team-a")
			checkErr(t, tc.reason, err, tc.wantErr)
		})
	}
}

func TestResolveManagedConsent(t *testing.T) {
	creds := sec("crossplane-system", map[string]string{"secretId": "AKID1234", "secretKey": "key"})
	cases := map[string]struct {
		reason  string
		config  *clusterv1alpha1.ClusterProviderConfig
		wantErr string
	}{
		"Served": {
			reason: "A namespace the config serves gets its credentials.",
			config: cpc("default", consumers(clbv1alpha1.ConsentAll, nil), nil),
		},
		"NotServed": {
			reason:  "A namespace the config does not serve gets no credentials, before any cloud call.",
			config:  cpc("default", nil, nil),
			wantErr: "does not serve namespace team-a",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.config, creds).Build()
			mg := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "lb"}}
			mg.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: clusterv1alpha1.ClusterProviderConfigKind, Name: "default"})
			cfg, err := ResolveManaged(context.Background(), kube, mg)
			checkErr(t, tc.reason, err, tc.wantErr)
			if tc.wantErr == "" && cfg.SecretID != "AKID1234" {
				t.Errorf("%s\nResolveManaged: SecretID %q, want the config's", tc.reason, cfg.SecretID)
			}
		})
	}
}

func TestAllowedEndpoint(t *testing.T) {
	emu := &v1alpha1.Endpoint{Host: "127.0.0.1:9443", Scheme: "http"}
	cases := map[string]struct {
		reason   string
		endpoint *v1alpha1.Endpoint
		configs  []client.Object
		wantErr  string
	}{
		"PublicEndpoint": {
			reason: "A ProviderConfig without an endpoint uses the public API.",
		},
		"ConfigServingItUsesIt": {
			reason:   "The endpoint of a ClusterProviderConfig that serves the namespace is allowed.",
			endpoint: emu,
			configs:  []client.Object{cpc("default", consumers(clbv1alpha1.ConsentAll, nil), emu)},
		},
		"AnyOtherHost": {
			reason:   "A host no ClusterProviderConfig uses is refused: the provider would sign requests to it.",
			endpoint: &v1alpha1.Endpoint{Host: "10.0.0.5:22"},
			configs:  []client.Object{cpc("default", consumers(clbv1alpha1.ConsentAll, nil), emu)},
			wantErr:  "ProviderConfig ns/pc: endpoint https://10.0.0.5:22 is not allowed; a ProviderConfig may use only the public endpoint or the endpoint of a ClusterProviderConfig that serves namespace ns",
		},
		"OtherScheme": {
			reason:   "The same host over another scheme is another endpoint.",
			endpoint: &v1alpha1.Endpoint{Host: emu.Host, Scheme: "https"},
			configs:  []client.Object{cpc("default", consumers(clbv1alpha1.ConsentAll, nil), emu)},
			wantErr:  "endpoint https://127.0.0.1:9443 is not allowed",
		},
		"ConfigServesOthers": {
			reason:   "The endpoint of a ClusterProviderConfig that does not serve the namespace is refused.",
			endpoint: emu,
			configs:  []client.Object{cpc("default", nil, emu)},
			wantErr:  "is not allowed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.configs...).Build()
			p := pc(func(p *v1alpha1.ProviderConfig) { p.Spec.Endpoint = tc.endpoint })
			checkErr(t, tc.reason, AllowedEndpoint(context.Background(), kube, p), tc.wantErr)
		})
	}
}

func TestResolveRefusesEndpoint(t *testing.T) {
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).
		WithObjects(pc(func(p *v1alpha1.ProviderConfig) { p.Spec.Endpoint = &v1alpha1.Endpoint{Host: "attacker.example:443"} }),
			sec("ns", map[string]string{"secretId": "AKID1234", "secretKey": "key"})).Build()
	_, err := Resolve(context.Background(), kube, xpv2.ProviderConfigReference{Kind: v1alpha1.ProviderConfigKind, Name: "pc"}, "ns")
	checkErr(t, "Every path to a ProviderConfig checks its endpoint.", err, "endpoint https://attacker.example:443 is not allowed")
}

var errBoom = errorString("boom")

type errorString string

func (e errorString) Error() string { return string(e) }

func checkErr(t *testing.T, reason string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s\ngot error %v, want none", reason, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s\ngot error %v, want one containing %q", reason, err, want)
	}
}
