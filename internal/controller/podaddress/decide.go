package podaddress

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// A step is what one reconcile does with a name. decide chooses it from
// what was read; Reconcile only executes it.
type step int

const (
	// stepNone: neither a request nor a PodAddress; nothing to do.
	stepNone step = iota
	// stepCreate: the Pod asks and has no PodAddress yet.
	stepCreate
	// stepFinalize: the PodAddress is being deleted; deregister and
	// return its ports before its finalizer goes.
	stepFinalize
	// stepAwaitPod: admitted by the webhook, Pod not created yet; the
	// ports stay held until the admission's grace ends.
	stepAwaitPod
	// stepRemove: the addresses go (the Pod no longer asks, its admission
	// grace ended, or its cluster's bounds refuse it).
	stepRemove
	// stepPodGone: the Pod was deleted (also while the provider was
	// down); per the PodAddress's keep duration it is released or kept.
	stepPodGone
	// stepTakeOver: another Pod of the name, or a changed request.
	stepTakeOver
	// stepRefuseRemoteEIP: a Pod of another cluster asked for an EIP.
	stepRefuseRemoteEIP
	// stepBindEIP and stepBind: keep the Pod's addresses as asked.
	stepBindEIP
	stepBind
)

func (s step) String() string {
	return [...]string{"None", "Create", "Finalize", "AwaitPod", "Remove", "PodGone", "TakeOver", "RefuseRemoteEIP", "BindEIP", "Bind"}[s]
}

// facts are what a reconcile read of one name, as decide needs them.
type facts struct {
	// pod is the Pod of the name (of this cluster or made of a
	// RemotePod); nil when there is none.
	pod *corev1.Pod
	// pa is the PodAddress of the name with its records checked; nil
	// when there is none.
	pa *v1alpha1.PodAddress
	// want is what a live Pod asks for; nil when it asks for nothing.
	want *ask
	// remote says the Pod is of another cluster.
	remote bool
	// outOfBounds says the Pod's cluster may not have what it asks.
	outOfBounds bool
	now         time.Time
}

// decide returns the step for what was read, and how long to wait first
// when the step is stepAwaitPod. It does no I/O: a rule of the lifecycle
// is changed here and in its table (TestDecide).
func decide(f facts) (step, time.Duration) {
	live := f.pod != nil && f.pod.DeletionTimestamp == nil
	switch {
	case f.outOfBounds && f.pa == nil:
		return stepNone, 0
	case f.outOfBounds && meta.WasDeleted(f.pa):
		return stepFinalize, 0
	case f.outOfBounds:
		return stepRemove, 0
	case f.pa == nil && (!live || f.want == nil):
		return stepNone, 0
	case f.pa == nil:
		return stepCreate, 0
	case meta.WasDeleted(f.pa):
		return stepFinalize, 0
	case !live:
		if left, admitted := admittedWait(f.pa, f.now); admitted && f.pod == nil {
			// Admitted, never created (yet): wait for the Pod until the
			// grace ends, then give the ports back.
			if left > 0 {
				return stepAwaitPod, left
			}
			return stepRemove, 0
		}
		return stepPodGone, 0
	case f.want == nil:
		return stepRemove, 0
	case f.pa.Spec.PodUID != string(f.pod.GetUID()) || !sameRequest(f.pa.Spec, f.want.spec):
		return stepTakeOver, 0
	case f.pa.Spec.EIP != nil && f.remote:
		return stepRefuseRemoteEIP, 0
	case f.pa.Spec.EIP != nil:
		return stepBindEIP, 0
	}
	return stepBind, 0
}
