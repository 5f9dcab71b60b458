package xpcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side apply manager of what Install applies.
const FieldOwner = "xpcluster"

// InstallOptions say where the image goes and how Crossplane runs.
type InstallOptions struct {
	Options
	// Registry is the registry (host:port) the image is pushed to
	// and the kubelet pulls from.
	Registry string
	// Timeout bounds the retries of each apply; 0 is one minute.
	Timeout time.Duration
}

// Install pushes Crossplane's image, renders the chart for the node,
// creates the namespace and server-side applies every object in the
// chart's install order, and returns them. Applying again converges;
// Secrets that `core init` fills keep their data, which Install does not
// apply. It does not wait for the Deployments.
func Install(ctx context.Context, cfg *rest.Config, o InstallOptions) ([]*unstructured.Unstructured, error) {
	if o.Registry == "" {
		return nil, errors.New("a registry is required")
	}
	kube, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	image, err := PushImage(ctx, o.Registry)
	if err != nil {
		return nil, err
	}
	objs, err := Render(ctx, image, o.Options)
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	// The chart leaves its namespace to `helm install --create-namespace`.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	err = retry(ctx, timeout, func() error {
		if err := kube.Create(ctx, ns); err != nil && !kerrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", Namespace, err)
	}
	for _, u := range objs {
		err := retry(ctx, timeout, func() error {
			return kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
		})
		if err != nil {
			return nil, fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return objs, nil
}

// retry calls fn every half second until it succeeds, ctx ends or timeout
// passes; errors that another try cannot fix end it at once.
func retry(ctx context.Context, timeout time.Duration, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		err := fn()
		if err == nil || kerrors.IsInvalid(err) || kerrors.IsForbidden(err) || kerrors.IsBadRequest(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still failing after %s: %w", timeout, err)
		case <-t.C:
		}
	}
}
