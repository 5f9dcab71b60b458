package testenv

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Token creates the ServiceAccount namespace/name (and its namespace) if
// they are missing and returns a token of it for an hour, as kubectl
// create token does; bound to pod when not nil, as a Pod's projected
// token is, so that TokenReview names the Pod's node.
func (e *Env) Token(ctx context.Context, namespace, name string, pod *corev1.Pod) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !kerrors.IsAlreadyExists(err) {
		return "", err
	}
	if err := e.Client.Create(ctx, sa); err != nil && !kerrors.IsAlreadyExists(err) {
		return "", err
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if pod != nil {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	if err := e.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("cannot create a token of %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}
