package podaddress

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

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
				Port:    allocation.Port{Pool: p.Key(pa.GetNamespace()), ContainerPort: port, Protocol: proto},
				backend: backend, hostPort: hostPort, nodePort: nodePort,
			})
		}
	}
	return out, nil
}

// ports are the slots ws hold.
func ports(ws []want) []allocation.Port {
	out := make([]allocation.Port, len(ws))
	for i, w := range ws {
		out[i] = w.Port
	}
	return out
}

// bind brings a live Pod's PodAddress to Bound: allocate what is missing,
// record it, register the targets, tell the Pod.
func (r *Reconciler) bind(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask) (reconcile.Result, error) {
	ws, err := wants(pa, pod)
	if err == nil {
		err = r.pools.Servable(ctx, pa, ports(ws))
	}
	if err != nil {
		return r.invalid(ctx, pa, pod, a, err)
	}
	key := client.ObjectKeyFromObject(pa)

	// Ports no longer asked for go back once their targets are gone.
	// So do bindings whose slot the allocator gives to someone else, and
	// those on a load balancer that left their pool: they are given a new
	// address below.
	var keep, drop, moved []v1alpha1.PortBinding
	for _, b := range pa.Status.Bindings {
		asked := false
		for _, w := range ws {
			asked = asked || w.Of(b)
		}
		switch {
		case asked && r.pools.HasLeft(ctx, b):
			moved = append(moved, b)
			drop = append(drop, b)
		case asked && r.pools.Owns(ctx, key, b):
			keep = append(keep, b)
		default:
			drop = append(drop, b)
		}
	}
	if len(drop) > 0 {
		done, err := r.binder.Run(ctx, pa, targets.Deregister(drop))
		if !done || err != nil {
			return reconcile.Result{}, err
		}
		for _, b := range moved {
			r.podEvent(pod, event.Normal(reasonMoved, fmt.Sprintf("load balancer %s left pool %s: %s/%d moves from %s to a new address",
				b.LoadBalancerID, b.Pool, b.Protocol, b.ContainerPort, cmp.Or(b.Address, "(none)"))))
		}
		r.pools.ReleaseBindings(pa, drop)
		pa.Status.Bindings = keep
	}

	// A new PodAddress whose Pod has no IP (or node) yet writes nothing
	// for a moment: the IP follows within a second or so in a burst of
	// Pods, and then the allocation and its targets are recorded in one
	// write instead of two. Nothing is allocated meanwhile, so nothing is
	// held that the status does not say. The moment counts from the Pod's
	// creation: create waited for the IP already.
	if pa.Status.State == "" && len(pa.Status.Bindings) == 0 && !pa.Spec.Isolated {
		if _, ready, err := r.dests(ctx, pod, ws); err == nil && !ready {
			if left := waitBackendQuiet - r.clock().Sub(pod.GetCreationTimestamp().Time); left > 0 {
				return reconcile.Result{RequeueAfter: left}, nil
			}
		}
	}

	// Allocate what is missing, and record it before any cloud call.
	var fresh []allocation.Port
	for _, w := range ws {
		if w.In(pa.Status.Bindings) {
			continue
		}
		b, isNew, state, err := r.pools.Allocate(ctx, pa, w.Port)
		if isNew {
			fresh = append(fresh, w.Port)
		}
		if err != nil {
			if state == v1alpha1.StateNoPortAvailable {
				r.podEvent(pod, event.Warning(reasonNoPort, err))
			}
			res, uerr := r.setState(ctx, pa, state, err.Error(), reconcile.Result{RequeueAfter: waitForPorts})
			if uerr != nil {
				r.pools.Undo(pa, fresh)
				return res, uerr
			}
			return res, r.tellPod(ctx, pod, a, pa, state, err.Error())
		}
		pa.Status.Bindings = append(pa.Status.Bindings, b)
	}
	if pa.Spec.Isolated {
		return r.isolate(ctx, pa, pod, a, fresh)
	}
	allocated := len(fresh) > 0 || len(pa.Status.Bindings) > 0 && pa.Status.State == v1alpha1.StatePending

	// Where the load balancers forward to.
	ds, ready, err := r.dests(ctx, pod, ws)
	if err != nil || !ready {
		msg, wait := "waiting for the Pod's IP (or its node)", reconcile.Result{}
		if err != nil {
			msg, wait = err.Error(), reconcile.Result{RequeueAfter: waitForPorts}
		}
		res, uerr := r.setState(ctx, pa, v1alpha1.StateWaitBackend, msg, wait)
		if uerr != nil {
			r.pools.Undo(pa, fresh)
			return res, uerr
		}
		return res, r.tellPod(ctx, pod, a, pa, v1alpha1.StateWaitBackend, msg)
	}
	// A target is recorded in the status before it is sent, so that
	// whatever may be registered is known to a deletion and to a restarted
	// provider: a recorded target is deregistered (or confirmed) whether
	// or not its registration was answered. Targets that changed (a new
	// Pod IP) are deregistered, and that recorded, before the new ones are.
	// New allocations are recorded in the same write.
	stale, record := setTargets(pa, ws, ds)
	if allocated || record {
		msg := "registering the Pod as the target of its ports"
		if len(stale) > 0 {
			msg = "the Pod's targets changed; deregistering the old ones"
		}
		if _, err := r.setState(ctx, pa, v1alpha1.StateAllocated, msg, reconcile.Result{}); err != nil {
			r.pools.Undo(pa, fresh)
			return reconcile.Result{}, err
		}
		if err := r.tellPod(ctx, pod, a, pa, v1alpha1.StateAllocated, msg); err != nil {
			return reconcile.Result{}, err
		}
	}
	if len(stale) > 0 {
		done, err := r.binder.Run(ctx, pa, targets.Deregister(stale))
		if !done || err != nil {
			return reconcile.Result{}, err
		}
		for i := range pa.Status.Bindings {
			b := &pa.Status.Bindings[i]
			for _, s := range stale {
				if s.Pool == b.Pool && s.ContainerPort == b.ContainerPort && s.Protocol == b.Protocol {
					targets.Clear(b)
				}
			}
		}
		// The next reconcile records and registers the new targets.
		_, err = r.setState(ctx, pa, v1alpha1.StateAllocated, "the Pod's targets changed; registering the new ones", reconcile.Result{})
		return reconcile.Result{}, err
	}
	var toRegister []v1alpha1.PortBinding
	for _, b := range pa.Status.Bindings {
		if b.Address == "" {
			toRegister = append(toRegister, b)
		}
	}
	if len(toRegister) > 0 {
		done, err := r.binder.Run(ctx, pa, targets.Register(toRegister))
		if !done || err != nil {
			if _, notYet := clb.NotYet(err); err != nil && !notYet {
				_, _ = r.setState(ctx, pa, v1alpha1.StateAllocated, err.Error(), reconcile.Result{})
			}
			return reconcile.Result{}, err
		}
		for i := range pa.Status.Bindings {
			pa.Status.Bindings[i].Address = address(pa.Status.Bindings[i])
		}
	}

	// Targets the audit found missing are registered again, through the
	// binder as any registration.
	if done, err := r.repair(ctx, pa); !done || err != nil {
		return reconcile.Result{}, err
	}

	// A Pod that asked for an EIP and fell back to ports is bound too,
	// and says so.
	boundState, boundMsg := v1alpha1.StateBound, ""
	if e := pa.Status.EIP; e != nil && e.State == v1alpha1.EIPFallback {
		boundState, boundMsg = v1alpha1.StateFallbackPort, "no EIP ("+e.Reason+"); bound to ports of the fallback pool"
	}
	if pa.Status.State != boundState || pa.Status.BoundAt == nil {
		now := metaTime(r.clock())
		pa.Status.BoundAt = now
		if _, err := r.setState(ctx, pa, boundState, boundMsg, reconcile.Result{}); err != nil {
			return reconcile.Result{}, err
		}
		r.binder.Forget(key)
		r.metrics.bound(pa, pod, now.Time)
		r.podEvent(pod, event.Normal(reasonBound, "public addresses: "+addresses(pa.Status.Bindings)))
	}
	return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, boundState, boundMsg)
}

// invalid records that pa's request cannot be served as it stands, and
// tells the Pod why.
func (r *Reconciler) invalid(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, err error) (reconcile.Result, error) {
	if pa.Status.State != v1alpha1.StateInvalid || pa.Status.Message != err.Error() {
		r.podEvent(pod, event.Warning(reasonInvalidRequest, err))
	}
	if _, uerr := r.setState(ctx, pa, v1alpha1.StateInvalid, err.Error(), reconcile.Result{}); uerr != nil {
		return reconcile.Result{}, uerr
	}
	return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, v1alpha1.StateInvalid, err.Error())
}

// isolate takes a live Pod out of service and keeps its addresses: every
// recorded target is deregistered through the binder, as any other, and
// then each binding is recorded with its address and no target. That
// record is what a restarted provider reads: it has nothing to deregister,
// and registers nothing while the Pod stays isolated. Once the Pod is no
// longer isolated, bind records and registers its targets again. fresh
// are the slots this reconcile allocated.
func (r *Reconciler) isolate(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, fresh []allocation.Port) (reconcile.Result, error) {
	const msg = "isolated: no target is registered; the ports and addresses are kept"
	key := client.ObjectKeyFromObject(pa)
	if ops := targets.Deregister(pa.Status.Bindings); len(ops) > 0 {
		if len(fresh) > 0 {
			// New slots are recorded before any cloud call.
			if _, err := r.setState(ctx, pa, pa.Status.State, pa.Status.Message, reconcile.Result{}); err != nil {
				r.pools.Undo(pa, fresh)
				return reconcile.Result{}, err
			}
			fresh = nil
		}
		done, err := r.binder.Run(ctx, pa, ops)
		if !done || err != nil {
			return reconcile.Result{}, err
		}
	}
	for i := range pa.Status.Bindings {
		b := &pa.Status.Bindings[i]
		targets.Clear(b)
		b.Address = address(*b)
	}
	was := pa.Status.State
	if _, err := r.setState(ctx, pa, v1alpha1.StateIsolated, msg, reconcile.Result{}); err != nil {
		r.pools.Undo(pa, fresh)
		return reconcile.Result{}, err
	}
	// The deregistration is recorded; its answer is spent.
	r.binder.Forget(key)
	if was != v1alpha1.StateIsolated {
		r.podEvent(pod, event.Normal(reasonIsolated, "out of service, addresses kept: "+addresses(pa.Status.Bindings)))
	}
	return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, v1alpha1.StateIsolated, msg)
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
// says that nothing is registered; its answer in the binder is kept
// otherwise, for the caller to forget once its own write is made.
func (r *Reconciler) deregister(ctx context.Context, pa *v1alpha1.PodAddress, record bool) (bool, error) {
	key := client.ObjectKeyFromObject(pa)
	ops := targets.Deregister(pa.Status.Bindings)
	if len(ops) == 0 {
		// Nothing recorded, so nothing was sent; still, never let go while
		// an operation for pa runs.
		return r.binder.Idle(key), nil
	}
	done, err := r.binder.Run(ctx, pa, ops)
	if !done || err != nil {
		return false, err
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
	r.binder.Forget(key)
	return true, nil
}
