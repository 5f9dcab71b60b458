package benchpeer

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/testenv"
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
var PoolGVK = schema.GroupVersionKind{Group: "networking.cloud.tencent.com", Version: "v1alpha1", Kind: "CLBPortPool"}

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
	u.SetGroupVersionKind(PoolGVK)
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

// CreateLoadBalancers makes n public load balancers in the emulator at
// endpoint for the peer's pool, as an operator would before, and waits
// until they can be used.
func CreateLoadBalancers(ctx context.Context, endpoint, region, secretID, secretKey string, n int) ([]string, error) {
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint, cpf.HttpProfile.Scheme = endpoint, "http"
	c, err := clb.NewClient(common.NewCredential(secretID, secretKey), region, cpf)
	if err != nil {
		return nil, err
	}
	c.WithHttpTransport(http.DefaultTransport)
	var ids []string
	for len(ids) < n {
		req := clb.NewCreateLoadBalancerRequest()
		req.LoadBalancerType = common.StringPtr("OPEN")
		req.LoadBalancerName = common.StringPtr(fmt.Sprintf("peer-bench-%02d", len(ids)))
		req.Number = common.Uint64Ptr(uint64(min(n-len(ids), 20)))
		var resp *clb.CreateLoadBalancerResponse
		// Retried: the realistic profile throttles at 20 calls per second.
		err := testenv.Eventually(ctx, time.Minute, func() error {
			var err error
			resp, err = c.CreateLoadBalancerWithContext(ctx, req)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, id := range resp.Response.LoadBalancerIds {
			ids = append(ids, *id)
		}
	}
	// Created load balancers are usable once DescribeLoadBalancers says
	// Status 1 (the creation task is done).
	err = testenv.Eventually(ctx, time.Minute, func() error {
		req := clb.NewDescribeLoadBalancersRequest()
		req.LoadBalancerIds = common.StringPtrs(ids)
		resp, err := c.DescribeLoadBalancersWithContext(ctx, req)
		if err != nil {
			return err
		}
		var pending []string
		for _, lb := range resp.Response.LoadBalancerSet {
			if lb.Status == nil || *lb.Status != 1 {
				pending = append(pending, *lb.LoadBalancerId)
			}
		}
		if len(pending) > 0 || len(resp.Response.LoadBalancerSet) != len(ids) {
			return fmt.Errorf("load balancers not ready: %s", strings.Join(pending, ","))
		}
		return nil
	})
	return ids, err
}
