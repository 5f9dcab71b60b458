package tcapi

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CodeOK is the code label of a successful call.
const CodeOK = "OK"

// Metrics are the Prometheus collectors of one service client pool. Without a Registerer
// they are still updated, just never exported, so no call site branches.
type Metrics struct {
	Calls     *prometheus.CounterVec
	Duration  *prometheus.HistogramVec
	Throttled *prometheus.CounterVec
	Busy      *prometheus.CounterVec
	BatchSize *prometheus.HistogramVec
}

// NewMetrics builds the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		Calls: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tencentcloud_api_calls_total",
			Help: "Tencent Cloud API calls by action and result code (OK on success).",
		}, []string{"action", "code"})),
		Duration: Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tencentcloud_api_call_duration_seconds",
			Help:    "Duration of Tencent Cloud API calls, excluding time spent waiting for the rate limiter.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"action"})),
		Throttled: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tencentcloud_api_throttled_total",
			Help: "Tencent Cloud API calls answered RequestLimitExceeded.",
		}, []string{"action"})),
		Busy: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tencentcloud_api_busy_total",
			Help: "Writes refused because the resource had a task in progress, locally or by the API.",
		}, []string{"action"})),
		BatchSize: Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tencentcloud_api_batch_size",
			Help:    "Items carried by one coalesced API call (ids described or targets changed).",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500},
		}, []string{"action"})),
	}
}

// Register registers c, or returns the collector already registered under
// the same name so that several pools (tests, or one per manager) share it.
// Any other registration failure leaves c unregistered: metrics must never
// stop the provider.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// ObserveCall records one answered (or failed) API call.
func (m *Metrics) ObserveCall(action, code string, took time.Duration) {
	if code == "" {
		code = CodeOK
	}
	m.Calls.WithLabelValues(action, code).Inc()
	m.Duration.WithLabelValues(action).Observe(took.Seconds())
}
