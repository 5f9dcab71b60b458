package podaddress

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// want is one address a PodAddress needs: a container port in a pool,
// and what its targets are (backend, and the hostPort or nodePort it
// uses).
type want struct {
	allocation.Port
	backend  string
	hostPort int32
	nodePort int32
}

// wants resolves a PodAddress's port requests against its Pod. A port
// whose backend has no port to forward to (HostPort without a hostPort,
// NodePort without a nodePort) is an error: forwarding to the node's
// container port instead would look bound and carry nothing.
func wants(pa *v1alpha1.PodAddress, pod *corev1.Pod) ([]want, error) {
	var out []want
	prs, err := portRequests(pa, pod)
	if err != nil {
		return nil, err
	}
	for _, pr := range prs {
		port, proto, hostPort, err := podannotation.ResolvePort(pod, pr)
		if err != nil {
			return nil, err
		}
		backend := cmp.Or(pr.Backend, pa.Spec.Backend, v1alpha1.BackendPodIP)
		var nodePort int32
		if pr.NodePort != nil {
			nodePort = *pr.NodePort
		}
		switch {
		case backend == v1alpha1.BackendHostPort && hostPort == 0:
			return nil, errors.Errorf("port %d/%s uses the HostPort backend, but no container port %d/%s of the Pod has a hostPort", port, proto, port, proto)
		case backend == v1alpha1.BackendNodePort && nodePort == 0:
			return nil, errors.Errorf("port %d/%s uses the NodePort backend, but its request names no nodePort", port, proto)
		}
		for _, p := range pr.Pools {
			out = append(out, want{
				Port:    allocation.Port{Pool: p.Key(pa.GetNamespace()), ContainerPort: port, Protocol: proto, SamePort: pr.SamePortAcrossPools},
				backend: backend, hostPort: hostPort, nodePort: nodePort,
			})
		}
	}
	return out, nil
}

// targetPort is the port w's targets listen on: the container port, or
// the hostPort or nodePort its backend forwards to.
func (w want) targetPort() int32 {
	switch w.backend {
	case v1alpha1.BackendHostPort:
		return w.hostPort
	case v1alpha1.BackendNodePort:
		return w.nodePort
	}
	return w.ContainerPort
}

// ports are the slots ws hold.
func ports(ws []want) []allocation.Port {
	out := make([]allocation.Port, len(ws))
	for i, w := range ws {
		out[i] = w.Port
	}
	return out
}

// setTargets records the target of every binding that has none, and
// returns the bindings whose recorded target is no longer the Pod's (to be
// deregistered first) and whether it recorded any. ds[i] is where ws[i]
// forwards to.
func setTargets(pa *v1alpha1.PodAddress, ws []want, ds []dest) (stale []v1alpha1.PortBinding, recorded bool) {
	for i := range pa.Status.Bindings {
		b := &pa.Status.Bindings[i]
		j := slices.IndexFunc(ws, func(w want) bool { return w.Of(*b) })
		if j < 0 {
			continue // not asked for any more; bind drops it first
		}
		d := ds[j]
		if b.TargetIP == d.ip && b.TargetPort == d.port && b.InstanceID == d.instance {
			continue
		}
		if targets.Recorded(*b) {
			stale = append(stale, *b)
			continue
		}
		b.TargetIP, b.TargetPort, b.InstanceID, b.Address = d.ip, d.port, d.instance, ""
		recorded = true
	}
	return stale, recorded
}

// A dest is where the targets of one want forward to.
type dest struct {
	ip       string
	instance string // the CVM instance, for the NodePort backend
	port     int32
}

// dests returns where each of ws forwards to, by its own backend, and
// whether all of them are known yet (the Pod has its IP, or its node).
func (r *Reconciler) dests(ctx context.Context, pod *corev1.Pod, ws []want) ([]dest, bool, error) {
	ds := make([]dest, len(ws))
	instance := ""
	for i, w := range ws {
		switch w.backend {
		case v1alpha1.BackendHostPort:
			if pod.Status.HostIP == "" {
				return nil, false, nil
			}
			ds[i] = dest{ip: pod.Status.HostIP, port: w.hostPort}
		case v1alpha1.BackendNodePort:
			if pod.Spec.NodeName == "" {
				return nil, false, nil
			}
			if ok, err := r.nodePortOfPod(ctx, pod, w.nodePort); err != nil || !ok {
				return nil, false, err
			}
			if instance == "" {
				id, err := r.nodeInstance(ctx, pod)
				if err != nil {
					return nil, false, err
				}
				instance = id
			}
			ds[i] = dest{ip: pod.Status.HostIP, instance: instance, port: w.nodePort}
		default:
			if pod.Status.PodIP == "" {
				return nil, false, nil
			}
			ds[i] = dest{ip: pod.Status.PodIP, port: w.ContainerPort}
		}
	}
	return ds, true, nil
}

// instanceID is the CVM instance of a TKE node's providerID, e.g.
// qcloud:///800002/ins-abcdefgh or tencentcloud:///ap-guangzhou-3/ins-abcdefgh.
func instanceID(providerID string) (string, error) {
	i := strings.LastIndex(providerID, "/")
	id := providerID[i+1:]
	if !strings.HasPrefix(id, "ins-") {
		return "", errors.Errorf("providerID %q does not name a CVM instance (ins-…); the NodePort backend needs one", providerID)
	}
	return id, nil
}

func address(b v1alpha1.PortBinding) string {
	if len(b.VIPs) == 0 {
		return ""
	}
	if b.EndPort > 0 {
		return fmt.Sprintf("%s:%d-%d", b.VIPs[0], b.Port, b.EndPort)
	}
	return fmt.Sprintf("%s:%d", b.VIPs[0], b.Port)
}

func addresses(bs []v1alpha1.PortBinding) string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		out = append(out, fmt.Sprintf("%s/%d→%s", b.Protocol, b.ContainerPort, b.Address))
	}
	return strings.Join(out, ", ")
}

// deregister removes every recorded target of pa; done is false while
// the cloud call, or an earlier one for pa (a registration sent before the
// Pod was deleted), runs in the background. With record, the status then
// says that nothing is registered; otherwise the binder keeps its answer
// until a reconcile that read it ends well (targets.Binder.Settle).
func (r *Reconciler) deregister(ctx context.Context, pa *v1alpha1.PodAddress, record bool) (bool, error) {
	key := client.ObjectKeyFromObject(pa)
	ops := targets.Deregister(pa.Status.Bindings)
	if len(ops) == 0 {
		// Nothing recorded, so nothing was sent; still, never let go while
		// an operation for pa runs.
		return r.cloud.binder.Idle(key), nil
	}
	if ans := r.cloud.binder.Send(ctx, pa, ops); ans.State != targets.Done {
		return false, ans.Err
	}
	if !record {
		return true, nil
	}
	for i := range pa.Status.Bindings {
		targets.Clear(&pa.Status.Bindings[i])
	}
	// Record that nothing is registered any more, so a restart does not
	// deregister again.
	if err := r.writeStatus(ctx, pa); err != nil {
		return false, errors.Wrap(err, "cannot record the deregistered targets")
	}
	return true, nil
}
