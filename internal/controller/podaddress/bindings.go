package podaddress

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// ordinalSuffix is the ordinal of a StatefulSet Pod name.
var ordinalSuffix = regexp.MustCompile(`-(\d+)$`)

// want is one address a PodAddress needs: a container port in a pool,
// and what its targets are (backend, and the hostPort or nodePort it
// uses).
type want struct {
	pool          string
	containerPort int32
	protocol      string
	backend       string
	hostPort      int32
	nodePort      int32
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
				pool: p.Key(pa.GetNamespace()), containerPort: port, protocol: proto,
				backend: backend, hostPort: hostPort, nodePort: nodePort,
			})
		}
	}
	return out, nil
}

func (w want) matches(b v1alpha1.PortBinding) bool {
	return b.Pool == w.pool && b.ContainerPort == w.containerPort && b.Protocol == w.protocol
}

// listenerProtocols are the listeners a requested protocol binds to.
func listenerProtocols(protocol string) []string {
	if protocol == v1alpha1.ProtocolTCPUDP {
		return []string{"TCP", "UDP"}
	}
	return []string{protocol}
}

// bind brings a live Pod's PodAddress to Bound: allocate what is missing,
// record it, register the targets, tell the Pod.
func (r *Reconciler) bind(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask) (reconcile.Result, error) {
	ws, err := wants(pa, pod)
	if err == nil {
		err = r.servable(ctx, pa, ws)
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
			asked = asked || w.matches(b)
		}
		switch {
		case asked && r.hasLeft(ctx, b):
			moved = append(moved, b)
			drop = append(drop, b)
		case asked && r.owns(ctx, key, b):
			keep = append(keep, b)
		default:
			drop = append(drop, b)
		}
	}
	if len(drop) > 0 {
		done, err := r.runOps(ctx, pa, deregisterOps(drop))
		if !done || err != nil {
			return reconcile.Result{}, err
		}
		for _, b := range moved {
			r.podEvent(pod, event.Normal(reasonMoved, fmt.Sprintf("load balancer %s left pool %s: %s/%d moves from %s to a new address",
				b.LoadBalancerID, b.Pool, b.Protocol, b.ContainerPort, cmp.Or(b.Address, "(none)"))))
		}
		for _, b := range drop {
			if al, ok := r.pools.loaded(b.Pool); ok {
				al.Release(owner(key, b.ContainerPort, b.Protocol))
			}
		}
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
	var fresh []want
	for _, w := range ws {
		if hasBinding(pa.Status.Bindings, w) {
			continue
		}
		b, isNew, state, err := r.allocate(ctx, pa, w)
		if isNew {
			fresh = append(fresh, w)
		}
		if err != nil {
			if state == v1alpha1.StateNoPortAvailable {
				r.podEvent(pod, event.Warning(reasonNoPort, err))
			}
			res, uerr := r.setState(ctx, pa, state, err.Error(), reconcile.Result{RequeueAfter: waitForPorts})
			if uerr != nil {
				r.undo(pa, fresh)
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
			r.undo(pa, fresh)
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
			r.undo(pa, fresh)
			return reconcile.Result{}, err
		}
		if err := r.tellPod(ctx, pod, a, pa, v1alpha1.StateAllocated, msg); err != nil {
			return reconcile.Result{}, err
		}
	}
	if len(stale) > 0 {
		done, err := r.runOps(ctx, pa, deregisterOps(stale))
		if !done || err != nil {
			return reconcile.Result{}, err
		}
		for i := range pa.Status.Bindings {
			b := &pa.Status.Bindings[i]
			for _, s := range stale {
				if s.Pool == b.Pool && s.ContainerPort == b.ContainerPort && s.Protocol == b.Protocol {
					clearTarget(b)
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
		done, err := r.runOps(ctx, pa, registerOps(toRegister))
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
		r.binder.forget(key)
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
func (r *Reconciler) isolate(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, fresh []want) (reconcile.Result, error) {
	const msg = "isolated: no target is registered; the ports and addresses are kept"
	key := client.ObjectKeyFromObject(pa)
	if ops := deregisterOps(pa.Status.Bindings); len(ops) > 0 {
		if len(fresh) > 0 {
			// New slots are recorded before any cloud call.
			if _, err := r.setState(ctx, pa, pa.Status.State, pa.Status.Message, reconcile.Result{}); err != nil {
				r.undo(pa, fresh)
				return reconcile.Result{}, err
			}
			fresh = nil
		}
		done, err := r.runOps(ctx, pa, ops)
		if !done || err != nil {
			return reconcile.Result{}, err
		}
	}
	for i := range pa.Status.Bindings {
		b := &pa.Status.Bindings[i]
		clearTarget(b)
		b.Address = address(*b)
	}
	was := pa.Status.State
	if _, err := r.setState(ctx, pa, v1alpha1.StateIsolated, msg, reconcile.Result{}); err != nil {
		r.undo(pa, fresh)
		return reconcile.Result{}, err
	}
	// The deregistration is recorded; its answer is spent.
	r.binder.forget(key)
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
		j := slices.IndexFunc(ws, func(w want) bool { return w.matches(*b) })
		if j < 0 {
			continue // not asked for any more; bind drops it first
		}
		d := ds[j]
		if b.TargetIP == d.ip && b.TargetPort == d.port && b.InstanceID == d.instance {
			continue
		}
		if hasTarget(*b) {
			stale = append(stale, *b)
			continue
		}
		b.TargetIP, b.TargetPort, b.InstanceID, b.Address = d.ip, d.port, d.instance, ""
		recorded = true
	}
	return stale, recorded
}

// servable refuses a port whose protocol its pool has no listeners for
// (TCP_UDP on a TCP pool): it could never be registered. It is checked for
// every port not yet bound before any takes a slot. A pool that cannot be
// read is left to the allocation, which reports it.
func (r *Reconciler) servable(ctx context.Context, pa *v1alpha1.PodAddress, ws []want) error {
	for _, w := range ws {
		if hasBinding(pa.Status.Bindings, w) {
			continue
		}
		_, pp, err := r.pools.get(ctx, w.pool)
		if err != nil {
			continue
		}
		if err := unserved(pp, w.protocol); err != nil {
			return err
		}
	}
	return nil
}

// owns reports whether the allocator agrees that b's slot is pa's. It
// records the slot if nobody holds it (a binding written by an earlier
// provider after this one loaded the pool) and says no if another owner
// does.
func (r *Reconciler) owns(ctx context.Context, pa client.ObjectKey, b v1alpha1.PortBinding) bool {
	al, _, err := r.pools.get(ctx, b.Pool)
	if err != nil {
		return true // cannot tell; keep it until the pool is back
	}
	slot := portalloc.Slot{LB: b.LoadBalancerID, Port: b.Port}
	o := owner(pa, b.ContainerPort, b.Protocol)
	if have, ok := al.Lookup(o); ok {
		return have == slot
	}
	return al.Assign(o, slot) == nil
}

// hasLeft reports whether b's load balancer has left its pool (see
// departed). A pool that cannot be read says nothing: b stays.
func (r *Reconciler) hasLeft(ctx context.Context, b v1alpha1.PortBinding) bool {
	_, pp, err := r.pools.get(ctx, b.Pool)
	if err != nil {
		return false
	}
	return departed(pp, b)
}

func hasBinding(bs []v1alpha1.PortBinding, w want) bool {
	for _, b := range bs {
		if w.matches(b) {
			return true
		}
	}
	return false
}

// undo returns the slots this reconcile allocated whose record failed; a
// retry allocates them again. Slots an owner already held are kept: a
// failed write from a stale copy does not mean the slot was never recorded.
func (r *Reconciler) undo(pa *v1alpha1.PodAddress, ws []want) {
	key := client.ObjectKeyFromObject(pa)
	for _, w := range ws {
		if al, ok := r.pools.loaded(w.pool); ok {
			al.Release(owner(key, w.containerPort, w.protocol))
		}
	}
}

// allocate takes a slot for w and describes the binding. isNew is true
// when the owner held no slot before.
func (r *Reconciler) allocate(ctx context.Context, pa *v1alpha1.PodAddress, w want) (b v1alpha1.PortBinding, isNew bool, state string, err error) {
	al, pp, err := r.pools.get(ctx, w.pool)
	if kerrors.IsNotFound(errors.Cause(err)) {
		return b, false, v1alpha1.StatePoolNotFound, errors.Errorf("PortPool %s does not exist", w.pool)
	}
	if err != nil {
		return b, false, v1alpha1.StatePending, err
	}
	o := owner(client.ObjectKeyFromObject(pa), w.containerPort, w.protocol)
	_, held := al.Lookup(o)
	var slot portalloc.Slot
	if pa.Spec.Strategy == v1alpha1.StrategyOrdinal {
		m := ordinalSuffix.FindStringSubmatch(pa.GetName())
		if m == nil {
			return b, false, v1alpha1.StateInvalid, errors.Errorf("the Ordinal strategy needs a StatefulSet Pod name ending in -<ordinal>, not %q", pa.GetName())
		}
		n, _ := strconv.ParseInt(m[1], 10, 32)
		seg := int64(1)
		if pp.Spec.ForProvider.SegmentLength != nil {
			seg = *pp.Spec.ForProvider.SegmentLength
		}
		slot, err = al.AllocateAt(o, int32(pp.Spec.ForProvider.StartPort+n*seg)) //nolint:gosec // G115: ports are validated to 1-65535.
	} else {
		slot, err = al.Allocate(o)
	}
	if errors.Is(err, portalloc.ErrNoPortAvailable) || errors.Is(err, portalloc.ErrTaken) {
		return b, false, v1alpha1.StateNoPortAvailable, errors.Wrapf(err, "pool %s", w.pool)
	}
	if err != nil {
		return b, false, v1alpha1.StatePending, err
	}
	b = binding(pp, w, slot)
	if departed(pp, b) {
		// A slot without its listeners could never be registered; the
		// allocator only hands out slots whose listeners exist, so this is
		// a status read between two writes. Try again shortly.
		al.Release(o)
		return v1alpha1.PortBinding{}, false, v1alpha1.StatePending, errors.Errorf("pool %s: the listeners of %s port %d are not in its status yet", w.pool, slot.LB, slot.Port)
	}
	// Only slot's load balancer changed.
	if st, ok := al.LBStats(slot.LB); ok {
		r.metrics.lbUsage(w.pool, st)
	}
	return b, !held, "", nil
}

// binding describes the address slot gives w.
func binding(pp *clbv1alpha1.PortPool, w want, slot portalloc.Slot) v1alpha1.PortBinding {
	b := v1alpha1.PortBinding{
		Pool:           w.pool,
		Protocol:       w.protocol,
		ContainerPort:  w.containerPort,
		LoadBalancerID: slot.LB,
		Port:           slot.Port,
		ListenerIDs:    map[string]string{},
	}
	if seg := pp.Spec.ForProvider.SegmentLength; seg != nil && *seg > 1 {
		b.EndPort = slot.Port + int32(*seg) - 1 //nolint:gosec // G115: segments are at most 1000 ports.
	}
	if pp.Spec.ForProvider.External != nil {
		b.External = *pp.Spec.ForProvider.External
	}
	for _, lb := range pp.Status.AtProvider.LoadBalancers {
		if lb.ID != slot.LB {
			continue
		}
		// pp is the cache's: the binding gets its own VIPs.
		b.Region, b.ISP, b.VIPs = lb.Region, lb.ISP, slices.Clone(lb.VIPs)
		b.LoadBalancerName, b.LoadBalancerType = lb.Name, lb.Type
		for _, proto := range listenerProtocols(w.protocol) {
			b.ListenerIDs[proto] = lb.ListenerID(clbv1alpha1.ListenerKey{Protocol: proto, Port: slot.Port})
		}
	}
	return b
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
			ds[i] = dest{ip: pod.Status.PodIP, port: w.containerPort}
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

// cloudTargets lists the targets of a binding, in the order of the
// listeners' protocols, so that the same binding always gives the same
// list (and so the same operation generation).
func cloudTargets(b v1alpha1.PortBinding) []clb.Target {
	var ts []clb.Target
	for _, proto := range slices.Sorted(maps.Keys(b.ListenerIDs)) {
		t := clb.Target{ListenerID: b.ListenerIDs[proto], Port: int64(b.TargetPort)}
		if b.InstanceID != "" {
			t.InstanceID = b.InstanceID
		} else {
			t.EniIP = b.TargetIP
		}
		ts = append(ts, t)
	}
	return ts
}

// opsFor groups bindings' targets into one operation per pool, region
// and load balancer. Operations and their targets are sorted: an
// operation's generation must depend only on what it does, or an unchanged
// registration would look new and be sent again while the first is in
// flight.
func opsFor(bs []v1alpha1.PortBinding, register bool) []op {
	type key struct{ pool, region, lb string }
	byKey := map[key]*op{}
	var order []key
	for _, b := range bs {
		k := key{pool: b.Pool, region: b.Region, lb: b.LoadBalancerID}
		o, ok := byKey[k]
		if !ok {
			o = &op{register: register, pool: b.Pool, region: b.Region, lb: b.LoadBalancerID}
			byKey[k] = o
			order = append(order, k)
		}
		o.targets = append(o.targets, cloudTargets(b)...)
	}
	slices.SortFunc(order, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.lb, b.lb), cmp.Compare(a.region, b.region), cmp.Compare(a.pool, b.pool))
	})
	out := make([]op, 0, len(order))
	for _, k := range order {
		o := byKey[k]
		slices.SortFunc(o.targets, compareTargets)
		o.targets = slices.CompactFunc(o.targets, func(a, b clb.Target) bool { return compareTargets(a, b) == 0 })
		out = append(out, *o)
	}
	return out
}

func compareTargets(a, b clb.Target) int {
	return cmp.Or(
		cmp.Compare(a.ListenerID, b.ListenerID), cmp.Compare(a.LocationID, b.LocationID),
		cmp.Compare(a.EniIP, b.EniIP), cmp.Compare(a.InstanceID, b.InstanceID), cmp.Compare(a.Port, b.Port))
}

func registerOps(bs []v1alpha1.PortBinding) []op { return opsFor(bs, true) }

// deregisterOps removes every target recorded in bs: those confirmed and
// those whose registration was sent (or may have been) but not answered.
func deregisterOps(bs []v1alpha1.PortBinding) []op {
	var recorded []v1alpha1.PortBinding
	for _, b := range bs {
		if hasTarget(b) {
			recorded = append(recorded, b)
		}
	}
	return opsFor(recorded, false)
}

// hasTarget reports whether a target is recorded for b: it may be
// registered.
func hasTarget(b v1alpha1.PortBinding) bool { return b.TargetIP != "" || b.InstanceID != "" }

func clearTarget(b *v1alpha1.PortBinding) {
	b.TargetIP, b.TargetPort, b.InstanceID, b.Address = "", 0, "", ""
}

// deregister removes every recorded target of pa; done is false while
// the cloud call, or an earlier one for pa (a registration sent before the
// Pod was deleted), runs in the background. With record, the status then
// says that nothing is registered; its answer in the binder is kept
// otherwise, for the caller to forget once its own write is made.
func (r *Reconciler) deregister(ctx context.Context, pa *v1alpha1.PodAddress, record bool) (bool, error) {
	key := client.ObjectKeyFromObject(pa)
	ops := deregisterOps(pa.Status.Bindings)
	if len(ops) == 0 {
		// Nothing recorded, so nothing was sent; still, never let go while
		// an operation for pa runs.
		return r.binder.idle(key), nil
	}
	done, err := r.runOps(ctx, pa, ops)
	if !done || err != nil {
		return false, err
	}
	if !record {
		return true, nil
	}
	for i := range pa.Status.Bindings {
		clearTarget(&pa.Status.Bindings[i])
	}
	// Record that nothing is registered any more, so a restart does not
	// deregister again.
	if err := r.writeStatus(ctx, pa); err != nil {
		return false, errors.Wrap(err, "cannot record the deregistered targets")
	}
	r.binder.forget(key)
	return true, nil
}

// runOps gives each op the cloud client of its pool's provider config and
// its load balancer's region, and hands them to the binder under a
// generation that identifies them. A deregistration from a pool that is
// gone is dropped: its listeners went with it, and their targets.
func (r *Reconciler) runOps(ctx context.Context, pa *v1alpha1.PodAddress, ops []op) (bool, error) {
	send := make([]op, 0, len(ops))
	for _, o := range ops {
		c, err := r.clientFor(ctx, o.pool, o.region)
		if kerrors.IsNotFound(errors.Cause(err)) && !o.register {
			continue
		}
		if err != nil {
			return false, err
		}
		o.c = c
		send = append(send, o)
	}
	if len(send) == 0 {
		return true, nil
	}
	if send[0].c.Naive() {
		return true, runInline(ctx, send)
	}
	return r.binder.start(client.ObjectKeyFromObject(pa), generation(send), send)
}

// generation identifies an op set by what it does, region included: the
// same targets in another region are another operation.
func generation(ops []op) string {
	h := sha256.New()
	for _, o := range ops {
		_, _ = fmt.Fprintf(h, "%v|%s|%s|%s|", o.register, o.pool, o.region, o.lb)
		for _, t := range o.targets {
			_, _ = fmt.Fprintf(h, "%s,%s,%s,%s,%d;", t.ListenerID, t.LocationID, t.EniIP, t.InstanceID, t.Port)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// clientFor returns the cloud client of the provider config of pool, in
// region (a load balancer the pool names as region:lb-…); an empty region
// is the config's own.
func (r *Reconciler) clientFor(ctx context.Context, pool, region string) (*clb.Client, error) {
	pp, err := readPool(ctx, r.kube, pool)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot get PortPool %s", pool)
	}
	cfg, err := clients.ResolveManaged(ctx, r.kube, pp)
	if err != nil {
		return nil, err
	}
	if region != "" {
		cfg.Region = region
	}
	c, err := r.clients.Client(cfg)
	return c, errors.Wrapf(err, "cannot build a client for region %s", cfg.Region)
}
