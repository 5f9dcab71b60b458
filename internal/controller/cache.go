package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"

	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/intern"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podcache"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
)

// CacheOptions are the manager cache's options: every object is kept
// without what no controller reads, and PodAddresses without records the
// provider did not seal (sealer). syncPeriod (nil: controller-runtime's
// default) is how often every cached object is re-listed.
func CacheOptions(syncPeriod *time.Duration, sealer *seal.Sealer) cache.Options {
	// One table for the kinds whose objects share strings.
	strs := intern.New()
	strip := cache.TransformStripManagedFields()
	return cache.Options{
		SyncPeriod: syncPeriod,
		// Nothing reads managed fields; at 10k Pods and PodAddresses
		// they are a large share of the cache. PodAddresses, one per Pod
		// too, are kept whole with shared strings interned. They are
		// handled here rather than in ByObject, which only takes kinds
		// the API server serves when the manager starts: under safe-start
		// the provider starts before its CRDs are active.
		DefaultTransform: func(in any) (any, error) {
			if pa, ok := in.(*networkv1alpha1.PodAddress); ok {
				sealer.Transform(pa)
				internPA(strs, pa)
				return pa, nil
			}
			return strip(in)
		},
		// Only built-in kinds (TestCacheOptionsByObjectBuiltIn).
		ByObject: map[client.Object]cache.ByObject{
			// The safe-start gate watches every CRD of the cluster; it
			// needs their names and conditions, not their schemas.
			&apiextensionsv1.CustomResourceDefinition{}: {Transform: customresourcesgate.TransformStripCRDSchema},
			// Every Pod of the cluster is cached; the controllers read a
			// few of its fields (podcache.Slim lists them).
			&corev1.Pod{}: {Transform: podcache.Transform(strs)},
		},
	}
}
