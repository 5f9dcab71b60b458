package portpool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	tkev1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

// A pool of tke-port-pools (made from a tke-extend CLBPortPool) takes over
// the listeners tke-extend-network-controller made for Pods, so that a
// cluster switched from it keeps every address (docs/migrate-tke-extend.md):
//
//   - a listener named as tke-extend names its own, that sits exactly on a
//     slot of the pool in one of its protocols, is a candidate; the pool
//     lists candidates with their targets in its status (TKEListeners) and
//     writes nothing to them;
//   - the PodAddress controller gives a Pod the slot of its
//     clb-port-mapping-result only when the candidate there is the one the
//     result names and the Pod is its only target, and records that
//     listener in the Pod's binding (a record only the provider writes);
//   - a candidate that a binding of the pool records on its slot is taken
//     over: the pool's own from then on (Adopted in its status, which keeps
//     it after the binding goes), never deleted and created again.
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
// are kept for the same listener (tke-extend is stopped and the pool never
// writes to a candidate, so they do not change); only new candidates are
// described.
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
	}
	slices.SortFunc(out, func(a, b v1alpha1.TKEListener) int {
		return compareKeys(a.Key, b.Key)
	})
	return out, nil
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
		l.tke = c
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
	a := cr.GetAnnotations()
	if !tkeSide(cr) || a[v1alpha1.AnnotationActsFor] != "" || a[v1alpha1.AnnotationTKESwitch] != "" {
		return
	}
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
