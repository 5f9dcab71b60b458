// Package webhook serves the provider's Pod webhooks on the manager's
// webhook server: the address admission webhook, which adds the readiness
// gate a Pod asks for and, for a Pod that wants its ports at admission,
// has the PodAddress controller allocate them and puts them in the Pod's
// environment; and the random hostPort webhook (package randhostport).
package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/randhostport"
)

const (
	// AdmissionPath is where the Pod address admission webhook is served;
	// the MutatingWebhookConfiguration of the package names it.
	AdmissionPath = "/mutate-v1-pod-address"

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
	al Allocator
	// elected is closed once this replica leads: only the leader's
	// allocator is the one that binds, so only it allocates.
	elected <-chan struct{}
}

// An Allocator is the PodAddress controller as the admission webhook uses
// it.
type Allocator interface {
	// Request returns what pod asks for; asked is false when it asks for
	// nothing, and an error says its request is malformed.
	Request(ctx context.Context, pod *corev1.Pod) (r Request, asked bool, err error)
	// AllocateAtAdmission gives the named pod its bindings before it is
	// created, recorded in a PodAddress that waits for the Pod until
	// until; none when it cannot be served now.
	AllocateAtAdmission(ctx context.Context, pod *corev1.Pod, until time.Time) ([]v1alpha1.PortBinding, error)
}

// A Request is what the webhook needs to know of a Pod's request.
type Request struct {
	Syntax        string
	ReadinessGate bool
	// EIP: the Pod asks for an EIP, which is never allocated at admission.
	EIP bool
}

// Serve lets the webhook allocate with al (once the PodAddress controller
// runs); only while elected is closed does it allocate.
func (a *Admission) Serve(al Allocator, elected <-chan struct{}) {
	a.state.Store(&admissionState{al: al, elected: elected})
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
	var want Request
	if st != nil {
		w, asked, err := st.al.Request(ctx, pod)
		if err != nil || !asked {
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
		want = Request{Syntax: pr.Syntax, ReadinessGate: pr.ReadinessGate}
	}
	if want.ReadinessGate && podannotation.AddReadinessGate(pod) {
		changed = true
	}
	// An EIP is never allocated here, whatever the Pod's allocate-at-
	// admission says: it is a billed, daily-limited cloud allocation, and
	// it binds to the Pod's IP, which exists only once the Pod runs. The
	// controller allocates it; a fallback to ports is its call too.
	if st != nil && !want.EIP && podannotation.AllocateAtAdmission(pod, want.Syntax) && !ptrTrue(req.DryRun) && isClosed(st.elected) {
		bs, err := a.allocate(ctx, st.al, pod)
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

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func ptrTrue(b *bool) bool { return b != nil && *b }

// allocate names a generateName Pod, as the API server would after
// admission (the PodAddress needs the name now), and has al allocate.
func (a *Admission) allocate(ctx context.Context, al Allocator, pod *corev1.Pod) ([]v1alpha1.PortBinding, error) {
	if pod.Name == "" {
		if pod.GenerateName == "" {
			return nil, nil
		}
		pod.Name = pod.GenerateName + utilrand.String(5)
	}
	return al.AllocateAtAdmission(ctx, pod, time.Now().Add(a.grace))
}

// Options are the webhooks the server serves; nil ones are not.
type Options struct {
	// Admission is the Pod address admission webhook.
	Admission *Admission
	// RandHostPort is the random hostPort webhook.
	RandHostPort *randhostport.Webhook
}

// Setup registers the webhooks of o on mgr's webhook server. Both serve
// Pods only and need no CRD, so they start at once, safe-start or not;
// until the PodAddress controller runs (Serve), admission only adds
// readiness gates.
func Setup(mgr ctrl.Manager, o Options) error {
	if o.Admission != nil {
		mgr.GetWebhookServer().Register(AdmissionPath, &webhook.Admission{Handler: o.Admission})
	}
	if o.RandHostPort != nil {
		return randhostport.Setup(mgr, o.RandHostPort)
	}
	return nil
}
