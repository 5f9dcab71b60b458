package seal

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpmeta "github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

const (
	// SecretName is the Secret, in the provider's namespace, that holds
	// the key. Only the provider (and the platform team) read Secrets
	// there.
	SecretName = "provider-tencentcloud-network-records-key"
	// DefaultNamespace is where the provider runs under Crossplane.
	DefaultNamespace = "crossplane-system"

	keyField = "key"
	keySize  = 32
	// annotationSealedAll on the Secret says that every record written
	// before the key was made carries a seal.
	annotationSealedAll = "network.tencentcloud.crossplane.io/records-sealed"
)

// Load reads the key from the Secret SecretName in namespace, making it
// (a random key) when there is none. c is a direct client: it runs before
// the manager's cache.
func Load(ctx context.Context, c client.Client, namespace string) (*Sealer, error) {
	key := client.ObjectKey{Namespace: namespace, Name: SecretName}
	sec := &corev1.Secret{}
	err := c.Get(ctx, key, sec)
	if kerrors.IsNotFound(err) {
		k := make([]byte, keySize)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SecretName},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{keyField: k},
		}
		err = c.Create(ctx, sec)
		if kerrors.IsAlreadyExists(err) { // another replica made it first
			err = c.Get(ctx, key, sec)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read or make the records key Secret %s: %w", key, err)
	}
	k := sec.Data[keyField]
	if len(k) < keySize {
		return nil, fmt.Errorf("the records key Secret %s must hold a %q of at least %d bytes, got %d", key, keyField, keySize, len(k))
	}
	return New(k, sec.GetAnnotations()[annotationSealedAll] == "true"), nil
}

// A Migrator seals, once, the records written before the key existed (a
// provider upgraded from a version without seals), then marks the Secret
// so that from then on an unsealed record is never the provider's. It
// runs in the leader only: a previous version leading still writes
// unsealed records.
type Migrator struct {
	Sealer    *Sealer
	Kube      client.Client // direct: it writes before the caches matter
	Namespace string
	Log       logging.Logger
}

// NeedLeaderElection: only the leader writes records.
func (m *Migrator) NeedLeaderElection() bool { return true }

// Start seals every record that has none, retrying until it is done or
// ctx ends.
func (m *Migrator) Start(ctx context.Context) error {
	if m.Sealer.SealedAll() {
		return nil
	}
	return wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := m.sealAll(ctx)
		if err != nil {
			m.Log.Info("Cannot seal the records written before sealing began; retrying", "error", err)
			return false, nil
		}
		m.Sealer.sealedAll.Store(true)
		m.Log.Info("Sealed the records written before sealing began", "podAddresses", n)
		return true, nil
	})
}

func (m *Migrator) sealAll(ctx context.Context) (int, error) {
	l := &v1alpha1.PodAddressList{}
	err := m.Kube.List(ctx, l)
	if err != nil && !meta.IsNoMatchError(err) {
		return 0, err
	}
	n := 0
	for i := range l.Items {
		pa := &l.Items[i]
		sealed, err := m.seal(ctx, client.ObjectKeyFromObject(pa))
		if err != nil {
			return n, err
		}
		if sealed {
			n++
		}
	}
	sec := &corev1.Secret{}
	return n, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := m.Kube.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: SecretName}, sec); err != nil {
			return err
		}
		xpmeta.AddAnnotations(sec, map[string]string{annotationSealedAll: "true"})
		return m.Kube.Update(ctx, sec)
	})
}

// seal signs one PodAddress's unsealed records as they are.
func (m *Migrator) seal(ctx context.Context, key client.ObjectKey) (bool, error) {
	sealed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pa := &v1alpha1.PodAddress{}
		if err := m.Kube.Get(ctx, key, pa); err != nil {
			return client.IgnoreNotFound(err)
		}
		switch _, created := pa.GetAnnotations()[v1alpha1.AnnotationCreatedBindings]; {
		case pa.StatusWritten() && pa.Status.Seal == "":
			if err := m.Sealer.Seal(pa); err != nil {
				return err
			}
			sealed = true
			return m.Kube.Status().Update(ctx, pa)
		case !pa.StatusWritten() && created && pa.GetAnnotations()[v1alpha1.AnnotationCreatedSeal] == "":
			m.Sealer.SealCreated(pa, pa.GetCreationTimestamp().Time)
			sealed = true
			return m.Kube.Update(ctx, pa)
		}
		return nil
	})
	return sealed, err
}
