package podaddress

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

func metaTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// setReady sets the Ready condition of a PodAddress.
func setReady(pa *v1alpha1.PodAddress, ready bool, reason xpv2.ConditionReason, msg string) {
	c := xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
	if ready {
		c.Status = corev1.ConditionTrue
	}
	// A state that waits on a person is also Synced=False, so that Argo
	// CD's built-in check says Degraded rather than Progressing forever.
	pa.Status.SetConditions(c, v1alpha1.SyncedCondition(v1alpha1.WaitsOnSomeone(string(reason)), msg))
}

// setState records the state of a PodAddress (and its bindings) when it
// changed, and returns res.
func (r *Reconciler) setState(ctx context.Context, pa *v1alpha1.PodAddress, state, msg string, res reconcile.Result) (reconcile.Result, error) {
	ready := v1alpha1.Serving(state)
	before := pa.DeepCopy()
	pa.Status.State, pa.Status.Message = state, msg
	setReady(pa, ready, xpv2.ConditionReason(state), msg)
	if equalStatus(before.Status, pa.Status) && before.Status.State == state {
		return res, nil
	}
	r.out.metrics.state(pa)
	if err := r.writeStatus(ctx, pa); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot update PodAddress status")
	}
	return res, nil
}

// equalStatus compares statuses ignoring condition timestamps, so that an
// unchanged state is not written again.
func equalStatus(a, b v1alpha1.PodAddressStatus) bool {
	for _, t := range []xpv2.ConditionType{xpv2.TypeReady, xpv2.TypeSynced} {
		if !a.GetCondition(t).Equal(b.GetCondition(t)) {
			return false
		}
	}
	a.Conditions, b.Conditions = nil, nil
	return equality(a, b)
}
