package mr

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis"
	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
)

type poolFn func(cfg clients.Config) (clients.Config, error)

func (f poolFn) Client(cfg clients.Config) (clients.Config, error) { return f(cfg) }

func TestConnect(t *testing.T) {
	errTrack := errors.New("unable to create new content in namespace team-a because it is being terminated")
	now := metav1.Now()
	cases := map[string]struct {
		reason    string
		deleting  bool
		consumers *clusterv1alpha1.ConfigConsumers
		track     error
		wantTrack bool
		neverMade bool
		wantErr   string
	}{
		"TracksUse": {
			reason:    "A live resource records its use of the config before anything else.",
			consumers: &clusterv1alpha1.ConfigConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}},
			wantTrack: true,
		},
		"TrackFails": {
			reason:    "A live resource whose use cannot be recorded goes no further.",
			consumers: &clusterv1alpha1.ConfigConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}},
			track:     errTrack,
			wantTrack: true,
			wantErr:   "cannot track provider config usage",
		},
		"DeletingInTerminatingNamespace": {
			reason:    "A resource being deleted is not tracked, so a namespace being deleted (which refuses new usages) still lets it go.",
			deleting:  true,
			consumers: &clusterv1alpha1.ConfigConsumers{Namespaces: clbv1alpha1.NamespaceConsent{From: clbv1alpha1.ConsentAll}},
			track:     errTrack,
		},
		"DeletingNeverCreated": {
			reason:    "A resource being deleted that never reached the cloud goes without its config: refused ones can be deleted.",
			deleting:  true,
			neverMade: true,
		},
		"DeletingImportNotServed": {
			reason:   "A resource being deleted that names a cloud object still needs a config that serves its namespace.",
			deleting: true,
			wantErr:  "ClusterProviderConfig default does not serve namespace team-a",
		},
		"NotServed": {
			reason:    "A namespace the config does not serve gets no cloud client.",
			wantTrack: true,
			wantErr:   "ClusterProviderConfig default does not serve namespace team-a",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			if err := apis.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			cpc := &clusterv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: clusterv1alpha1.ClusterProviderConfigSpec{
				Region:      "ap-guangzhou",
				Credentials: clusterv1alpha1.ClusterProviderCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: clusterv1alpha1.CredentialsSecretRef{Namespace: "crossplane-system", Name: "creds"}},
				Consumers:   tc.consumers,
			}}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "creds"},
				Data: map[string][]byte{"secretId": []byte("AKID1234"), "secretKey": []byte("key")}}
			kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cpc, secret).Build()

			tracked, built := false, false
			c := &Connector[*clbv1alpha1.LoadBalancer, clients.Config]{
				Kube: kube,
				Usage: resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error {
					tracked = true
					return tc.track
				}),
				Pool: poolFn(func(cfg clients.Config) (clients.Config, error) { return cfg, nil }),
				New: func(clients.Config, client.Client) managed.TypedExternalClient[*clbv1alpha1.LoadBalancer] {
					built = true
					return nil
				},
			}
			mg := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "lb"}}
			if tc.deleting {
				mg.SetDeletionTimestamp(&now)
			}
			if !tc.neverMade {
				meta.SetExternalName(mg, "lb-12345678")
			}
			mg.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: clusterv1alpha1.ClusterProviderConfigKind, Name: "default"})
			ext, err := c.Connect(context.Background(), mg)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("%s\nConnect: %v", tc.reason, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("%s\nConnect: got %v, want an error containing %q", tc.reason, err, tc.wantErr)
			}
			if tracked != tc.wantTrack {
				t.Errorf("%s\ntracked: %t, want %t", tc.reason, tracked, tc.wantTrack)
			}
			if want := tc.wantErr == "" && !tc.neverMade; built != want {
				t.Errorf("%s\nexternal client built: %t, want %t", tc.reason, built, want)
			}
			if tc.neverMade {
				obs, err := ext.Observe(context.Background(), mg)
				if err != nil || obs.ResourceExists {
					t.Errorf("%s\nObserve: %+v, %v; want no resource and no error", tc.reason, obs, err)
				}
			}
		})
	}
}
