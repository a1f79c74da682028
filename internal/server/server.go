package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed static templates openapi.json
var assets embed.FS

// MinTokenLen is the shortest control token accepted.
const MinTokenLen = 16

// Options configures a Server. The zero value serves empty pages: no
// index, no crawl, no control.
type Options struct {
	// Searcher answers the search page and /api/search; nil: they answer
	// 503 saying to build the index.
	Searcher Searcher
	// Crawl feeds the dashboard and /api/crawl; nil: 503.
	Crawl CrawlView
	// Control changes the crawl; nil: the control endpoints answer 501
	// (the crawl does not run in this process).
	Control Controller
	// Token is the bearer token the control endpoints require (at least
	// MinTokenLen bytes); empty: control is refused with 403. It is never
	// logged.
	Token string
	// Registry is served at /metrics, and the server's own metrics
	// (spider_http_*) are registered on it; nil: a new registry.
	Registry *prometheus.Registry
	// Logger logs failed requests; nil: discard.
	Logger *slog.Logger
	// PageSize is the number of hits per search page; default 10.
	PageSize int
	// CacheSize bounds the search caches in entries: the rendered
	// answers of the search page and /api/search, and the search results
	// behind them (see CacheTTL); 0 means DefaultCacheSize, negative
	// disables both caches.
	CacheSize int
	// CacheBytes bounds the rendered answers' cache in bytes; 0 means
	// DefaultCacheBytes.
	CacheBytes int64
	// CacheTTL is how long a cached answer is served at most; every entry
	// is dropped as soon as the Searcher's Stats change (a new index
	// version), so the TTL only bounds what Stats cannot see, such as a
	// new PageRank file. Default DefaultCacheTTL.
	CacheTTL time.Duration
	// MaxSearches bounds the index searches running at once; the others
	// wait their turn, within the search time limit (10 s, then 504).
	// Searches are CPU-bound: more of them at once than there are cores
	// only slows each down, and requests the cache could answer at once
	// queue behind them for the CPU. 0 means 2×GOMAXPROCS; negative: no
	// bound.
	MaxSearches int
	// AllowedHosts are the host names (besides the listening address and,
	// on loopback, localhost) that Serve answers to in the Host header;
	// "*.example.org" allows subdomains. Other names get 421: a page that
	// re-points its own name at this server (DNS rebinding) cannot read
	// it. Handler does not check Host: whoever mounts it decides.
	AllowedHosts []string
}

// Server is the HTTP front of spider: search page, dashboard, JSON API,
// /metrics and /healthz. Build it with New; Handler and Serve are safe for
// concurrent use.
type Server struct {
	opt       Options
	log       *slog.Logger
	tokenHash [sha256.Size]byte
	hasToken  bool
	pages     *template.Template
	static    http.Handler
	openapi   []byte
	mux       *http.ServeMux
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	lookups   *prometheus.CounterVec
	cache     *resultCache   // nil: no cache
	responses *responseCache // nil: no cache
	slots     chan struct{}  // one per search running; nil: no bound
}

// route is one endpoint; API routes (and /metrics, /healthz) are listed
// in openapi.json, which a test keeps in step with this table.
type route struct {
	method, pattern string
	control         bool // needs the bearer token
	h               func(*Server, http.ResponseWriter, *http.Request)
}

// routes is every endpoint the server has.
var routes = []route{
	{"GET", "/{$}", false, (*Server).searchPage},
	{"GET", "/dashboard", false, (*Server).dashboardPage},
	{"GET", "/static/", false, (*Server).staticFile},
	{"GET", "/api/search", false, (*Server).apiSearch},
	{"GET", "/api/index", false, (*Server).apiIndex},
	{"GET", "/api/crawl", false, (*Server).apiCrawl},
	{"POST", "/api/crawl/pause", true, (*Server).apiPause},
	{"POST", "/api/crawl/resume", true, (*Server).apiResume},
	{"POST", "/api/crawl/stop", true, (*Server).apiStop},
	{"POST", "/api/crawl/seeds", true, (*Server).apiSeeds},
	{"PUT", "/api/topics/{topic}/priority", true, (*Server).apiTopicPriority},
	{"GET", "/api/openapi.json", false, (*Server).apiOpenAPI},
	{"GET", "/metrics", false, (*Server).metrics},
	{"GET", "/healthz", false, (*Server).healthz},
}

// New checks opt and builds the server.
func New(opt Options) (*Server, error) {
	if opt.Token != "" && len(opt.Token) < MinTokenLen {
		return nil, fmt.Errorf("cannot use the control token: it has %d characters, use at least %d (for example: openssl rand -hex 32)", len(opt.Token), MinTokenLen)
	}
	if opt.PageSize <= 0 {
		opt.PageSize = 10
	}
	if opt.PageSize > maxLimit {
		return nil, fmt.Errorf("cannot show %d hits per page: use at most %d", opt.PageSize, maxLimit)
	}
	if opt.Registry == nil {
		opt.Registry = prometheus.NewRegistry()
	}
	if opt.CacheBytes < 0 {
		return nil, fmt.Errorf("cannot use a cache of %d bytes: give 0 (the default, %d MiB) or more", opt.CacheBytes, DefaultCacheBytes>>20)
	}
	s := &Server{opt: opt, log: opt.Logger}
	if opt.MaxSearches >= 0 {
		s.slots = make(chan struct{}, cmp.Or(opt.MaxSearches, 2*runtime.GOMAXPROCS(0)))
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opt.Token != "" {
		s.tokenHash, s.hasToken = sha256.Sum256([]byte(opt.Token)), true
	}
	var err error
	s.pages, err = template.ParseFS(assets, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("cannot parse the page templates: %w", err)
	}
	sub, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("cannot open the static files: %w", err)
	}
	s.static = http.StripPrefix("/static/", http.FileServer(http.FS(noDirFS{sub})))
	if s.openapi, err = assets.ReadFile("openapi.json"); err != nil {
		return nil, fmt.Errorf("cannot read openapi.json: %w", err)
	}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "spider_http_requests_total", Help: "HTTP requests served, by route and status code.",
	}, []string{"route", "code"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "spider_http_request_duration_seconds", Help: "HTTP request latency by route.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"route"})
	if err := registerOrReuse(opt.Registry, s.requests, &s.requests); err != nil {
		return nil, err
	}
	s.lookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "spider_search_cache_requests_total",
		Help: "Search cache look-ups by cache (page and api: rendered answers; result: search results) and result (hit or miss).",
	}, []string{"cache", "result"})
	if err := registerOrReuse(opt.Registry, s.latency, &s.latency); err != nil {
		return nil, err
	}
	if err := registerOrReuse(opt.Registry, s.lookups, &s.lookups); err != nil {
		return nil, err
	}
	if opt.CacheSize >= 0 {
		size, ttl := cmp.Or(opt.CacheSize, DefaultCacheSize), cmp.Or(opt.CacheTTL, DefaultCacheTTL)
		counters := func(cache string) cacheCounters {
			return cacheCounters{hit: s.lookups.WithLabelValues(cache, "hit"), miss: s.lookups.WithLabelValues(cache, "miss")}
		}
		s.cache = newResultCache(size, ttl, counters("result"))
		s.responses = newResponseCache(size, cmp.Or(opt.CacheBytes, DefaultCacheBytes), ttl, counters("page"), counters("api"))
	}
	s.mux = http.NewServeMux()
	for _, rt := range routes {
		s.mux.Handle(rt.method+" "+rt.pattern, s.wrap(rt))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w)
		writeError(w, http.StatusNotFound, fmt.Sprintf("no page %s %s here: see /api/openapi.json for the API", r.Method, r.URL.Path))
	})
	return s, nil
}

// registerOrReuse registers c, or reuses the collector already registered
// under the same name (two servers on one registry).
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C, dst *C) error {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			*dst = existing
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("cannot register the server's metrics: %w", err)
	}
	return nil
}

// Handler is the server's HTTP handler. It does not check the Host
// header (Serve does).
func (s *Server) Handler() http.Handler { return s.mux }

// Serve answers on ln until ctx ends, then shuts down, giving requests in
// progress up to 5 seconds. It returns nil after a shutdown caused by ctx.
// Requests whose Host names neither ln's address nor Options.AllowedHosts
// are answered 421 (see hostCheck).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           newHostCheck(s.mux, ln.Addr(), s.opt.AllowedHosts),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("cannot serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("cannot shut the HTTP server down: %w", err)
	}
	<-errc
	return nil
}

// contentSecurityPolicy allows nothing but this server's own files: no
// inline script or style, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func setHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// statusWriter remembers the status code for the metrics.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// wrap adds the security headers, the bearer check of control routes and
// the metrics.
func (s *Server) wrap(rt route) http.Handler {
	name := rt.method + " " + rt.pattern
	lat := s.latency.WithLabelValues(name)
	ok := s.requests.WithLabelValues(name, "200") // the common case, resolved once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		setHeaders(sw)
		if !rt.control || s.authorized(sw, r) {
			rt.h(s, sw, r)
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		lat.Observe(time.Since(start).Seconds())
		if sw.code == http.StatusOK {
			ok.Inc()
		} else {
			s.requests.WithLabelValues(name, strconv.Itoa(sw.code)).Inc()
		}
	})
}

// authorized checks the bearer token in constant time (comparing SHA-256
// digests, so the token's length does not leak either) and answers 401 or
// 403 itself when it fails.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if !s.hasToken {
		writeError(w, http.StatusForbidden, "control is disabled: start the server with --token-file FILE or SPIDER_TOKEN set, then send \"Authorization: Bearer TOKEN\"")
		return false
	}
	auth := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="spider"`)
		writeError(w, http.StatusUnauthorized, "this endpoint changes the crawl: send \"Authorization: Bearer TOKEN\" with the server's control token")
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="spider", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "wrong control token: use the token of the server's --token-file or SPIDER_TOKEN")
		return false
	}
	return true
}

func (s *Server) staticFile(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	s.static.ServeHTTP(w, r)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(s.opt.Registry, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}).ServeHTTP(w, r)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

func (s *Server) apiOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.openapi)
}
