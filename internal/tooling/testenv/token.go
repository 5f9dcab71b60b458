package testenv

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
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

// WaitAllowed waits until the API server's authorizer lets user (in
// groups) do what ra says: RBAC follows new bindings a moment later.
func (e *Env) WaitAllowed(ctx context.Context, user string, groups []string, ra authorizationv1.ResourceAttributes) error {
	return Eventually(ctx, time.Minute, func() error {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &ra}}
		if err := e.Client.Create(ctx, sar); err != nil {
			return err
		}
		if !sar.Status.Allowed {
			return fmt.Errorf("%s may not %s %s/%s %q yet: %s", user, ra.Verb, ra.Resource, ra.Subresource, ra.Name, sar.Status.Reason)
		}
		return nil
	})
}
