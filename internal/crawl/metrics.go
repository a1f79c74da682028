package crawl

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the fetch role's Prometheus series, registered on the
// registry passed to NewFetcher (nil: created but not registered).
type metrics struct {
	fetchErrors  *prometheus.CounterVec
	robotsShared prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spider_fetch_errors_total", Help: "Fetches that failed without an HTTP response, by cause.",
		}, []string{"cause"}),
		robotsShared: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_robots_shared_total", Help: "robots.txt answers taken from another process of the crawl instead of fetched.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.fetchErrors, m.robotsShared)
	}
	return m
}

// schedMetrics are the scheduling role's series.
type schedMetrics struct {
	pages      *prometheus.CounterVec
	discovered prometheus.Counter
	retries    prometheus.Counter
	duplicates prometheus.Counter
	nearDups   prometheus.Counter
}

func newSchedMetrics(reg prometheus.Registerer) *schedMetrics {
	m := &schedMetrics{
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spider_pages_total", Help: "URLs completed, by result row (the crawl result table of docs/design.md §3).",
		}, []string{"result"}),
		discovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_discovered_urls_total", Help: "New URLs added to the frontier.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_retries_total", Help: "URLs put back for a retry (5xx, 429, reset, refused, robots unavailable).",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_duplicate_content_total", Help: "Pages whose text was identical to an earlier page's.",
		}),
		nearDups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spider_near_duplicate_content_total", Help: "Pages whose text's SimHash was within --near-dup-distance bits of an earlier page's (not identical).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.pages, m.discovered, m.retries, m.duplicates, m.nearDups)
	}
	return m
}

// rateLimiter spaces requests over the whole crawl (Config.MaxRate). A nil
// or zero-rate limiter does not wait.
type rateLimiter struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time
}

func newRateLimiter(perSecond float64) *rateLimiter {
	if perSecond <= 0 {
		return &rateLimiter{}
	}
	return &rateLimiter{interval: time.Duration(float64(time.Second) / perSecond)}
}

// wait blocks until the next request slot or until ctx ends.
func (r *rateLimiter) wait(ctx context.Context) {
	if r.interval == 0 {
		return
	}
	r.mu.Lock()
	now := time.Now()
	if r.next.Before(now) {
		r.next = now
	}
	at := r.next
	r.next = r.next.Add(r.interval)
	r.mu.Unlock()
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}
