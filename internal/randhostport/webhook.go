package randhostport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
)

const (
	// WebhookPath is where the webhook is served, on the provider's one
	// webhook server; the package's MutatingWebhookConfiguration names it.
	WebhookPath = "/mutate-v1-pod-randhostport"

	// DefaultReservation is how long ports given at admission are counted
	// for a Pod that does not appear: a Pod refused after the webhook (by
	// a later webhook or validation) never does.
	DefaultReservation = time.Minute

	// syncWait bounds how long an admission waits for the counts to be
	// rebuilt at start, within the API server's timeout of the webhook.
	syncWait = 3 * time.Second
)

// A Webhook is the Pod mutating webhook of random host ports. It counts
// the Pods on each port from the Pods' labels, as the manager's Pod
// informer sees them come and go: the counts of a new process are rebuilt
// from the existing Pods before it answers its first admission.
//
// Between admission and the Pod's creation, the ports given are counted as
// a reservation, which the Pod takes over when the informer sees it.
type Webhook struct {
	alloc       *Allocator
	reservation time.Duration
	log         logging.Logger
	now         func() time.Time
	cache       cache.Informers

	ready chan struct{}

	mu       sync.Mutex
	pods     map[types.UID][]int32 // host ports counted per Pod
	reserved []reservation
}

type reservation struct {
	ports []int32 // sorted
	until time.Time
}

// New returns a webhook that picks host ports from r.
func New(r Range, log logging.Logger) *Webhook {
	return &Webhook{
		alloc:       NewAllocator(r),
		reservation: DefaultReservation,
		log:         log,
		now:         time.Now,
		ready:       make(chan struct{}),
		pods:        map[types.UID][]int32{},
	}
}

// Setup serves w on mgr's webhook server and counts Pods from mgr's cache.
func Setup(mgr ctrl.Manager, w *Webhook) error {
	w.cache = mgr.GetCache()
	mgr.GetWebhookServer().Register(WebhookPath, &webhook.Admission{Handler: w})
	return mgr.Add(w)
}

// Allocator is the webhook's allocator, for tests and metrics.
func (w *Webhook) Allocator() *Allocator { return w.alloc }

// NeedLeaderElection is false: every replica serves the webhook, so every
// replica counts.
func (w *Webhook) NeedLeaderElection() bool { return false }

// Start counts the Pods of the manager's cache, then keeps counting as
// they change, and expires reservations until ctx is done.
func (w *Webhook) Start(ctx context.Context) error {
	inf, err := w.cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("cannot watch Pods: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.observe(o) },
		UpdateFunc: func(_, o any) { w.observe(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				w.set(p.UID, nil)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("cannot watch Pods: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil // stopped before the first list
	}
	close(w.ready)
	lo, hi := w.alloc.Spread()
	w.log.Info("Counted the host ports of existing Pods", "range", w.alloc.Range().String(), "leastUsed", lo, "mostUsed", hi)

	t := time.NewTicker(w.reservation / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			w.expire()
		}
	}
}

// observe counts the host ports of a Pod that holds them: one that has not
// terminated.
func (w *Webhook) observe(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	var ports []int32
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		ports = HostPorts(p.Labels)
	}
	w.set(p.UID, ports)
}

// set makes ports the host ports counted for the Pod uid. A Pod first seen
// with ports takes over a reservation of the same ports, which are
// counted already.
func (w *Webhook) set(uid types.UID, ports []int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old, known := w.pods[uid]
	if slices.Equal(old, ports) && (known || len(ports) == 0) {
		return
	}
	if len(ports) == 0 {
		delete(w.pods, uid)
	} else {
		w.pods[uid] = ports
	}
	if !known {
		if i := slices.IndexFunc(w.reserved, func(r reservation) bool { return slices.Equal(r.ports, ports) }); i >= 0 {
			w.reserved = slices.Delete(w.reserved, i, i+1)
			return
		}
	}
	w.alloc.Add(-1, old...)
	w.alloc.Add(1, ports...)
}

// expire stops counting the reservations of Pods that never appeared.
func (w *Webhook) expire() {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reserved = slices.DeleteFunc(w.reserved, func(r reservation) bool {
		if now.Before(r.until) {
			return false
		}
		w.alloc.Add(-1, r.ports...)
		return true
	})
}

// Handle admits one Pod. A Pod that asks for random host ports with a
// ports annotation that does not resolve is refused, with the reason; so
// is one asking for more ports than the range has, and any Pod while the
// counts are not rebuilt yet (the API server retries as the Pod's
// controller creates it again).
func (w *Webhook) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !Asked(pod) {
		return admission.Allowed("")
	}
	cps, err := ContainerPorts(pod)
	if err != nil {
		return admission.Denied(err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	select {
	case <-w.ready:
	case <-ctx.Done():
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("random hostPorts: the counts of existing Pods are not rebuilt yet"))
	}
	hps, err := w.alloc.Take(len(cps))
	if err != nil {
		return admission.Denied(err.Error())
	}
	if req.DryRun != nil && *req.DryRun {
		// The Pod is answered as it would be, and nothing stays counted.
		w.alloc.Add(-1, hps...)
	} else {
		sorted := slices.Sorted(slices.Values(hps))
		w.mu.Lock()
		w.reserved = append(w.reserved, reservation{ports: sorted, until: w.now().Add(w.reservation)})
		w.mu.Unlock()
	}
	Mutate(pod, cps, hps)
	out, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
}
