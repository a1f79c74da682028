package layered

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	fetched prometheus.Counter
	rounds  prometheus.Counter
	tasks   *prometheus.CounterVec
	noise   *prometheus.CounterVec
	dups    *prometheus.CounterVec
}

// newMetrics registers the layered crawl's metrics on reg. A registry that
// already holds them (a second Crawler on it) gets the existing ones.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		fetched: prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_layered_fetched_total", Help: "URLs fetched by the layered crawl's map tasks in this process."}),
		rounds:  prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_layered_rounds_total", Help: "Rounds of the layered crawl completed."}),
		tasks:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_layered_tasks_total", Help: "Map tasks run by this process, by kind."}, []string{"kind"}),
		noise:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_layered_noise_removed_total", Help: "Link occurrences removed as noise, by pass (dom, cluster, outlier)."}, []string{"pass"}),
		dups:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spider_layered_duplicates_total", Help: "Link occurrences removed as duplicates, by list (visit, cache, store)."}, []string{"list"}),
	}
	m.fetched = register(reg, m.fetched)
	m.rounds = register(reg, m.rounds)
	m.tasks = register(reg, m.tasks)
	m.noise = register(reg, m.noise)
	m.dups = register(reg, m.dups)
	return m
}

func register[T prometheus.Collector](reg prometheus.Registerer, c T) T {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing
			}
		}
	}
	return c
}
