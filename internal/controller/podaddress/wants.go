package podaddress

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
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
	// certSecret names the Secret of the port's certificate; certID is
	// that certificate once planFor decided the Pod may have it.
	certSecret string
	certID     string
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
				backend: backend, hostPort: hostPort, nodePort: nodePort, certSecret: pr.CertSecret,
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
		ip := d.ipFor(*b)
		if b.TargetIP == ip && b.TargetPort == d.port && b.InstanceID == d.instance {
			continue
		}
		if targets.Recorded(*b) {
			stale = append(stale, *b)
			continue
		}
		b.TargetIP, b.TargetPort, b.InstanceID, b.Address = ip, d.port, d.instance, ""
		recorded = true
	}
	return stale, recorded
}

// A dest is where the targets of one want forward to.
type dest struct {
	ip       string // the IPv4 address (the one address the NodePort backend has)
	ip6      string // the IPv6 address, if the Pod (or its node, for HostPort) has one
	instance string // the CVM instance, for the NodePort backend
	port     int32
}

// ipFor is the address d forwards to from b's load balancer: an
// IPv6FullChain load balancer takes IPv6 targets only; an IPv4 or IPv6
// NAT64 one (translating its IPv6 VIP), IPv4 ones. Empty when the Pod has
// no address of that family.
func (d dest) ipFor(b v1alpha1.PortBinding) string {
	if b.IPv6Mode == clb.IPv6ModeFullChain {
		return d.ip6
	}
	return d.ip
}

// familyGap explains why some binding of pa cannot be given a target yet:
// its load balancer forwards to an address family its destination lacks
// (e.g. an IPv6FullChain load balancer and a Pod with no IPv6 address).
// Empty when every binding has its target.
func familyGap(pa *v1alpha1.PodAddress, ws []want, ds []dest) string {
	for _, b := range pa.Status.Bindings {
		j := slices.IndexFunc(ws, func(w want) bool { return w.Of(b) })
		if j < 0 || ds[j].ipFor(b) != "" {
			continue
		}
		if b.IPv6Mode == clb.IPv6ModeFullChain {
			return fmt.Sprintf("load balancer %s is IPv6FullChain and forwards to IPv6 addresses only: waiting for the Pod's IPv6 address (status.podIPs; the %s backend)", b.LoadBalancerID, ws[j].backend)
		}
		return fmt.Sprintf("load balancer %s forwards to IPv4 addresses only: waiting for the Pod's IPv4 address (status.podIPs; the %s backend)", b.LoadBalancerID, ws[j].backend)
	}
	return ""
}

// byFamily splits addresses into the first IPv4 and the first IPv6 one.
func byFamily(ips ...string) (v4, v6 string) {
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil:
		case a.Is4() || a.Is4In6():
			v4 = cmp.Or(v4, a.Unmap().String())
		default:
			v6 = cmp.Or(v6, a.String())
		}
	}
	return v4, v6
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
			hostIPs := []string{pod.Status.HostIP}
			for _, h := range pod.Status.HostIPs {
				hostIPs = append(hostIPs, h.IP)
			}
			v4, v6 := byFamily(hostIPs...)
			ds[i] = dest{ip: v4, ip6: v6, port: w.hostPort}
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
			podIPs := []string{pod.Status.PodIP}
			for _, p := range pod.Status.PodIPs {
				podIPs = append(podIPs, p.IP)
			}
			v4, v6 := byFamily(podIPs...)
			ds[i] = dest{ip: v4, ip6: v6, port: w.ContainerPort}
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
	return podannotation.FormatAddress(b.VIPs[0], b.Port, b.EndPort)
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
