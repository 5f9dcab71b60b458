package workloadcluster

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// The agent's token is minted here, not by the agent: a Role cannot bound
// the expirationSeconds of a TokenRequest, so an agent allowed to mint its
// own tokens could mint them for as long as the API server allows. The
// provider mints them with the cluster's spec.agentTokenLifetime and hands
// them over in a Secret only the agent and bootstrap identities may read.

// Annotations of the token Secret: when its token was minted and for how
// long, so that it is renewed without parsing it, and minted again when
// the spec's lifetime changes.
const (
	annotationTokenIssued   = "network.tencentcloud.crossplane.io/token-issued"
	annotationTokenLifetime = "network.tencentcloud.crossplane.io/token-lifetime"
)

// tokenSecret is the Secret of wc's agent token as the provider keeps it,
// without its data.
func tokenSecret(wc *v1alpha1.WorkloadCluster) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: wc.Namespace, Name: v1alpha1.AgentTokenSecret(wc.Name),
		Labels: map[string]string{v1alpha1.LabelWorkloadCluster: wc.Name}}, Type: corev1.SecretTypeOpaque}
}

// ensureToken keeps a token of the agent's ServiceAccount in the token
// Secret, minted again once half its life has passed (the agent takes
// the new one at two thirds of the old one's), and returns when to look
// again.
func (r *Reconciler) ensureToken(ctx context.Context, wc *v1alpha1.WorkloadCluster) (time.Duration, error) {
	life := wc.Spec.TokenLifetime()
	now := r.clock()
	got := &corev1.Secret{}
	err := r.api.Get(ctx, types.NamespacedName{Namespace: wc.Namespace, Name: v1alpha1.AgentTokenSecret(wc.Name)}, got)
	switch {
	case kerrors.IsNotFound(err):
		got = nil
	case err != nil:
		return 0, errors.Wrap(err, "cannot get the agent's token Secret")
	default:
		issued, ierr := time.Parse(time.RFC3339, got.Annotations[annotationTokenIssued])
		renew := issued.Add(life / 2)
		if ierr == nil && got.Annotations[annotationTokenLifetime] == life.String() && len(got.Data[v1alpha1.AgentTokenKey]) > 0 && now.Before(renew) {
			return renew.Sub(now), nil
		}
	}
	secs := int64(life / time.Second)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: wc.Namespace, Name: v1alpha1.AgentServiceAccount(wc.Name)}}
	if err := r.kube.SubResource("token").Create(ctx, sa, tr); err != nil {
		return 0, errors.Wrapf(err, "cannot mint a token of ServiceAccount %s", sa.Name)
	}
	want := tokenSecret(wc)
	if got != nil {
		want = got.DeepCopy()
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[annotationTokenIssued] = now.UTC().Format(time.RFC3339)
	want.Annotations[annotationTokenLifetime] = life.String()
	want.Data = map[string][]byte{v1alpha1.AgentTokenKey: []byte(tr.Status.Token)}
	if got == nil {
		if err := controllerutil.SetControllerReference(wc, want, r.kube.Scheme()); err != nil {
			return 0, err
		}
		err = r.kube.Create(ctx, want)
	} else {
		err = r.kube.Update(ctx, want)
	}
	return life / 2, errors.Wrap(err, "cannot hand the agent its token")
}
