package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clusterv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/cluster/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

const configWait = 30 * time.Second

func namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "it-"}}
	if err := kube.Create(context.Background(), ns); err != nil {
		t.Fatalf("cannot create namespace: %v", err)
	}
	return ns.Name
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

func providerConfig(ns, name, secretName string) *v1alpha1.ProviderConfig {
	return &v1alpha1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ProviderConfigSpec{
			Region: "ap-guangzhou",
			Credentials: v1alpha1.ProviderCredentials{
				Source:    xpv2.CredentialsSourceSecret,
				SecretRef: v1alpha1.LocalCredentialsSecretRef{Name: secretName},
			},
			Endpoint: &v1alpha1.Endpoint{Host: endpoint, Scheme: "http"},
		},
	}
}

// readyCondition waits until the object's Ready condition has the status
// want and returns it. The object is read by its own key unless one is given.
func readyCondition(t *testing.T, obj interface {
	client.Object
	GetCondition(xpv2.ConditionType) xpv2.Condition
}, want corev1.ConditionStatus, key ...client.ObjectKey,
) xpv2.Condition {
	t.Helper()
	k := client.ObjectKeyFromObject(obj)
	if len(key) > 0 {
		k = key[0]
	}
	var got xpv2.Condition
	err := testenv.Eventually(context.Background(), configWait, func() error {
		if err := kube.Get(context.Background(), k, obj); err != nil {
			return err
		}
		got = obj.GetCondition(xpv2.TypeReady)
		if got.Status != want {
			return errors.Errorf("Ready is %q (%s), want %q", got.Status, got.Message, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestProviderConfigUsageBlocksDeletion(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := kube.Create(ctx, secret(ns, "creds", map[string]string{"secretId": "AKIDexample", "secretKey": "s3cr3t-value"})); err != nil {
		t.Fatal(err)
	}
	pc := providerConfig(ns, "default", "creds")
	if err := kube.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	readyCondition(t, pc, corev1.ConditionTrue)

	// A managed resource that uses the config records a usage it controls.
	// Any object can stand in for the managed resource: the guard only
	// needs a controller reference on the usage.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "user"}}
	if err := kube.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	usage := &v1alpha1.ProviderConfigUsage{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "user-usage"}}
	usage.SetLabels(map[string]string{xpv2.LabelKeyProviderName: pc.Name, xpv2.LabelKeyProviderKind: v1alpha1.ProviderConfigKind})
	usage.SetOwnerReferences([]metav1.OwnerReference{meta.AsController(meta.TypedReferenceTo(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap")))})
	usage.ProviderConfigReference = xpv2.ProviderConfigReference{Kind: v1alpha1.ProviderConfigKind, Name: pc.Name}
	usage.ResourceReference = xpv2.TypedReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name}
	if err := kube.Create(ctx, usage); err != nil {
		t.Fatal(err)
	}
	if err := testenv.Eventually(ctx, configWait, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pc), pc); err != nil {
			return err
		}
		if pc.Status.Users != 1 {
			return errors.Errorf("users = %d, want 1", pc.Status.Users)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if err := kube.Delete(ctx, pc); err != nil {
		t.Fatal(err)
	}
	// The finalizer keeps the config while it is used.
	if err := testenv.Eventually(ctx, configWait, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pc), pc); err != nil {
			return err
		}
		c := pc.GetCondition(providerconfig.TypeTerminating)
		if c.Status != corev1.ConditionTrue || c.Reason != providerconfig.ReasonInUse || !strings.Contains(c.Message, "usages still exist") {
			return errors.Errorf("Terminating = %s/%s %q, want the deletion blocked", c.Status, c.Reason, c.Message)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := kube.Get(ctx, client.ObjectKeyFromObject(pc), pc); err != nil {
		t.Fatalf("config in use was deleted: %v", err)
	}

	// Once the last usage goes, so does the config.
	if err := kube.Delete(ctx, usage); err != nil {
		t.Fatal(err)
	}
	if err := testenv.Eventually(ctx, configWait, func() error {
		err := kube.Get(ctx, client.ObjectKeyFromObject(pc), pc)
		if kerrors.IsNotFound(err) {
			return nil
		}
		return errors.Errorf("config still exists (err %v)", err)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestProviderConfigSecretMissingKey(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	s := secret(ns, "creds", map[string]string{"secretId": "AKIDexample"})
	if err := kube.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	pc := providerConfig(ns, "missing-key", "creds")
	if err := kube.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	c := readyCondition(t, pc, corev1.ConditionFalse)
	want := `secret ` + ns + `/creds has no key "secretKey"`
	if !strings.Contains(c.Message, want) {
		t.Errorf("Ready message = %q, want it to contain %q", c.Message, want)
	}

	// The same message reaches the user as a warning event.
	if err := testenv.Eventually(ctx, configWait, func() error {
		l := &corev1.EventList{}
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Name == pc.Name && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, want) {
				return nil
			}
		}
		return errors.Errorf("no warning event naming the secret and key among %d events", len(l.Items))
	}); err != nil {
		t.Error(err)
	}

	// Fixing the Secret is noticed without touching the config.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
		t.Fatal(err)
	}
	s.Data["secretKey"] = []byte("s3cr3t-value")
	if err := kube.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	readyCondition(t, pc, corev1.ConditionTrue)
}

func TestProviderConfigNeverShowsSecretValues(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	const value = "do-not-print-this-value"
	// A whitespace-corrupted key is an error whose message must not echo it.
	if err := kube.Create(ctx, secret(ns, "creds", map[string]string{"secretId": "AKIDexample", "secretKey": value + " trailing junk"})); err != nil {
		t.Fatal(err)
	}
	pc := providerConfig(ns, "leaky", "creds")
	if err := kube.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	c := readyCondition(t, pc, corev1.ConditionFalse)
	if !strings.Contains(c.Message, `key "secretKey"`) {
		t.Errorf("Ready message = %q, want it to name the key", c.Message)
	}
	if strings.Contains(c.Message, value) {
		t.Errorf("Ready message leaks the secret value: %q", c.Message)
	}
}

func TestClusterProviderConfig(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cpc := &clusterv1alpha1.ClusterProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + ns},
		Spec: clusterv1alpha1.ClusterProviderConfigSpec{
			Region: "ap-shanghai",
			Credentials: clusterv1alpha1.ClusterProviderCredentials{
				Source:    xpv2.CredentialsSourceSecret,
				SecretRef: clusterv1alpha1.CredentialsSecretRef{Name: "creds", Namespace: ns},
			},
		},
	}
	if err := kube.Create(ctx, cpc); err != nil {
		t.Fatal(err)
	}
	c := readyCondition(t, cpc, corev1.ConditionFalse)
	if want := "secret " + ns + "/creds does not exist"; !strings.Contains(c.Message, want) {
		t.Errorf("Ready message = %q, want it to contain %q", c.Message, want)
	}
	if err := kube.Create(ctx, secret(ns, "creds", map[string]string{"secretId": "AKIDexample", "secretKey": "k", "token": "sts"})); err != nil {
		t.Fatal(err)
	}
	readyCondition(t, cpc, corev1.ConditionTrue)
}

func TestProviderConfigValidation(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cases := map[string]func(*v1alpha1.ProviderConfig){
		"BadRegion":      func(pc *v1alpha1.ProviderConfig) { pc.Spec.Region = "Guangzhou" },
		"BadScheme":      func(pc *v1alpha1.ProviderConfig) { pc.Spec.Endpoint.Scheme = "ftp" },
		"EmptySecretRef": func(pc *v1alpha1.ProviderConfig) { pc.Spec.Credentials.SecretRef.Name = "" },
		"BadSource":      func(pc *v1alpha1.ProviderConfig) { pc.Spec.Credentials.Source = "Environment" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			pc := providerConfig(ns, strings.ToLower(name), "creds")
			mutate(pc)
			err := kube.Create(ctx, pc)
			if !kerrors.IsInvalid(err) {
				t.Errorf("Create: got %v, want an Invalid error from the API server", err)
			}
		})
	}
}
