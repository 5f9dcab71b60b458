package benchpeer

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// The peer's Pod annotations: the first turns the port mapping on, the
// second lists "<port> <protocol> <pool>" lines; the peer writes the
// result and "Ready" into the other two.
const (
	AnnotationEnable  = "networking.cloud.tencent.com/enable-clb-port-mapping"
	AnnotationMapping = "networking.cloud.tencent.com/clb-port-mapping"
	AnnotationStatus  = "networking.cloud.tencent.com/clb-port-mapping-status"
	AnnotationResult  = "networking.cloud.tencent.com/clb-port-mapping-result"
)

// PoolGVK is the peer's port pool kind (cluster scoped).
func PoolGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "networking.cloud.tencent.com", Version: "v1alpha1", Kind: "CLBPortPool"}
}

// NodeName is the node the benchmark's Pods run on for the peer. The peer
// binds only Pods on a TKE native or serverless ("super") node and looks
// the node up, so the benchmark creates one labelled as serverless.
const NodeName = "bench-eklet"

// Node is that node.
func Node() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName,
		Labels: map[string]string{"node.kubernetes.io/instance-type": "eklet"}}}
}

// PodAnnotations asks the peer for one TCP mapping of port from pool.
func PodAnnotations(port int, pool string) map[string]string {
	return map[string]string{AnnotationEnable: "true", AnnotationMapping: fmt.Sprintf("%d TCP %s", port, pool)}
}

// Published tells whether the peer has published the Pod's address (the
// moment a game server can read it through the downward API).
func Published(p *corev1.Pod) bool {
	return p.Annotations[AnnotationStatus] == "Ready" && p.Annotations[AnnotationResult] != ""
}

// PolicyFor maps the provider's allocation policies to the peer's
// nearest: LeastUsed spreads like its Uniform, InOrder is the same.
func PolicyFor(ours string) string {
	if ours == "InOrder" {
		return "InOrder"
	}
	return "Uniform"
}

// Pool is a CLBPortPool over existing load balancers lbIDs, with ports
// [start, end] (one listener per port and Pod).
func Pool(name string, lbIDs []string, start, end int, policy string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(PoolGVK())
	u.SetName(name)
	ids := make([]any, len(lbIDs))
	for i, id := range lbIDs {
		ids[i] = id
	}
	u.Object["spec"] = map[string]any{
		"startPort":               int64(start),
		"endPort":                 int64(end),
		"lbPolicy":                policy,
		"exsistedLoadBalancerIDs": ids,
	}
	return u
}

// PoolActive tells whether the peer has taken the pool into use.
func PoolActive(u *unstructured.Unstructured) bool {
	state, _, _ := unstructured.NestedString(u.Object, "status", "state")
	return state == "Active"
}

// Install installs the peer's CRDs from the source copy Build made in dir
// and its node, and waits until the CRDs are served.
func Install(ctx context.Context, kube client.Client, dir string) error {
	for _, f := range CRDFiles(dir) {
		objs, err := testenv.Apply(ctx, kube, f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			err := testenv.Eventually(ctx, time.Minute, func() error {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := kube.Get(ctx, client.ObjectKey{Name: o.GetName()}, crd); err != nil {
					return err
				}
				for _, c := range crd.Status.Conditions {
					if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
						return nil
					}
				}
				return errors.New("CRD " + o.GetName() + " not established")
			})
			if err != nil {
				return err
			}
		}
	}
	if err := kube.Create(ctx, Node()); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
