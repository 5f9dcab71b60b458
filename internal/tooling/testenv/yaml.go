package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReadYAML decodes every document of a YAML file into unstructured objects.
func ReadYAML(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // G304: paths come from the repository's own examples.
	if err != nil {
		return nil, err
	}
	return DecodeYAML(raw, path)
}

// DecodeYAML decodes every non-empty document of a YAML stream; source
// names the stream in errors.
func DecodeYAML(raw []byte, source string) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("cannot decode %s: %w", source, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
}

// Apply creates the objects of a YAML file, and their namespaces when
// missing. Objects that exist already are left as they are. Each mutate
// function may change an object before it is created, e.g. to point an
// example at a test's own endpoint.
func Apply(ctx context.Context, kube client.Client, path string, mutate ...func(*unstructured.Unstructured)) ([]*unstructured.Unstructured, error) {
	objs, err := ReadYAML(path)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		for _, m := range mutate {
			m(o)
		}
		if ns := o.GetNamespace(); ns != "" {
			err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !kerrors.IsAlreadyExists(err) {
				return nil, err
			}
		}
		if err := kube.Create(ctx, o); err != nil && !kerrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("cannot create %s %s from %s: %w", o.GetKind(), o.GetName(), path, err)
		}
	}
	return objs, nil
}

// ServingAll lets every namespace use a ClusterProviderConfig and every
// untagged cloud object of its account, for suites whose subject is not
// who may use what (test/tenancy is).
func ServingAll(u *unstructured.Unstructured) {
	if u.GetKind() == "ClusterProviderConfig" {
		all := map[string]any{"from": "All"}
		_ = unstructured.SetNestedField(u.Object, map[string]any{"namespaces": all, "grants": []any{map[string]any{"namespaces": all}}}, "spec", "consumers")
	}
}

// WithEndpoint points provider configs at host (the emulator of a test).
func WithEndpoint(host string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if _, found, _ := unstructured.NestedMap(u.Object, "spec", "endpoint"); found {
			_ = unstructured.SetNestedField(u.Object, host, "spec", "endpoint", "host")
		}
	}
}
