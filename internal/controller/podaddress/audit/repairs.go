package audit

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/tcapi"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/targets"
)

// A Repair is the targets the audit found missing from a Bound
// PodAddress. It holds while the PodAddress stays bound as it was
// (boundAt): bound anew, its targets were registered since.
type Repair struct {
	BoundAt metav1.Time
	// seenAt is when the cloud was read: a finding read before the last
	// repair of the PodAddress ended may predate that repair.
	seenAt  time.Time
	Targets []clb.Target
}

// Repairs hands the audit's findings to the PodAddress reconciles, which
// re-register the targets through the binder, so that a repair never races
// the PodAddress's own registrations and deregistrations.
type Repairs struct {
	metrics *metrics

	mu   sync.Mutex
	m    map[types.NamespacedName]Repair
	done map[types.NamespacedName]time.Time // when each last repair ended
	wake chan ctrlevent.TypedGenericEvent[*v1alpha1.PodAddress]
}

// NewRepairs returns an empty Repairs whose drift is counted in reg.
func NewRepairs(reg prometheus.Registerer) *Repairs {
	return &Repairs{
		metrics: newMetrics(reg),
		m:       map[types.NamespacedName]Repair{}, done: map[types.NamespacedName]time.Time{},
		wake: make(chan ctrlevent.TypedGenericEvent[*v1alpha1.PodAddress], 1024),
	}
}

// add records rp for key and wakes its reconcile. A finding read from the
// cloud before the PodAddress's last repair ended is dropped: that repair
// may have put the targets back after the read (a round that overlaps
// the repair of the round before on a busy machine), and counting it again
// would report drift that is not there.
func (rs *Repairs) add(ctx context.Context, key types.NamespacedName, rp Repair) {
	rs.mu.Lock()
	if rp.seenAt.Before(rs.done[key]) {
		rs.mu.Unlock()
		return
	}
	for k, at := range rs.done {
		if time.Since(at) > time.Hour {
			delete(rs.done, k) // bounded: only recent repairs matter
		}
	}
	rs.m[key] = rp
	rs.mu.Unlock()
	targets.Notify(ctx, rs.wake, key)
}

// Record records, as a round of the Auditor does, that a read of the cloud
// at seenAt found targets ts missing from key, Bound since boundAt: the
// unit tests of the reconciles that repair them have no Auditor.
func (rs *Repairs) Record(ctx context.Context, key types.NamespacedName, boundAt metav1.Time, ts []clb.Target, seenAt time.Time) {
	rs.add(ctx, key, Repair{BoundAt: boundAt, seenAt: seenAt, Targets: ts})
}

// Get returns the repair waiting for key.
func (rs *Repairs) Get(key types.NamespacedName) (Repair, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rp, ok := rs.m[key]
	return rp, ok
}

// Finish drops the repair of key, records when it ended and counts the n
// targets it registered again.
func (rs *Repairs) Finish(key types.NamespacedName, n int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.m, key)
	rs.done[key] = time.Now()
	rs.metrics.drift.WithLabelValues(driftMissing).Add(float64(n))
}

// Drop drops the repair of key unperformed.
func (rs *Repairs) Drop(key types.NamespacedName) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.m, key)
}

// Wake carries the PodAddresses that have a repair waiting.
func (rs *Repairs) Wake() <-chan ctrlevent.TypedGenericEvent[*v1alpha1.PodAddress] { return rs.wake }

// metrics count the audit's rounds and the drift it repaired.
type metrics struct {
	drift  *prometheus.CounterVec
	audits prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		drift: tcapi.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podaddress_target_drift_total",
			Help: "Targets the audit found changed behind the provider's back and repaired, by drift: missing (re-registered), weight (reset) or foreign (deregistered).",
		}, []string{"drift"})),
		audits: tcapi.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podaddress_target_audits_total",
			Help: "Target audit rounds run, whether or not every load balancer could be read (an incomplete round is logged).",
		})),
	}
}
