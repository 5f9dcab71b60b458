package certgrant

import (
	"context"
	"errors"
	"strings"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis"
	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func secret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func config(grants ...clusterv1alpha1.ObjectGrant) *clusterv1alpha1.ClusterProviderConfig {
	return &clusterv1alpha1.ClusterProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: clusterv1alpha1.ClusterProviderConfigSpec{Consumers: &clusterv1alpha1.ConfigConsumers{
			Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll},
			Grants:     grants,
		}},
	}
}

func toNamespaces(ids []string, names ...string) clusterv1alpha1.ObjectGrant {
	return clusterv1alpha1.ObjectGrant{IDs: ids, Namespaces: clbv1alpha1.NamespaceConsent{
		From:     clbv1alpha1.ConsentSelector,
		Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names}}},
	}}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}}}
}

func pool(kind string) *clbv1alpha1.PortPool {
	p := &clbv1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "tke-port-pools", Name: "pool"}}
	p.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: kind, Name: "default"}
	p.Spec.ForProvider.Listener = &clbv1alpha1.PoolListenerSettings{Certificate: &clbv1alpha1.Certificate{CertID: "cert-pool"}}
	return p
}

func sslPort(secret string) v1alpha1.PortRequest {
	return v1alpha1.PortRequest{Port: intstr.FromInt32(443), Protocol: v1alpha1.ProtocolTCPSSL, CertSecret: secret}
}

func TestDecide(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	teamA := secret("team-a", "tls", map[string]string{SecretKey: "cert-a"})
	cases := map[string]struct {
		reason string
		objs   []client.Object
		ns     string
		pr     v1alpha1.PortRequest
		pool   *clbv1alpha1.PortPool
		want   string
		state  string // of the refusal; "" for none
		msg    string // in the refusal's message
	}{
		"Granted": {
			reason: "a grant naming the id lets the Pod's namespace use it",
			objs:   []client.Object{teamA, namespace("team-a"), config(toNamespaces([]string{"cert-a"}, "team-a"))},
			ns:     "team-a", pr: sslPort("tls"), pool: pool(clusterv1alpha1.ClusterProviderConfigKind),
			want: "cert-a",
		},
		"QUIC": {
			reason: "QUIC takes a certificate too",
			objs:   []client.Object{teamA, namespace("team-a"), config(toNamespaces([]string{"cert-a"}, "team-a"))},
			ns:     "team-a", pr: v1alpha1.PortRequest{Port: intstr.FromInt32(443), Protocol: v1alpha1.ProtocolQUIC, CertSecret: "tls"},
			pool: pool(clusterv1alpha1.ClusterProviderConfigKind), want: "cert-a",
		},
		"NotGranted": {
			reason: "a tenant naming an id granted to another namespace is refused, naming the id and her namespace",
			objs:   []client.Object{secret("team-b", "tls", map[string]string{SecretKey: "cert-a"}), namespace("team-b"), config(toNamespaces([]string{"cert-a"}, "team-a"))},
			ns:     "team-b", pr: sslPort("tls"), pool: pool(clusterv1alpha1.ClusterProviderConfigKind),
			state: v1alpha1.StateNotGranted, msg: "certificate cert-a (certSecret tls) is not granted to namespace team-b",
		},
		"BlanketGrantIsNotACertificateGrant": {
			reason: "a grant of every untagged object (no ids) gives no certificate: they hold private keys",
			objs:   []client.Object{teamA, config(clusterv1alpha1.ObjectGrant{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}})},
			ns:     "team-a", pr: sslPort("tls"), pool: pool(clusterv1alpha1.ClusterProviderConfigKind),
			state: v1alpha1.StateNotGranted, msg: "not granted to namespace team-a",
		},
		"NamespacedConfigOwnNamespace": {
			reason: "through a namespaced ProviderConfig the account is the pool namespace's own: its Pods may use its certificates",
			objs:   []client.Object{secret("tke-port-pools", "tls", map[string]string{SecretKey: "cert-p"})},
			ns:     "tke-port-pools", pr: sslPort("tls"), pool: pool("ProviderConfig"), want: "cert-p",
		},
		"NamespacedConfigOtherNamespace": {
			reason: "another namespace's Pod may not use a certificate of the pool namespace's account",
			objs:   []client.Object{teamA},
			ns:     "team-a", pr: sslPort("tls"), pool: pool("ProviderConfig"),
			state: v1alpha1.StateNotGranted, msg: "certificate cert-a",
		},
		"SecretMissing": {
			reason: "the Secret is read in the Pod's namespace only: one of the same name elsewhere does not count",
			objs:   []client.Object{secret("team-b", "tls", map[string]string{SecretKey: "cert-a"}), config(toNamespaces([]string{"cert-a"}, "team-a"))},
			ns:     "team-a", pr: sslPort("tls"), pool: pool(clusterv1alpha1.ClusterProviderConfigKind),
			state: v1alpha1.StateInvalid, msg: "certSecret team-a/tls not found",
		},
		"KeyMissing": {
			reason: "a Secret without qcloud_cert_id names no certificate",
			objs:   []client.Object{secret("team-a", "tls", map[string]string{"tls.crt": "x"}), config(toNamespaces([]string{"cert-a"}, "team-a"))},
			ns:     "team-a", pr: sslPort("tls"), pool: pool(clusterv1alpha1.ClusterProviderConfigKind),
			state: v1alpha1.StateInvalid, msg: "has no qcloud_cert_id",
		},
		"NonSSLLine": {
			reason: "a PodAddress written by hand with a certSecret on a TCP port is refused (the annotation parser refuses it already)",
			objs:   []client.Object{teamA},
			ns:     "team-a", pr: v1alpha1.PortRequest{Port: intstr.FromInt32(80), Protocol: v1alpha1.ProtocolTCP, CertSecret: "tls"},
			pool: pool(clusterv1alpha1.ClusterProviderConfigKind), state: v1alpha1.StateInvalid, msg: "applies to TCP_SSL and QUIC only",
		},
		"PoolWithoutCertificate": {
			reason: "a pool with no certificate of its own could not take the Pod's back: the next Pod would serve it",
			objs:   []client.Object{teamA, namespace("team-a"), config(toNamespaces([]string{"cert-a"}, "team-a"))},
			ns:     "team-a", pr: sslPort("tls"),
			pool: func() *clbv1alpha1.PortPool {
				p := pool(clusterv1alpha1.ClusterProviderConfigKind)
				p.Spec.ForProvider.Listener = nil
				return p
			}(),
			state: v1alpha1.StateInvalid, msg: "to have a listener.certificate",
		},
		"NoCertSecret": {
			reason: "a port without certSecret takes the pool's certificate; nothing is read",
			ns:     "team-a", pr: sslPort(""), pool: pool(clusterv1alpha1.ClusterProviderConfigKind),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.objs...).Build()
			got, err := Decide(context.Background(), kube, tc.ns, tc.pr, tc.pool)
			var r *Refusal
			switch {
			case tc.state == "" && err != nil:
				t.Fatalf("%s\nDecide: %v", tc.reason, err)
			case tc.state != "" && !errors.As(err, &r):
				t.Fatalf("%s\nDecide: %q, %v; want a %s refusal", tc.reason, got, err, tc.state)
			case r != nil && (r.State != tc.state || !strings.Contains(r.Message, tc.msg)):
				t.Fatalf("%s\nrefusal %s %q; want %s with %q", tc.reason, r.State, r.Message, tc.state, tc.msg)
			}
			if got != tc.want {
				t.Errorf("%s\nDecide: %q, want %q", tc.reason, got, tc.want)
			}
		})
	}
}
