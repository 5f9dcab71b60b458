package podaddress

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/allocation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

const (
	// WebhookPath is where the Pod admission webhook is served; the
	// MutatingWebhookConfiguration of the package names it.
	WebhookPath = "/mutate-v1-pod-address"

	// AnnotationAdmittedUntil marks a PodAddress made when its Pod was
	// admitted: the time (RFC 3339) until which it waits for the Pod to be
	// created. A Pod that was admitted but never created (a later webhook
	// refused it, its client gave up) leaves a PodAddress that no Pod
	// takes over; once the time has passed, the controller releases its
	// ports and deletes it. Taking it over removes the annotation.
	AnnotationAdmittedUntil = "network.tencentcloud.crossplane.io/admitted-until"

	// DefaultAdmissionGrace is how long a PodAddress made at admission
	// waits for its Pod.
	DefaultAdmissionGrace = time.Minute
)

// An Admission is the Pod mutating webhook. For a Pod that asks for
// addresses it adds the readiness gate the Pod asks for, and, for a Pod
// that wants its ports at admission (bcs syntax, or
// podannotation.AnnotationAllocateAtAdmission; never an EIP), allocates
// them, records them in a new PodAddress's status before answering, and
// puts them in the Pod's environment.
//
// It never refuses a Pod: whatever goes wrong, the Pod is admitted as it
// is, and the controller binds it once it exists.
type Admission struct {
	grace time.Duration
	log   logging.Logger
	// state is set once the PodAddress controller runs (under safe-start,
	// once its CRDs exist); until then the webhook only adds gates.
	state atomic.Pointer[admissionState]
}

type admissionState struct {
	r *Reconciler
	// elected is closed once this replica leads: only the leader's
	// allocator is the one that binds, so only it allocates.
	elected <-chan struct{}
}

// NewAdmission returns a webhook whose admitted PodAddresses wait grace
// for their Pod.
func NewAdmission(grace time.Duration, log logging.Logger) *Admission {
	if grace <= 0 {
		grace = DefaultAdmissionGrace
	}
	return &Admission{grace: grace, log: log}
}

// Handle admits one Pod.
func (a *Admission) Handle(ctx context.Context, req admission.Request) admission.Response {
	st := a.state.Load()
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	changed := false
	var want *ask
	if st != nil {
		w, err := st.r.request(ctx, pod)
		if err != nil || w == nil {
			// Nothing asked, or a malformed request the controller will
			// report on the Pod once it exists.
			return admission.Allowed("")
		}
		want = w
	} else {
		pr, asked, err := podannotation.Parse(pod)
		if err != nil || !asked {
			return admission.Allowed("")
		}
		want = &ask{syntax: pr.Syntax, readinessGate: pr.ReadinessGate}
	}
	if want.readinessGate && podannotation.AddReadinessGate(pod) {
		changed = true
	}
	// An EIP is never allocated here, whatever the Pod's allocate-at-
	// admission says: it is a billed, daily-limited cloud allocation, and
	// it binds to the Pod's IP, which exists only once the Pod runs. The
	// controller allocates it; a fallback to ports is its call too.
	eip := want.spec.EIP != nil
	if st != nil && !eip && podannotation.AllocateAtAdmission(pod, want.syntax) && !ptrTrue(req.DryRun) && isClosed(st.elected) {
		bs, err := a.allocate(ctx, st.r, pod, want)
		if err != nil {
			a.log.Info("Cannot allocate at admission; the Pod is bound after it is created", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		}
		if len(bs) > 0 {
			podannotation.SetEnv(pod, podannotation.EnvVars(bs))
			changed = true
		}
	}
	if !changed {
		return admission.Allowed("")
	}
	out, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
}

// allocate gives the admitted pod its bindings: those of an existing
// PodAddress of its name that already serves the request (a recreated
// StatefulSet Pod within its keep duration), or new ones recorded in a new
// PodAddress's status before the Pod is answered, so that a restarted
// provider rebuilds them and a Pod never created releases them.
func (a *Admission) allocate(ctx context.Context, r *Reconciler, pod *corev1.Pod, asked *ask) ([]v1alpha1.PortBinding, error) {
	if pod.Name == "" {
		if pod.GenerateName == "" {
			return nil, nil
		}
		// The API server names a generateName Pod after admission; the
		// PodAddress needs the name now, so the webhook picks it, as the
		// API server would.
		pod.Name = pod.GenerateName + utilrand.String(5)
	}
	key := client.ObjectKeyFromObject(pod)
	if pa, err := getOrNil(ctx, r.kube, key, &v1alpha1.PodAddress{}); err != nil || pa != nil {
		if pa != nil {
			pa.AdoptCreatedBindings()
		}
		if pa != nil && sameRequest(pa.Spec, asked.spec) && covers(pa, pod) {
			return pa.Status.Bindings, nil
		}
		return nil, err
	}

	pa := &v1alpha1.PodAddress{}
	pa.SetNamespace(pod.Namespace)
	pa.SetName(pod.Name)
	pa.SetFinalizers([]string{Finalizer})
	pa.SetAnnotations(map[string]string{AnnotationAdmittedUntil: r.clock().Add(a.grace).UTC().Format(time.RFC3339)})
	pa.Spec = asked.spec
	ws, err := wants(pa, pod)
	if err == nil {
		err = r.pools.Servable(ctx, pa, ports(ws))
	}
	if err != nil {
		return nil, nil // invalid: the controller says why once the Pod exists
	}
	if err := r.kube.Create(ctx, pa); err != nil {
		if kerrors.IsAlreadyExists(err) {
			return nil, nil
		}
		return nil, errors.Wrap(err, "cannot create PodAddress")
	}
	// From here on the PodAddress exists: if anything fails, it is left
	// for the controller, which binds it once the Pod exists or deletes
	// it after the grace.
	var fresh []allocation.Port
	for _, w := range ws {
		b, isNew, _, err := r.pools.Allocate(ctx, pa, w.Port)
		if isNew {
			fresh = append(fresh, w.Port)
		}
		if err != nil {
			r.pools.Undo(pa, fresh)
			return nil, err
		}
		pa.Status.Bindings = append(pa.Status.Bindings, b)
	}
	msg := "allocated at admission; waiting for the Pod to be created"
	pa.Status.State, pa.Status.Message = v1alpha1.StateAllocated, msg
	setReady(pa, false, xpv2.ConditionReason(v1alpha1.StateAllocated), msg)
	if err := r.kube.Status().Update(ctx, pa); err != nil {
		r.pools.Undo(pa, fresh)
		return nil, errors.Wrap(err, "cannot record the bindings allocated at admission")
	}
	r.metrics.state(pa)
	return pa.Status.Bindings, nil
}

// covers reports whether pa has a binding for every address pod asks for.
func covers(pa *v1alpha1.PodAddress, pod *corev1.Pod) bool {
	ws, err := wants(pa, pod)
	if err != nil || len(ws) == 0 {
		return false
	}
	for _, w := range ws {
		if !w.In(pa.Status.Bindings) {
			return false
		}
	}
	return true
}

// admittedWait returns how long a PodAddress made at admission still waits
// for its Pod to be created, and whether it is one that was never taken
// over by a Pod.
func admittedWait(pa *v1alpha1.PodAddress, now time.Time) (time.Duration, bool) {
	v, ok := pa.GetAnnotations()[AnnotationAdmittedUntil]
	if !ok || pa.Spec.PodUID != "" {
		return 0, false
	}
	until, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0, true // unreadable: treat as expired
	}
	return max(until.Sub(now), 0), true
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func ptrTrue(b *bool) bool { return b != nil && *b }
