package podaddress

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
)

const reasonPoolNotAllowed event.Reason = "PoolNotAllowed"

// DefaultMaxPortsPerPod is the default of Options.MaxPortsPerPod.
const DefaultMaxPortsPerPod = 32

// A refusal is what stops a request before anything is allocated: an
// invalid request (err), or pools that do not serve its namespace
// (denied).
type refusal struct {
	err    error
	denied []*allocation.NotAllowed
}

// refused checks pa's request against what the admin and the pools'
// owners allow, before anything is allocated: no more addresses than
// --max-ports-per-pod, only pools that serve pa's namespace, and only
// protocols the pools serve. It returns nil when nothing stops it.
func (r *Reconciler) refused(ctx context.Context, pa *v1alpha1.PodAddress, ws []want) (*refusal, error) {
	if m := r.alloc.limits.maxPortsPerPod; m > 0 && len(ws) > m {
		return &refusal{err: fmt.Errorf("the request asks for %d addresses (one per port and pool); the provider allows at most %d per Pod (--max-ports-per-pod)", len(ws), m)}, nil
	}
	var denied []*allocation.NotAllowed
	for _, pool := range poolsOf(ws) {
		na, err := r.alloc.consents.Check(ctx, pa.GetNamespace(), pool)
		if err != nil {
			return nil, err
		}
		if na != nil {
			denied = append(denied, na)
		}
	}
	if len(denied) > 0 {
		return &refusal{denied: denied}, nil
	}
	if err := r.alloc.pools.Servable(ctx, pa, ports(ws)); err != nil {
		return &refusal{err: err}, nil
	}
	for _, w := range ws {
		if w.In(pa.Status.Bindings) {
			continue
		}
		if err := r.alloc.pools.SegmentFits(ctx, w.Port, w.targetPort()); err != nil {
			return &refusal{err: err}, nil
		}
	}
	return nil, nil
}

// poolsOf are the pools ws ask for, each once, in order.
func poolsOf(ws []want) []string {
	var out []string
	for _, w := range ws {
		if !slices.Contains(out, w.Pool) {
			out = append(out, w.Pool)
		}
	}
	return out
}

// notAllowed lets go of pa's bindings in pools that do not serve its
// namespace (their targets are deregistered first, as for any binding
// dropped), keeps the others, and records PoolNotAllowed, with a warning
// naming the pool and its rule. The PodAddress is looked at again when a
// pool's consumers or its Namespace's labels change.
func (r *Reconciler) notAllowed(ctx context.Context, pa *v1alpha1.PodAddress, pod *corev1.Pod, a *ask, ws []want, denied []*allocation.NotAllowed) (reconcile.Result, error) {
	allowed := slices.DeleteFunc(slices.Clone(ws), func(w want) bool {
		return slices.ContainsFunc(denied, func(na *allocation.NotAllowed) bool { return na.Pool == w.Pool })
	})
	if o := r.dropUnwanted(ctx, pa, pod, allowed); o.end {
		return o.res, o.err
	}
	msg := denied[0].Error()
	if pa.Status.State != v1alpha1.StatePoolNotAllowed || pa.Status.Message != msg {
		r.podEvent(pod, event.Warning(reasonPoolNotAllowed, errors.New(msg)))
	}
	if _, err := r.setState(ctx, pa, v1alpha1.StatePoolNotAllowed, msg, reconcile.Result{}); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.tellPod(ctx, pod, a, pa, v1alpha1.StatePoolNotAllowed, msg)
}

// heldNotAllowed reports whether a held PodAddress has a binding in a
// pool that no longer serves its namespace: it is released rather than
// kept for a Pod that could not use it.
func (r *Reconciler) heldNotAllowed(ctx context.Context, pa *v1alpha1.PodAddress) (bool, error) {
	for _, b := range pa.Status.Bindings {
		na, err := r.alloc.consents.Check(ctx, pa.GetNamespace(), b.Pool)
		if err != nil || na != nil {
			return na != nil, err
		}
	}
	return false, nil
}

// deniedByPool maps a PortPool change to the PodAddresses of other
// namespaces that hold a binding in it which it no longer serves.
func (r *Reconciler) deniedByPool(ctx context.Context, pp *clbv1alpha1.PortPool, pa *v1alpha1.PodAddress, allowed map[string]bool) bool {
	if pa.GetNamespace() == pp.GetNamespace() || len(pa.RecordedBindings()) == 0 {
		return false
	}
	ok, seen := allowed[pa.GetNamespace()]
	if !seen {
		var err error
		ok, err = r.alloc.consents.Allows(ctx, pp.NamespaceConsent(), pp.GetNamespace(), pa.GetNamespace())
		ok = ok || err != nil // unknown: left to the PodAddress's own reconciles
		allowed[pa.GetNamespace()] = ok
	}
	return !ok
}

// usersOfOtherPools maps a Namespace whose labels changed to its
// PodAddresses that ask for, or hold, a pool of another namespace: a
// pool's selector may now take them in, or leave them out.
func (r *Reconciler) usersOfOtherPools(ctx context.Context, o client.Object) []reconcile.Request {
	l := &v1alpha1.PodAddressList{}
	if err := r.kube.List(ctx, l, client.InNamespace(o.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, pa := range l.Items {
		if slices.ContainsFunc(v1alpha1.PoolsOf(&pa), func(key string) bool {
			nn, ok := v1alpha1.ParsePoolKey(key)
			return ok && nn.Namespace != o.GetName()
		}) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pa.GetNamespace(), Name: pa.GetName()}})
		}
	}
	return reqs
}
