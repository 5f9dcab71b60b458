package podaddress

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/portalloc"
)

// A recorder exports the per-Pod address metrics.
type recorder struct {
	bindLatency prometheus.Histogram
	pending     prometheus.Gauge
	slots       *prometheus.GaugeVec

	// pendingKeys are the PodAddresses counted by pending: only those, so
	// that 10k bound ones cost no entry, and a state change costs no walk
	// over every PodAddress.
	mu          sync.Mutex
	pendingKeys map[types.NamespacedName]struct{}
}

func newRecorder(reg prometheus.Registerer) *recorder {
	r := &recorder{
		bindLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "podaddress_bind_latency_seconds",
			Help:    "Time from a Pod's creation until all its public addresses are bound.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120},
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podaddress_pending_bindings",
			Help: "PodAddresses not Bound, Held or Isolated (waiting for ports, a backend or the cloud).",
		}),
		slots: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "portpool_slots",
			Help: "Slots (ports or segments) of a pool's load balancer, by state: allocated or free.",
		}, []string{"pool", "loadbalancer", "state"}),
		pendingKeys: map[types.NamespacedName]struct{}{},
	}
	r.bindLatency = tcapi.Register(reg, r.bindLatency)
	r.pending = tcapi.Register(reg, r.pending)
	r.slots = tcapi.Register(reg, r.slots)
	return r
}

func (r *recorder) bound(pa *v1alpha1.PodAddress, pod *corev1.Pod, at time.Time) {
	r.bindLatency.Observe(at.Sub(pod.CreationTimestamp.Time).Seconds())
	r.state(pa)
}

func (r *recorder) state(pa *v1alpha1.PodAddress) {
	s := pa.Status.State
	if v1alpha1.Serving(s) || s == v1alpha1.StateHeld || s == v1alpha1.StateIsolated {
		r.forget(pa)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pendingKeys[client.ObjectKeyFromObject(pa)] = struct{}{}
	r.pending.Set(float64(len(r.pendingKeys)))
}

func (r *recorder) forget(pa *v1alpha1.PodAddress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pendingKeys, client.ObjectKeyFromObject(pa))
	r.pending.Set(float64(len(r.pendingKeys)))
}

// usage exports the allocated and free slots of load balancers of a pool.
func (r *recorder) usage(pool string, lbs []portalloc.LBStats) {
	for _, lb := range lbs {
		r.slots.WithLabelValues(pool, lb.LB, "allocated").Set(float64(lb.Allocated))
		r.slots.WithLabelValues(pool, lb.LB, "free").Set(float64(lb.Free))
	}
}
