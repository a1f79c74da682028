package frontier

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the frontier's Prometheus metrics. The counters exist even
// without a Registerer, so the code that updates them needs no nil checks.
type metrics struct {
	reg        prometheus.Registerer
	registered []prometheus.Collector

	pushed  prometheus.Counter
	spilled prometheus.Counter
	leases  prometheus.Counter
	retries prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, f *Frontier) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "spider", Subsystem: "frontier", Name: name, Help: help})
	}
	m := &metrics{
		reg:     reg,
		pushed:  counter("pushed_total", "URLs pushed into the frontier."),
		spilled: counter("spilled_total", "URLs written to the spill files because memory was full."),
		leases:  counter("leases_total", "Leases handed out by Next."),
		retries: counter("retries_total", "Leases put back with Done(Retry)."),
	}
	if reg == nil {
		return m, nil
	}
	gauge := func(name, help string, labels prometheus.Labels, v func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "spider", Subsystem: "frontier", Name: name, Help: help, ConstLabels: labels,
		}, func() float64 {
			f.mu.Lock()
			defer f.mu.Unlock()
			return v()
		})
	}
	cs := []prometheus.Collector{
		m.pushed, m.spilled, m.leases, m.retries,
		gauge("urls", "URLs queued, by location.", prometheus.Labels{"location": "memory"}, func() float64 { return float64(f.mem) }),
		gauge("urls", "URLs queued, by location.", prometheus.Labels{"location": "spill"}, func() float64 { return float64(f.spill.total) }),
		gauge("leases", "Leases outstanding.", nil, func() float64 { return float64(f.leased) }),
		gauge("keys", "Distinct politeness keys with URLs in memory.", nil, func() float64 { return float64(f.withURLs) }),
		gauge("back_queues", "Back queues in use.", nil, func() float64 { return float64(f.active) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return nil, fmt.Errorf("cannot register frontier metrics (one Registerer per frontier): %w", err)
		}
		m.registered = append(m.registered, c)
	}
	return m, nil
}

func (m *metrics) unregister() {
	for _, c := range m.registered {
		m.reg.Unregister(c)
	}
	m.registered = nil
}
