package podaddress

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

const (
	nodeName = "node-1"
	nodeIP   = "192.168.0.9"
	instance = "ins-abcdefgh"
	nodePort = int32(30080)
)

// nodePortPolicy asks, for the Pods labelled app=game, for port 80 of pool
// web through the NodePort backend, on nodePort np (none when 0).
func nodePortPolicy(np int32) *v1alpha1.PodAddressPolicy {
	pol := &v1alpha1.PodAddressPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np"}}
	pol.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "game"}}
	pol.Spec.Backend = v1alpha1.BackendNodePort
	pr := v1alpha1.PortRequest{Port: intstr.FromInt32(80), Protocol: v1alpha1.ProtocolTCP, Pools: []v1alpha1.PoolRef{{Name: "web"}}}
	if np != 0 {
		pr.NodePort = &np
	}
	pol.Spec.Ports = []v1alpha1.PortRequest{pr}
	return pol
}

// gamePod is Pod team-a/pod-0 selected by nodePortPolicy, running on node
// (with the node's IP) unless node is "".
func gamePod(node string) *corev1.Pod {
	p := pod(podIP)
	p.Annotations = nil
	p.Labels = map[string]string{"app": "game"}
	if node != "" {
		p.Spec.NodeName, p.Status.HostIP = node, nodeIP
	}
	return p
}

// node is node-1, a CVM of providerID.
func node(providerID string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	n.Spec.ProviderID = providerID
	return n
}

// service is a Service of namespace team-a selecting selector, with node
// port np.
func service(selector map[string]string, np int32) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "game"}}
	s.Spec.Selector = selector
	s.Spec.Ports = []corev1.ServicePort{{Port: 80, NodePort: np}}
	return s
}

// TestReconcileNodePort: the NodePort backend registers the Pod's node
// (its CVM instance) and a node port, only a node port a Service of the
// Pod's namespace that selects the Pod has, and only once the Pod runs
// on its node. A RemotePod names its node's instance itself.
func TestReconcileNodePort(t *testing.T) {
	type want struct {
		res     reconcile.Result
		err     string
		state   string
		message string // a part of the PodAddress's message
		writes  []string
	}
	game := map[string]string{"app": "game"}
	qcloud := "qcloud:///800002/" + instance
	registered := []string{"RegisterTargets lb-1 lbl-100//" + instance + ":30080"}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		funcs  func(*atomic.Bool) interceptor.Funcs
		want   want
	}{
		"Bound": {
			reason: "A Pod on its node, with a Service selecting it on the node port, is bound to the node's instance and port.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(nodeName), node(qcloud), service(game, nodePort)},
			want:   want{state: v1alpha1.StateBound, writes: registered},
		},
		"TencentCloudProviderID": {
			reason: "A node's providerID of the tencentcloud form names its instance too.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(nodeName), node("tencentcloud:///ap-guangzhou-3/" + instance), service(game, nodePort)},
			want:   want{state: v1alpha1.StateBound, writes: registered},
		},
		"NoService": {
			reason: "No Service has the node port: a Pod may not name any port of its node (22 included); it waits, and says why.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(nodeName), node(qcloud)},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateWaitBackend,
				message: "no Service of namespace team-a selecting pod-0 has node port 30080"},
		},
		"ServiceOfOtherPods": {
			reason: "A Service with the node port that selects other Pods does not let this one use it.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(nodeName), node(qcloud), service(map[string]string{"app": "web"}, nodePort)},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateWaitBackend,
				message: "has node port 30080"},
		},
		"ServiceOfOtherPort": {
			reason: "A Service selecting the Pod on another node port does not open this one.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(nodeName), node(qcloud), service(game, 30081)},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateWaitBackend,
				message: "has node port 30080"},
		},
		"NotOnANodeYet": {
			reason: "A Pod not scheduled yet waits for its node, with its port allocated.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(""), node(qcloud), service(game, nodePort)},
			want:   want{state: v1alpha1.StateWaitBackend, message: "waiting for the Pod's IP (or its node)"},
		},
		"NoHostIPYet": {
			reason: "A Pod scheduled that the kubelet has not started (no host IP) waits.",
			objs: []client.Object{nodePortPolicy(nodePort), func() *corev1.Pod {
				p := gamePod(nodeName)
				p.Status.HostIP = ""
				return p
			}(), node(qcloud), service(game, nodePort)},
			want: want{state: v1alpha1.StateWaitBackend, message: "waiting for the Pod's IP (or its node)"},
		},
		"NodeNotACVM": {
			reason: "A node whose providerID names no CVM instance cannot be a target: the Pod waits, and says why.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(nodeName), node("aws:///us-east-1a/i-0123"), service(game, nodePort)},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateWaitBackend,
				message: "does not name a CVM instance"},
		},
		"NodeMissing": {
			reason: "A node that cannot be read: the Pod waits, and says why.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(nodeName), service(game, nodePort)},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateWaitBackend,
				message: "cannot get node node-1"},
		},
		"ServicesUnreadable": {
			reason: "The Services that cannot be listed: the Pod waits, and says why.",
			objs:   []client.Object{nodePortPolicy(nodePort), gamePod(nodeName), node(qcloud), service(game, nodePort)},
			funcs: func(armed *atomic.Bool) interceptor.Funcs {
				return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					if _, ok := l.(*corev1.ServiceList); ok && armed.Load() {
						return errBoom
					}
					return c.List(ctx, l, opts...)
				}}
			},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateWaitBackend,
				message: "cannot list the Services of namespace team-a for the NodePort backend: boom"},
		},
		"NoNodePort": {
			reason: "A NodePort request without a node port is Invalid: forwarding to the container port of the node would carry nothing.",
			objs:   []client.Object{nodePortPolicy(0), gamePod(nodeName), node(qcloud), service(game, nodePort)},
			want:   want{state: v1alpha1.StateInvalid, message: "names no nodePort"},
		},
		"RemotePod": {
			reason: "A RemotePod names its node's instance; its WorkloadCluster bounds its node, no Service is looked for.",
			objs: []client.Object{nodePortPolicy(nodePort), workloadCluster(), func() *v1alpha1.RemotePod {
				rp := remotePod()
				rp.Spec.Annotations, rp.Spec.Labels = nil, game
				rp.Spec.Node = &v1alpha1.RemoteNode{Name: nodeName, InternalIP: nodeIP, InstanceID: instance}
				return rp
			}()},
			want: want{state: v1alpha1.StateBound, writes: registered},
		},
		"RemotePodWithoutInstance": {
			reason: "A RemotePod that names no instance of its node waits, and says why.",
			objs: []client.Object{nodePortPolicy(nodePort), workloadCluster(), func() *v1alpha1.RemotePod {
				rp := remotePod()
				rp.Spec.Annotations, rp.Spec.Labels = nil, game
				rp.Spec.Node = &v1alpha1.RemoteNode{Name: nodeName, InternalIP: nodeIP}
				return rp
			}()},
			want: want{res: reconcile.Result{RequeueAfter: waitForPorts}, state: v1alpha1.StateWaitBackend,
				message: "names no spec.node.instanceId"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.funcs, append(tc.objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, portPool())...)
			w.armed.Store(true)
			res, err := w.reconcile(t)
			if got := fmt.Sprint(err); (tc.want.err == "") != (err == nil) || !strings.Contains(got, tc.want.err) {
				t.Errorf("\n%s\nReconcile(...): error %v, want %q", tc.reason, err, tc.want.err)
			}
			if res != tc.want.res {
				t.Errorf("\n%s\nReconcile(...): %+v, want %+v", tc.reason, res, tc.want.res)
			}
			pa := w.podAddress(t)
			if pa == nil {
				t.Fatalf("\n%s\nno PodAddress", tc.reason)
			}
			if pa.Status.State != tc.want.state || !strings.Contains(pa.Status.Message, tc.want.message) {
				t.Errorf("\n%s\nPodAddress %s %q, want %s %q", tc.reason, pa.Status.State, pa.Status.Message, tc.want.state, tc.want.message)
			}
			if diff := cmp.Diff(tc.want.writes, w.cloud.Writes(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\ncloud writes: -want, +got:\n%s", tc.reason, diff)
			}
			// The target recorded is the one registered, so that a deletion
			// deregisters it.
			if tc.want.state == v1alpha1.StateBound {
				b := pa.Status.Bindings[0]
				if b.InstanceID != instance || b.TargetPort != nodePort {
					t.Errorf("\n%s\nrecorded target %s:%d, want %s:%d", tc.reason, b.InstanceID, b.TargetPort, instance, nodePort)
				}
			}
		})
	}
}
