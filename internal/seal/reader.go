package seal

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Reader returns r reading PodAddresses as the manager's cache holds them
// (Transform): records the provider did not seal are dropped. It wraps
// the uncached reads of the API server.
func Reader(r client.Reader, s *Sealer) client.Reader { return &reader{Reader: r, s: s} }

type reader struct {
	client.Reader
	s *Sealer
}

func (r *reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if pa, ok := obj.(*v1alpha1.PodAddress); ok {
		_ = r.s.Trust(pa)
	}
	return nil
}

func (r *reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*v1alpha1.PodAddressList); ok {
		for i := range l.Items {
			_ = r.s.Trust(&l.Items[i])
		}
	}
	return nil
}

// Transform is the manager cache's transform of PodAddresses: what no
// controller may act on is dropped before any reads it.
func (s *Sealer) Transform(pa *v1alpha1.PodAddress) { _ = s.Trust(pa) }
