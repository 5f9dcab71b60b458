package clb

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// codeOK is the code label of a successful call.
const codeOK = "OK"

// metrics are the Prometheus collectors of one Pool. Without a Registerer
// they are still updated, just never exported, so no call site branches.
type metrics struct {
	calls     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	throttled *prometheus.CounterVec
	busy      *prometheus.CounterVec
	batchSize *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		calls: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tencentcloud_api_calls_total",
			Help: "Tencent Cloud API calls by action and result code (OK on success).",
		}, []string{"action", "code"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tencentcloud_api_call_duration_seconds",
			Help:    "Duration of Tencent Cloud API calls, excluding time spent waiting for the rate limiter.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"action"})),
		throttled: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tencentcloud_api_throttled_total",
			Help: "Tencent Cloud API calls answered RequestLimitExceeded.",
		}, []string{"action"})),
		busy: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tencentcloud_api_busy_total",
			Help: "Writes refused because the load balancer had a task in progress, locally or by the API.",
		}, []string{"action"})),
		batchSize: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tencentcloud_api_batch_size",
			Help:    "Items carried by one coalesced API call (ids described or targets changed).",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500},
		}, []string{"action"})),
	}
}

// register registers c, or returns the collector already registered under
// the same name so that several pools (tests, or one per manager) share it.
// Any other registration failure leaves c unregistered: metrics must never
// stop the provider.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
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

// observeCall records one answered (or failed) API call.
func (m *metrics) observeCall(action, code string, took time.Duration) {
	if code == "" {
		code = codeOK
	}
	m.calls.WithLabelValues(action, code).Inc()
	m.duration.WithLabelValues(action).Observe(took.Seconds())
}
