package websim

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Entry is one request as the web saw it.
type Entry struct {
	// Time is when the request arrived (the handler started).
	Time time.Time `json:"time"`
	// End is when the handler finished (after the body was written).
	End time.Time `json:"end"`
	// Host is the request's host name, lower-case, without port ("" if none).
	Host string `json:"host"`
	// URL is "http://HOST:PORT/path?query" as requested (the port is the web's).
	URL string `json:"url"`
	// Path is the path and query ("/s/1/?q=1").
	Path string `json:"path"`
	// Method is the HTTP method.
	Method string `json:"method"`
	// UserAgent is the User-Agent header.
	UserAgent string `json:"user_agent"`
	// Status is the status code sent, or 0 when no answer was sent (reset, or the client
	// gave up while the request was hanging).
	Status int `json:"status"`
	// Bytes is the number of body bytes written (after compression).
	Bytes int64 `json:"bytes"`
	// OpenAtArrival is the number of requests to Host in flight when this one arrived,
	// counting itself.
	OpenAtArrival int `json:"open_at_arrival"`
	// Misrouted is true in PerIP mode when the request arrived on another host's address.
	Misrouted bool `json:"misrouted,omitempty"`
}

// AccessLog records requests for tests and benchmarks. It keeps at most a fixed number of
// entries in memory (Config.LogCap) and can mirror every entry as a JSON line to a writer.
// It is safe for concurrent use.
type AccessLog struct {
	mu        sync.Mutex
	cap       int
	entries   []Entry
	dropped   int
	misrouted int
	open      map[string]int
	out       io.Writer
	enc       *json.Encoder
	werr      error
	logger    *slog.Logger
	grew      chan struct{} // closed (and cleared) when an entry is recorded: WaitFor
}

func newAccessLog(capacity int, out io.Writer, logger *slog.Logger) *AccessLog {
	l := &AccessLog{cap: capacity, open: make(map[string]int), out: out, logger: logger}
	if out != nil {
		l.enc = json.NewEncoder(out)
		l.enc.SetEscapeHTML(false)
	}
	return l
}

// begin counts a request to host as in flight and returns the number in flight.
func (l *AccessLog) begin(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open[host]++
	return l.open[host]
}

// finish records e and ends the in-flight count begun for e.Host.
func (l *AccessLog) finish(e Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.open[e.Host] - 1; n > 0 {
		l.open[e.Host] = n
	} else {
		delete(l.open, e.Host)
	}
	if e.Misrouted {
		l.misrouted++
	}
	if l.grew != nil {
		close(l.grew)
		l.grew = nil
	}
	if l.cap > 0 && len(l.entries) < l.cap {
		l.entries = append(l.entries, e)
	} else {
		l.dropped++
	}
	if l.enc != nil && l.werr == nil {
		if err := l.enc.Encode(e); err != nil {
			l.werr = err
			l.logger.Warn("cannot write access log; further entries are not written", "err", err)
		}
	}
}

// Entries returns a copy of the recorded entries sorted by arrival time.
func (l *AccessLog) Entries() []Entry {
	l.mu.Lock()
	out := slices.Clone(l.entries)
	l.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Entry) int { return a.Time.Compare(b.Time) })
	return out
}

// HostEntries returns the entries of one host (name without port, case-insensitive),
// sorted by arrival time.
func (l *AccessLog) HostEntries(host string) []Entry {
	host = normHost(host)
	var out []Entry
	for _, e := range l.Entries() {
		if e.Host == host {
			out = append(out, e)
		}
	}
	return out
}

// Hosts returns the hosts that received requests, sorted.
func (l *AccessLog) Hosts() []string {
	l.mu.Lock()
	set := map[string]bool{}
	for _, e := range l.entries {
		set[e.Host] = true
	}
	l.mu.Unlock()
	out := make([]string, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// Len returns the number of entries kept.
func (l *AccessLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Dropped returns the number of entries not kept because the log was full.
func (l *AccessLog) Dropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// Misrouted returns the number of PerIP requests that arrived on another host's address.
func (l *AccessLog) Misrouted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.misrouted
}

// Reset forgets every entry and counter (requests in flight stay counted as open).
func (l *AccessLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
	l.dropped = 0
	l.misrouted = 0
}

// MaxOpen returns the largest number of requests to host that were in flight together
// (the largest OpenAtArrival); 0 if host received none.
func (l *AccessLog) MaxOpen(host string) int {
	m := 0
	for _, e := range l.HostEntries(host) {
		m = max(m, e.OpenAtArrival)
	}
	return m
}

// MinGap returns the smallest time between the arrivals of two successive requests to
// host, every request counted (robots.txt included); ok is false with fewer than two.
func (l *AccessLog) MinGap(host string) (gap time.Duration, ok bool) {
	return l.MinGapFunc(host, nil)
}

// MinGapFunc is MinGap over the entries for which keep returns true (nil keeps all), e.g.
// to leave robots.txt out.
func (l *AccessLog) MinGapFunc(host string, keep func(Entry) bool) (gap time.Duration, ok bool) {
	var prev time.Time
	n := 0
	for _, e := range l.HostEntries(host) {
		if keep != nil && !keep(e) {
			continue
		}
		if n > 0 {
			if d := e.Time.Sub(prev); !ok || d < gap {
				gap, ok = d, true
			}
		}
		prev = e.Time
		n++
	}
	return gap, ok
}

// Count returns how many times rawURL was requested. rawURL is an absolute URL (its
// port, scheme and fragment are ignored, its host is compared case-insensitively) or a
// "/path?query" matched on every host.
func (l *AccessLog) Count(rawURL string) int {
	host, pq := splitURL(rawURL)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		if e.Path == pq && (host == "" || e.Host == host) {
			n++
		}
	}
	return n
}

// Duplicates returns the URLs requested more than once, with their request counts,
// leaving out robots.txt (and /robots-real.txt) and retries (see Retries): a URL is a
// duplicate when it was requested again after a complete answer below 500.
func (l *AccessLog) Duplicates() map[string]int {
	dup, _ := l.repeats()
	return dup
}

// Retries returns the URLs requested again after an answer that invites a retry (status
// 0, i.e. reset or abandoned, or 500 and above), with the number of such repeats.
func (l *AccessLog) Retries() map[string]int {
	_, retry := l.repeats()
	return retry
}

func (l *AccessLog) repeats() (dup, retry map[string]int) {
	dup, retry = map[string]int{}, map[string]int{}
	last := map[string]int{} // URL → status of its previous request
	count := map[string]int{}
	for _, e := range l.Entries() {
		p := e.Path
		if i := strings.IndexByte(p, '?'); i >= 0 {
			p = p[:i]
		}
		if p == "/robots.txt" || p == "/robots-real.txt" {
			continue
		}
		prev, seen := last[e.URL]
		last[e.URL] = e.Status
		count[e.URL]++
		if !seen {
			continue
		}
		if prev == 0 || prev >= 500 {
			retry[e.URL]++
			continue
		}
		dup[e.URL] = 0
	}
	for u := range dup {
		dup[u] = count[u]
	}
	return dup, retry
}

func normHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	return h
}

// splitURL returns the lower-case host (without port) and the path+query of rawURL.
func splitURL(rawURL string) (host, pathQuery string) {
	if strings.HasPrefix(rawURL, "/") && !strings.HasPrefix(rawURL, "//") {
		if i := strings.IndexByte(rawURL, '#'); i >= 0 {
			rawURL = rawURL[:i]
		}
		return "", rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", rawURL
	}
	pq := u.EscapedPath()
	if pq == "" {
		pq = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		pq += "?" + u.RawQuery
	}
	return normHost(u.Host), pq
}

// busyCounter counts requests per URL for FeatureUnavailable, bounded: when it holds
// limit URLs it starts afresh (those URLs then answer 503 again).
type busyCounter struct {
	mu    sync.Mutex
	limit int
	n     map[string]int
}

func (b *busyCounter) init(limit int) {
	b.limit = limit
	b.n = make(map[string]int)
}

// hit counts a request of key and returns how many requests of key came before it.
func (b *busyCounter) hit(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.n) >= b.limit {
		clear(b.n)
	}
	c := b.n[key]
	b.n[key] = c + 1
	return c
}
