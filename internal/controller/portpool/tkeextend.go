package portpool

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// A pool of tke-port-pools (made from a tke-extend CLBPortPool) takes over
// the listeners tke-extend-network-controller made for Pods, so that a
// cluster switched from it keeps every address and leaves none of them
// unowned (docs/migrate-tke-extend.md):
//
//   - a listener named as tke-extend names its own, that sits exactly on a
//     slot of the pool in one of its protocols, is a candidate. In a dry
//     run of the switch (and in a GameServerSet's pool) the pool lists
//     candidates with their targets in its status (TKEListeners), writes
//     nothing to them, and takes over only those a binding records;
//   - once the switch is made, a pool of an admin's CLBPortPool
//     (v1alpha1.TakesOverAllTKE) takes over every candidate: Adopted, its
//     own from then on, never deleted and created again, deleted with the
//     pool. Their targets are read again then (tke-extend is stopped by
//     now, so what the dry run read may be old), and at every look while
//     a target no binding of the pool records is left on them;
//   - such a listener is Inherited (status, with all its targets): its slot
//     takes no new binding, since players may still be connected through
//     it to the Pod behind. A Pod whose clb-port-mapping-result names it,
//     and which is its only target, keeps it (the PodAddress controller,
//     allocation.Adoptable), and then its binding records the target;
//   - a target no binding records is deregistered once no Pod of the
//     cluster has its IP (Pod IP or host IP, which only the kubelet
//     writes) and no Node has it as InternalIP (a Node of the HostPort
//     scheme, whose segments forward to it): the Pod tke-extend
//     registered it for is gone, whether it
//     was deleted after the switch (a Pod that got a new address) or died
//     while tke-extend was stopped. Then the slot is free. One rule serves
//     both: a Pod's annotations, which its tenant writes (and which the
//     provider rewrites when it gives the Pod a new address), never
//     decide a deregistration; a live Pod with the IP only keeps the
//     target longer.
//
// Only pools of tke-port-pools look: those of other namespaces are a
// tenant's, whose bindings must not name listeners the pool did not make.

// tkeSide reports whether cr takes over tke-extend's listeners.
func tkeSide(cr *v1alpha1.PortPool) bool {
	return cr.GetNamespace() == podannotation.TKEPoolNamespace
}

// fit returns the status key of l when it sits exactly on a slot of s in
// one of the pool's protocols: its first port, and its end port for a
// segment.
func (s shape) fit(l *clbsdk.Listener) (string, bool) {
	proto, port := clb.Deref(l.Protocol), clb.Deref(l.Port)
	i, ok := s.slotOf(port)
	if !ok || !slices.Contains(s.protocols, proto) || s.port(i) != port || clb.Deref(l.EndPort) != s.endPort(i) {
		return "", false
	}
	return key(proto, port), true
}

// isTKE reports whether l is named as tke-extend names its listeners.
func isTKE(l *clbsdk.Listener) bool {
	return clb.Deref(l.ListenerName) == v1alpha1.TKEListenerName
}

// adoptions returns the ids of tke-extend's listeners on l that the pool
// has taken over: those its status says it took over, and those a binding
// of the pool records on their own slot and protocol. Both must still sit
// on a slot of the pool.
func adoptions(s shape, l *lbObs, before map[string]string) map[string]bool {
	out := map[string]bool{}
	took := map[string]bool{}
	for _, id := range before {
		took[id] = true
	}
	for _, ls := range l.listeners {
		if ls == nil || ls.ListenerId == nil || !isTKE(ls) {
			continue
		}
		k, ok := s.fit(ls)
		if !ok {
			continue
		}
		if id := *ls.ListenerId; took[id] || l.recorded[k] == id {
			out[id] = true
		}
	}
	return out
}

// candidates lists tke-extend's listeners on slots of the pool that it has
// not taken over, with their targets. Targets listed in the status before
// are kept for the same listener (the pool never writes to a candidate);
// only new candidates are described. What a binding or the switch takes
// over is described again then (inherit).
func (e *external) candidates(ctx context.Context, s shape, l *lbObs, before []v1alpha1.TKEListener) ([]v1alpha1.TKEListener, error) {
	known := map[string]v1alpha1.TKEListener{}
	for _, c := range before {
		known[c.ID] = c
	}
	var out []v1alpha1.TKEListener
	var unknown []string
	for _, ls := range l.listeners {
		if ls == nil || ls.ListenerId == nil || !isTKE(ls) || l.adopted[*ls.ListenerId] {
			continue
		}
		k, ok := s.fit(ls)
		if !ok {
			continue
		}
		c, seen := known[*ls.ListenerId]
		if !seen || c.Key != k {
			c = v1alpha1.TKEListener{Key: k, ID: *ls.ListenerId}
			unknown = append(unknown, c.ID)
		}
		out = append(out, c)
	}
	if len(unknown) > 0 {
		backends, err := l.c.DescribeListenersTargets(ctx, l.id, unknown)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot describe the targets of tke-extend's listeners on load balancer %s", l.id)
		}
		for i := range out {
			if b := backends[out[i].ID]; b != nil && slices.Contains(unknown, out[i].ID) {
				out[i].Targets = targetsOf(b)
			}
		}
		if l.backends == nil {
			l.backends = map[string]*clbsdk.ListenerBackend{}
		}
		maps.Copy(l.backends, backends)
	}
	slices.SortFunc(out, func(a, b v1alpha1.TKEListener) int {
		return compareKeys(a.Key, b.Key)
	})
	return out, nil
}

// inherit takes every candidate of l over (their targets just read) and
// lists, in l.inherited, the taken-over listeners that carry a target no
// binding of the pool records there, with all their targets; l.release
// gets those of such targets whose IP no Pod has (live). The listeners
// inherited before, and those a binding made the pool's since, are
// described again: their targets go when the pool deregisters them or a
// binding records them. The pool's other tke-extend listeners were read
// with no such target, and only bindings, recorded first, add one.
func (e *external) inherit(ctx context.Context, s shape, l *lbObs, candidates []v1alpha1.TKEListener, before v1alpha1.PoolLoadBalancerStatus, live func() (map[string]bool, error)) error {
	for _, c := range candidates {
		l.adopted[c.ID] = true
	}
	look := map[string]bool{}
	for _, b := range before.Inherited {
		look[b.ID] = true
	}
	took := map[string]bool{}
	for _, id := range before.Adopted {
		took[id] = true
	}
	var again []string
	for id := range l.adopted {
		if (look[id] || !took[id]) && l.backends[id] == nil {
			again = append(again, id)
		}
	}
	slices.Sort(again)
	if len(again) > 0 {
		backends, err := l.c.DescribeListenersTargets(ctx, l.id, again)
		if err != nil {
			return errors.Wrapf(err, "cannot describe the targets of tke-extend's listeners on load balancer %s", l.id)
		}
		if l.backends == nil {
			l.backends = map[string]*clbsdk.ListenerBackend{}
		}
		maps.Copy(l.backends, backends)
	}
	for _, ls := range l.listeners {
		if ls == nil || ls.ListenerId == nil || !l.adopted[*ls.ListenerId] || l.backends[*ls.ListenerId] == nil {
			continue
		}
		id := *ls.ListenerId
		k, ok := s.fit(ls)
		if !ok {
			continue
		}
		all := targetsOf(l.backends[id])
		var left []string
		for _, t := range all {
			if l.recorded[k] != id || !l.recordedTargets[k][t] {
				left = append(left, t)
			}
		}
		if len(left) == 0 {
			continue
		}
		l.inherited = append(l.inherited, v1alpha1.TKEListener{Key: k, ID: id, Targets: all})
		ips, err := live()
		if err != nil {
			return err
		}
		for _, t := range left {
			if !ips[ipOf(t)] {
				if l.release == nil {
					l.release = map[string][]string{}
				}
				l.release[id] = append(l.release[id], t)
			}
		}
	}
	slices.SortFunc(l.inherited, func(a, b v1alpha1.TKEListener) int {
		return compareKeys(a.Key, b.Key)
	})
	return nil
}

// ipOf is the IP of an "ip:port" (an IPv6 one has no brackets).
func ipOf(target string) string {
	if i := strings.LastIndex(target, ":"); i >= 0 {
		return target[:i]
	}
	return target
}

// liveIPs returns the IPs of every Pod of the cluster, Pod and host IPs
// (the kubelet writes them; a Pod's tenant cannot), and the InternalIPs of
// every Node (the kubelet's or the cloud's; a Node of tke-extend's HostPort
// scheme is the target of its segments, and keeps them with no Pod on
// it), from the manager's cache. A target tke-extend left is deregistered
// only when its IP is not among them.
func (e *external) liveIPs(ctx context.Context) (map[string]bool, error) {
	pods := &corev1.PodList{}
	if err := e.kube.List(ctx, pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list the Pods, to find which targets tke-extend left are still a Pod's")
	}
	nodes := &corev1.NodeList{}
	if err := e.kube.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list the Nodes, to find which targets tke-extend left are still a Node's")
	}
	out := map[string]bool{}
	for i := range nodes.Items {
		for _, a := range nodes.Items[i].Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				out[a.Address] = true
			}
		}
	}
	for i := range pods.Items {
		st := &pods.Items[i].Status
		for _, ip := range []string{st.PodIP, st.HostIP} {
			out[ip] = true
		}
		for _, ip := range st.PodIPs {
			out[ip.IP] = true
		}
		for _, ip := range st.HostIPs {
			out[ip.IP] = true
		}
	}
	delete(out, "")
	return out, nil
}

// hold keeps the slots of inherited listeners from taking bindings.
func (m lbListeners) hold(s shape, inherited []v1alpha1.TKEListener) {
	for _, x := range inherited {
		if k, ok := v1alpha1.ParseListenerKey(x.Key); ok {
			if i, ok := s.slotOf(int64(k.Port)); ok {
				m.usable[i] = false
			}
		}
	}
}

// releaseCount is how many targets tke-extend left on l are to deregister.
func releaseCount(l *lbObs) int {
	n := 0
	for _, ts := range l.release {
		n += len(ts)
	}
	return n
}

// deregisterLeft deregisters the targets tke-extend left that inherit
// found no Pod for, as the cloud showed them in this reconcile (an
// instance target by its instance id, others by IP).
func deregisterLeft(ctx context.Context, l *lbObs) error {
	var ts []clb.Target
	for id, left := range l.release {
		b := l.backends[id]
		if b == nil {
			continue
		}
		for _, t := range b.Targets {
			if t == nil {
				continue
			}
			for _, ip := range t.PrivateIpAddresses {
				if !slices.Contains(left, fmt.Sprintf("%s:%d", clb.Deref(ip), clb.Deref(t.Port))) {
					continue
				}
				target := clb.Target{ListenerID: id, Port: clb.Deref(t.Port), EniIP: clb.Deref(ip)}
				if clb.Deref(t.Type) == "CVM" && clb.Deref(t.InstanceId) != "" {
					target.EniIP, target.InstanceID = "", clb.Deref(t.InstanceId)
				}
				ts = append(ts, target)
			}
		}
	}
	if len(ts) == 0 {
		return nil
	}
	_, err := l.c.DeregisterTargets(ctx, l.id, ts)
	return errors.Wrapf(err, "cannot deregister the targets tke-extend left for Pods that are gone on load balancer %s", l.id)
}

// targetsOf lists the "ip:port" of a layer-4 listener's backends.
func targetsOf(b *clbsdk.ListenerBackend) []string {
	var out []string
	for _, t := range b.Targets {
		if t == nil {
			continue
		}
		for _, ip := range t.PrivateIpAddresses {
			out = append(out, fmt.Sprintf("%s:%d", clb.Deref(ip), clb.Deref(t.Port)))
		}
	}
	slices.Sort(out)
	return out
}

// compareKeys orders "PROTOCOL/port" keys by port, then protocol.
func compareKeys(a, b string) int {
	ka, _ := v1alpha1.ParseListenerKey(a)
	kb, _ := v1alpha1.ParseListenerKey(b)
	if ka.Port != kb.Port {
		return int(ka.Port - kb.Port)
	}
	switch {
	case ka.Protocol < kb.Protocol:
		return -1
	case ka.Protocol > kb.Protocol:
		return 1
	}
	return 0
}

// adoptedStatus is the key → id of the listeners of ids the pool took
// over from tke-extend.
func adoptedStatus(ids map[string]string, adopted map[string]bool) map[string]string {
	out := map[string]string{}
	for k, id := range ids {
		if adopted[id] {
			out[k] = id
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// statusOf returns the status the pool wrote last for load balancer id.
func statusOf(cr *v1alpha1.PortPool, id string) *v1alpha1.PoolLoadBalancerStatus {
	for i := range cr.Status.AtProvider.LoadBalancers {
		if st := &cr.Status.AtProvider.LoadBalancers[i]; st.ID == id {
			return st
		}
	}
	return nil
}

// takeOver works out, for a pool of tke-port-pools, which of tke-extend's
// listeners each load balancer's pool has taken over, and lists the
// others that sit on its slots. It runs before match.
func (e *external) takeOver(ctx context.Context, cr *v1alpha1.PortPool, o *observation) error {
	if !tkeSide(cr) || o.shapeErr != nil {
		return nil
	}
	all := v1alpha1.TakesOverAllTKE(cr)
	var ips map[string]bool
	live := func() (map[string]bool, error) {
		var err error
		if ips == nil {
			ips, err = e.liveIPs(ctx)
		}
		return ips, err
	}
	for _, l := range o.lbs {
		var before v1alpha1.PoolLoadBalancerStatus
		if st := statusOf(cr, l.id); st != nil {
			before = *st
		}
		l.adopted = adoptions(o.shape, l, before.Adopted)
		if !l.found() {
			continue
		}
		c, err := e.candidates(ctx, o.shape, l, before.TKEListeners)
		if err != nil {
			return err
		}
		if !all {
			l.tke = c
			continue
		}
		if err := e.inherit(ctx, o.shape, l, c, before, live); err != nil {
			return err
		}
	}
	return nil
}

// markTKEAutoCreated marks the load balancers tke-extend created for the
// pool that it takes over, by tagging them as its own (sync): from then on
// FindLoadBalancersByTag finds them, autoCreate counts them and deleting
// the pool deletes them, as tke-extend's deletion of its CLBPortPool
// deleted the load balancers it had created. Only
//
//   - a pool of tke-port-pools, which only the provider writes, made from
//     an admin's CLBPortPool (not a GameServerSet's, which acts for a
//     namespace), and not in the dry run of the switch;
//   - load balancers the provider recorded as tke-extend's from the status
//     tke-extend wrote (tkev1alpha1.AnnotationTKEAutoCreated, copied from
//     the CLBPortPool) and that the spec names in the home region, where
//     the pool finds its own by tag;
//   - found, not the pool's yet, and carrying no owner tags of ours (an
//     object another namespace or pool owns is never taken).
func markTKEAutoCreated(cr *v1alpha1.PortPool, home string, lbs []*lbObs) {
	if !v1alpha1.TakesOverAllTKE(cr) {
		return
	}
	a := cr.GetAnnotations()
	recorded := map[string]bool{}
	for _, id := range strings.Split(a[tkev1alpha1.AnnotationTKEAutoCreated], ",") {
		recorded[strings.TrimSpace(id)] = true
	}
	named := map[string]bool{}
	for _, s := range cr.Spec.ForProvider.LoadBalancerIDs {
		if ref := v1alpha1.ParseLoadBalancerRef(s); ref.Region == "" || ref.Region == home {
			named[ref.ID] = true
		}
	}
	for _, l := range lbs {
		if !recorded[l.id] || !named[l.id] || l.region != home || !l.found() || l.auto || l.removed || l.notOwned {
			continue
		}
		if _, owned := mr.OwnerNamespace(clb.LoadBalancerTags(l.lb)); owned {
			continue
		}
		l.tkeAuto = true
	}
}
