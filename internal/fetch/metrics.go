package fetch

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Client's Prometheus collectors; a nil *metrics records
// nothing.
type metrics struct {
	requests *prometheus.CounterVec
	bytes    prometheus.Counter
	duration prometheus.Histogram
}

// newMetrics registers the fetch collectors on reg; nil reg means no
// metrics.
func newMetrics(reg prometheus.Registerer, res *Resolver) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spider_fetch_requests_total",
			Help: "HTTP requests sent (one per redirect hop), by outcome: a status label (200, 404, 30x, 4xx, 5xx, ...) or an error class (timeout, dns, reset, ...).",
		}, []string{"outcome"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_fetch_bytes_total",
			Help: "Response body bytes received on the wire (before content decoding).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "spider_fetch_duration_seconds",
			Help:    "Time of one request/response exchange, body included.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	collectors := []prometheus.Collector{
		m.requests, m.bytes, m.duration,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "spider_fetch_dns_lookups_total",
			Help: "DNS look-ups performed (cache misses after single-flight).",
		}, func() float64 { return float64(res.Stats().Lookups) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "spider_fetch_dns_cache_hits_total",
			Help: "DNS answers served from the cache.",
		}, func() float64 { return float64(res.Stats().CacheHits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "spider_fetch_dns_failures_total",
			Help: "DNS look-ups that failed or found no address.",
		}, func() float64 { return float64(res.Stats().Failures) }),
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("cannot register fetch metrics (one registry per Client): %w", err)
		}
	}
	return m, nil
}

// observe records one exchange.
func (m *metrics) observe(outcome string, wireBytes int64, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(outcome).Inc()
	if wireBytes > 0 {
		m.bytes.Add(float64(wireBytes))
	}
	m.duration.Observe(d.Seconds())
}
