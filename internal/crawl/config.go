package crawl

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration that reads and writes itself in YAML as a
// Go duration string ("1s", "250ms").
type Duration time.Duration

// UnmarshalYAML accepts a duration string such as "1.5s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("cannot read duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("cannot read duration %q (line %d): use forms like 500ms, 2s, 1m: %w", s, n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// relink reports whether depth levels overlap under a depth limit, so that
// a page may be fetched before its shortest path is known: then the
// state keeps each page's links (state.Options.Relink) and the fetcher
// the links the limit cut (Visit.Beyond), to pass a smaller depth on.
func (c Config) relink() bool {
	return c.MaxDepth >= 0 && (c.LooseDepth || c.Topics != "")
}

// DepthOverlaps reports whether depth levels overlap under a depth limit
// (MaxDepth ≥ 0 with LooseDepth or Topics): a State must then relink
// (state.Options.Relink, rstate.Options.Relink) for the limit to keep
// exactly the pages a level-by-level crawl fetches, and the fetcher fills
// Visit.Beyond.
func (c Config) DepthOverlaps() bool { return c.relink() }

// startGuard is added to a start-to-start delay (DelayFrom "start"), on
// top of Fetcher.arrivalBound's estimate of when the server saw a request:
// 1/64 of the delay (3 ms of 200 ms) for the estimate's own error (clock
// reads a goroutine switch away from the write); 0 for DelayFrom "done",
// whose gaps already include the answer time.
func (c Config) startGuard() time.Duration {
	if c.DelayFrom != DelayFromStart {
		return 0
	}
	return time.Duration(c.Delay) / 64
}

// Values of Config.DelayFrom.
const (
	DelayFromDone  = "done"
	DelayFromStart = "start"
)

// Config is everything a crawl needs. The zero value is not valid until
// Defaults has filled it; Load does that. Every field has a command-line
// flag of the same name in kebab case (see cmd/spider).
type Config struct {
	// Data is the data directory: crawl state, page files, records, WARC.
	// Default "./spider-data".
	Data string `yaml:"data"`
	// Seeds are the start URLs.
	Seeds []string `yaml:"seeds"`
	// MaxDepth is the largest link depth fetched (seeds have depth 0);
	// negative means unlimited. Default 5.
	MaxDepth int `yaml:"max_depth"`
	// LooseDepth lets depth levels overlap: by default (with MaxDepth ≥ 0)
	// the crawl is breadth-first by levels, so each page is fetched at its
	// shortest link depth and a depth limit keeps exactly the pages within
	// it. Loose, workers never wait for a level to finish (faster when a few
	// slow hosts hold a level), and a page may be fetched before its
	// shortest path is known. The embedded state then keeps each page's
	// links, those beyond the limit too (state.Options.Relink), and when a
	// fetched page is found at a smaller depth its links are discovered
	// again that much shallower: the crawl fetches the same pages as a
	// level-by-level one, none twice, though a page's record keeps the
	// depth it was fetched at. The Redis state of a master (spider master)
	// relinks the same way (rstate.Options.Relink), and a peer-to-peer
	// crawl always does under a depth limit, loose or not, since its
	// nodes' levels overlap.
	LooseDepth bool `yaml:"loose_depth"`
	// MaxPages stops the crawl after this many fetch attempts have completed
	// (over all runs of a resumed crawl); 0 means no limit.
	MaxPages int64 `yaml:"max_pages"`
	// Scope keeps the crawl inside: "host" (the seeds' host:port), "domain"
	// (the seeds' registrable domains), "seeds" (any seed host, the default),
	// "regexp" (URLs matching ScopeRegexp) or "any".
	Scope string `yaml:"scope"`
	// ScopeRegexp is the pattern for Scope "regexp".
	ScopeRegexp string `yaml:"scope_regexp"`
	// Concurrency is the number of fetch workers. Default 32.
	Concurrency int `yaml:"concurrency"`
	// PerHost is the most connections open to one host (or IP, with PerIP)
	// at once. Default 1.
	PerHost int `yaml:"per_host"`
	// Delay is the smallest gap between two requests to one host. A host's
	// robots.txt Crawl-delay raises it (up to MaxCrawlDelay). Default 1s.
	Delay Duration `yaml:"delay"`
	// DelayFrom says where Delay is counted from: "done" (the default: from
	// the end of the host's previous request, so gaps are Delay plus the
	// answer time) or "start" (from the start of the host's previous
	// request, still one at a time with PerHost 1; the rule of Scrapy's
	// DOWNLOAD_DELAY and of the peer benchmark, and a host then serves one
	// request per max(Delay, answer time)). "start" suits the single-node
	// engine, where the fetch starts when the lease is handed out; with
	// master–worker a queued task can shrink the server-side gaps.
	DelayFrom string `yaml:"delay_from"`
	// MaxCrawlDelay caps a robots.txt Crawl-delay, so that a hostile file
	// cannot stall a crawl. Default 30s.
	MaxCrawlDelay Duration `yaml:"max_crawl_delay"`
	// PerIP applies politeness per server IP address instead of per host name.
	PerIP bool `yaml:"per_ip"`
	// UserAgent identifies the crawler; it should carry a contact URL.
	UserAgent string `yaml:"user_agent"`
	// RobotsAgent is the product token matched against robots.txt groups.
	// Default: the first word of UserAgent before "/".
	RobotsAgent string `yaml:"robots_agent"`
	// Resolve pins host names to addresses like curl: "HOST:PORT:ADDR",
	// HOST may be "*.suffix".
	Resolve []string `yaml:"resolve"`
	// ResolveFile names a file with one Resolve entry per line.
	ResolveFile string `yaml:"resolve_file"`
	// AllowPrivate lets the crawler connect to loopback, private and
	// link-local addresses. Off by default (SSRF protection).
	AllowPrivate bool `yaml:"allow_private"`
	// ConnectTimeout, FirstByteTimeout and Timeout bound one fetch.
	// Defaults 10s, 30s, 60s.
	ConnectTimeout   Duration `yaml:"connect_timeout"`
	FirstByteTimeout Duration `yaml:"first_byte_timeout"`
	Timeout          Duration `yaml:"timeout"`
	// MaxBodyBytes caps a response body after decompression. Default 10 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxRedirects is the longest redirect chain followed. Default 5.
	MaxRedirects int `yaml:"max_redirects"`
	// MaxRetries is how often a URL is retried after a 5xx, 429, reset or
	// refused connection, with exponential back-off from RetryDelay (or the
	// server's Retry-After when longer). Default 3.
	MaxRetries int `yaml:"max_retries"`
	// RetryDelay is the first retry's back-off. Default 2s.
	RetryDelay Duration `yaml:"retry_delay"`
	// FollowNofollow follows rel=nofollow links too. Default false.
	FollowNofollow bool `yaml:"follow_nofollow"`
	// Seen selects the URL-seen test: "exact" (default) or "bloom" (a Bloom
	// filter only: faster, may drop URLs at FPRate).
	Seen string `yaml:"seen"`
	// ExpectedURLs and FPRate size the Bloom filter. Defaults 10M and 1e-6.
	ExpectedURLs uint64  `yaml:"expected_urls"`
	FPRate       float64 `yaml:"fp_rate"`
	// MemoryBudget is the most URLs the frontier keeps in memory; the rest
	// spill to disk. Default 1,000,000.
	MemoryBudget int `yaml:"memory_budget"`
	// WARC also writes WARC 1.1 files (request, response, metadata records).
	WARC bool `yaml:"warc"`
	// SortQuery sorts query parameters when normalising URLs.
	SortQuery bool `yaml:"sort_query"`
	// DropParams removes query parameters by name ("utm_*" globs allowed).
	DropParams []string `yaml:"drop_params"`
	// DenySuffixes replaces the default list of path suffixes not fetched
	// (images, scripts, archives…) when set.
	DenySuffixes []string `yaml:"deny_suffixes"`
	// AllowHosts and DenyHosts filter hosts ("*.example.org" wildcards).
	AllowHosts []string `yaml:"allow_hosts"`
	DenyHosts  []string `yaml:"deny_hosts"`
	// MaxRate caps requests per second over the whole crawl; 0 means only
	// per-host politeness limits. It can never exceed HardMaxRate.
	MaxRate float64 `yaml:"max_rate"`
	// Topics names a topics file (internal/topics): the crawl is scheduled
	// by the PQ-MCSA multi-topic scheduler of SPEC §4 inside the frontier's
	// politeness, the topics' seeds are added to Seeds, and depth levels
	// overlap (as with LooseDepth: topics, not levels, order the crawl).
	// Empty (default): no topic scheduling.
	Topics string `yaml:"topics"`
}

// HardMaxRate is the ceiling on Config.MaxRate: no configuration makes one
// crawler process send more requests per second than this.
const HardMaxRate = 20000

// DefaultUserAgent identifies spider and says where to learn about it.
const DefaultUserAgent = "spider/0.1 (+https://github.com/spider-crawler/spider)"

// Defaults fills unset fields with their documented defaults.
func (c *Config) Defaults() {
	if c.Data == "" {
		c.Data = "spider-data"
	}
	if c.Scope == "" {
		c.Scope = "seeds"
	}
	if c.Concurrency == 0 {
		c.Concurrency = 32
	}
	if c.PerHost == 0 {
		c.PerHost = 1
	}
	if c.DelayFrom == "" {
		c.DelayFrom = DelayFromDone
	}
	if c.MaxCrawlDelay == 0 {
		c.MaxCrawlDelay = Duration(30 * time.Second)
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.RobotsAgent == "" {
		c.RobotsAgent = productToken(c.UserAgent)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = Duration(10 * time.Second)
	}
	if c.FirstByteTimeout == 0 {
		c.FirstByteTimeout = Duration(30 * time.Second)
	}
	if c.Timeout == 0 {
		c.Timeout = Duration(60 * time.Second)
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 10 << 20
	}
	if c.MaxRedirects == 0 {
		c.MaxRedirects = 5
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = Duration(2 * time.Second)
	}
	if c.Seen == "" {
		c.Seen = "exact"
	}
	if c.ExpectedURLs == 0 {
		c.ExpectedURLs = 10_000_000
	}
	if c.FPRate == 0 {
		c.FPRate = 1e-6
	}
	if c.MemoryBudget == 0 {
		c.MemoryBudget = 1_000_000
	}
}

// NewConfig returns a Config with every default set: MaxDepth 5, Delay 1s,
// MaxRetries 3, plus what Defaults fills.
func NewConfig() Config {
	c := Config{MaxDepth: 5, Delay: Duration(time.Second), MaxRetries: 3}
	c.Defaults()
	return c
}

func productToken(ua string) string {
	end := strings.IndexFunc(ua, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_')
	})
	if end < 0 {
		return ua
	}
	if end == 0 {
		return "*"
	}
	return ua[:end]
}

// Validate reports every problem with c at once, each saying what to change.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch c.Scope {
	case "host", "domain", "seeds", "any":
	case "regexp":
		if c.ScopeRegexp == "" {
			bad("scope is regexp but no scope-regexp is given: set --scope-regexp PATTERN")
		} else if _, err := regexp.Compile(c.ScopeRegexp); err != nil {
			bad("scope-regexp %q does not compile: %w", c.ScopeRegexp, err)
		}
	default:
		bad("unknown scope %q: use host, domain, seeds, regexp or any", c.Scope)
	}
	if c.Concurrency < 1 || c.Concurrency > 10000 {
		bad("concurrency %d is out of range: use 1 to 10000", c.Concurrency)
	}
	if c.PerHost < 1 || c.PerHost > 64 {
		bad("per-host %d is out of range: use 1 to 64 connections per host", c.PerHost)
	}
	if c.Delay < 0 {
		bad("delay %s is negative", time.Duration(c.Delay))
	}
	if c.DelayFrom != DelayFromDone && c.DelayFrom != DelayFromStart {
		bad("unknown delay-from %q: use done (delay after each answer) or start (delay between request starts)", c.DelayFrom)
	}
	if c.MaxRedirects < 0 || c.MaxRedirects > 50 {
		bad("max-redirects %d is out of range: use 0 to 50", c.MaxRedirects)
	}
	if c.MaxRetries < 0 || c.MaxRetries > 20 {
		bad("max-retries %d is out of range: use 0 to 20", c.MaxRetries)
	}
	if c.Seen != "exact" && c.Seen != "bloom" {
		bad("unknown seen mode %q: use exact or bloom", c.Seen)
	}
	if c.FPRate <= 0 || c.FPRate >= 1 {
		bad("fp-rate %g is out of range: use a probability such as 1e-6", c.FPRate)
	}
	if c.MaxRate < 0 || c.MaxRate > HardMaxRate {
		bad("max-rate %g is out of range: use 0 (no global cap) to %d requests/s", c.MaxRate, HardMaxRate)
	}
	if c.MemoryBudget < 1000 {
		bad("memory-budget %d is too small: use at least 1000 URLs", c.MemoryBudget)
	}
	if c.MaxBodyBytes < 1024 {
		bad("max-body-bytes %d is too small: use at least 1024", c.MaxBodyBytes)
	}
	if c.Topics != "" {
		if _, err := os.Stat(c.Topics); err != nil {
			bad("cannot use topics file: %w", err)
		}
	}
	if c.Timeout <= 0 || c.ConnectTimeout <= 0 || c.FirstByteTimeout <= 0 {
		bad("time-outs must be positive")
	}
	return errors.Join(errs...)
}

// LoadFile reads a YAML configuration file into c (fields absent from the
// file keep their values). Unknown keys are an error, so that a typo does not
// silently fall back to a default. The file must not be writable by others:
// it may hold credentials.
func LoadFile(path string, c *Config) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cannot read config file: %w", err)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("config file %s is writable by every user (mode %s): run chmod o-w %s", path, fi.Mode().Perm(), path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read config file: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("cannot parse config file %s: %w", path, err)
	}
	return nil
}
