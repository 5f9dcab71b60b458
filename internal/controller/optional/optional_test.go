package optional

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestGet(t *testing.T) {
	key := types.NamespacedName{Namespace: "games", Name: "gs-0"}
	present := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	for name, tc := range map[string]struct {
		objs    []client.Object
		failGet error
		want    bool
		wantErr string
	}{
		"present":   {objs: []client.Object{present}, want: true},
		"absent":    {},
		"forbidden": {failGet: kerrors.NewForbidden(schema.GroupResource{Resource: "pods"}, key.Name, nil), wantErr: "cannot get *v1.Pod games/gs-0"},
	} {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientBuilder().WithObjects(tc.objs...).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if tc.failGet != nil {
						return tc.failGet
					}
					return c.Get(ctx, k, obj, opts...)
				},
			}).Build()
			got, err := Get(context.Background(), kube, key, &corev1.Pod{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil {
					t.Fatalf("got %v, %v; want nil and an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || (got != nil) != tc.want {
				t.Fatalf("got %v, %v; want found %t", got, err, tc.want)
			}
			if tc.want && got.Name != key.Name {
				t.Fatalf("got %s, want %s", got.Name, key.Name)
			}
		})
	}
}
