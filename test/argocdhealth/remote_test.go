package argocdhealth

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocdhealth"
)

const remoteNS = "health-remote"

// remoteObjects: a workload cluster's namespace with a pool and the
// WorkloadCluster whose CIDRs hold the Pod IPs. remotePods:
// the RemotePods its agent would write: one bound, one waiting for its Pod
// IP, one whose request cannot be served (a HostPort port without a
// hostPort).
const remoteObjects = `
apiVersion: v1
kind: Namespace
metadata: {name: health-remote}
---
apiVersion: clb.tencentcloud.m.crossplane.io/v1alpha1
kind: LoadBalancer
metadata: {name: remote, namespace: health-remote}
spec:
  forProvider: {type: OPEN}
---
apiVersion: clb.tencentcloud.m.crossplane.io/v1alpha1
kind: PortPool
metadata: {name: remote, namespace: health-remote}
spec:
  forProvider: {loadBalancerIdRefs: [{name: remote}], startPort: 30400, endPort: 30409}
---
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: WorkloadCluster
metadata: {name: idc-1, namespace: health-remote}
spec: {podCIDRs: [10.60.0.0/24], nodeCIDRs: [10.0.0.0/24]}
`

// remotePods are applied once the pool is ready.
const remotePods = `
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: RemotePod
metadata: {name: game.room-0, namespace: health-remote}
spec:
  cluster: idc-1
  podNamespace: game
  podName: room-0
  podUID: 6f1c1a52-0000-4000-8000-000000000001
  annotations: {network.tencentcloud.crossplane.io/ports: "7777 remote"}
  containers: [{name: server, ports: [{containerPort: 7777, protocol: TCP}]}]
  readinessGates: [network.tencentcloud.crossplane.io/address-ready]
  podIP: 10.60.0.1
  ready: true
---
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: RemotePod
metadata: {name: game.room-1, namespace: health-remote}
spec:
  cluster: idc-1
  podNamespace: game
  podName: room-1
  podUID: 6f1c1a52-0000-4000-8000-000000000002
  annotations: {network.tencentcloud.crossplane.io/ports: "7777 remote"}
  containers: [{name: server, ports: [{containerPort: 7777, protocol: TCP}]}]
---
apiVersion: network.tencentcloud.m.crossplane.io/v1alpha1
kind: RemotePod
metadata: {name: game.room-2, namespace: health-remote}
spec:
  cluster: idc-1
  podNamespace: game
  podName: room-2
  podUID: 6f1c1a52-0000-4000-8000-000000000003
  annotations: {network.tencentcloud.crossplane.io/ports: "7777 remote", network.tencentcloud.crossplane.io/backend: HostPort}
  containers: [{name: server, ports: [{containerPort: 7777, protocol: TCP}]}]
  readinessGates: [network.tencentcloud.crossplane.io/address-ready]
  podIP: 10.60.0.3
`

// TestHealthOfRemotePods assesses RemotePods at the moments a user sees:
// the Pod told its address, waiting for its Pod IP, and told that its
// request cannot be served.
func TestHealthOfRemotePods(t *testing.T) {
	startProvider(t)
	apply(t, remoteObjects)
	capture(t, groupCLB, "PortPool", remoteNS, "remote", "remote-ready", argocdhealth.Healthy, poolReady)
	apply(t, remotePods)
	capture(t, groupNetwork, "RemotePod", remoteNS, "game.room-0", "bound", argocdhealth.Healthy, addressOf(v1alpha1.StateBound))
	capture(t, groupNetwork, "RemotePod", remoteNS, "game.room-1", "waiting-for-pod-ip", argocdhealth.Progressing, addressOf(v1alpha1.StateWaitBackend))
	capture(t, groupNetwork, "RemotePod", remoteNS, "game.room-2", "invalid-request", argocdhealth.Degraded, func(u *unstructured.Unstructured) error {
		if err := addressOf(v1alpha1.StateInvalid)(u); err != nil {
			return err
		}
		if _, ok, _ := unstructured.NestedMap(u.Object, "status", "warning"); !ok {
			return errors.New("no warning yet")
		}
		return nil
	})
}

// addressOf is the moment the RemotePod's PodAddress is in state want and,
// unless it is waiting, the RemotePod was told.
func addressOf(want string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		pa := &v1alpha1.PodAddress{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, pa); err != nil {
			return err
		}
		if pa.Status.State != want {
			return errors.Errorf("PodAddress state %q (%s), want %s", pa.Status.State, pa.Status.Message, want)
		}
		cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var told []any
		var healthy map[string]any
		for _, c := range cs {
			m, _ := c.(map[string]any)
			switch m["type"] {
			case podannotation.ConditionAddressReady:
				told = append(told, m)
			case string(v1alpha1.RemotePodHealthy):
				healthy = m
			}
		}
		// The RemotePod's own Healthy is there from the first status
		// write, so that Argo CD's built-in check never reads a RemotePod
		// without status as Healthy.
		if healthy == nil {
			return errors.Errorf("no Healthy condition yet: %v", cs)
		}
		if want == v1alpha1.StateWaitBackend {
			if len(told) > 0 {
				return errors.Errorf("told %v while it waits for its IP", told)
			}
			return nil
		}
		for _, c := range told {
			m, _ := c.(map[string]any)
			if m["status"] == "True" && want == v1alpha1.StateBound || m["reason"] == want {
				return nil
			}
		}
		return errors.Errorf("not told %s yet: %v", want, cs)
	}
}
