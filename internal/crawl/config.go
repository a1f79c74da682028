package crawl

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/fetch"
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

// LevelsOverlap reports whether depth levels may overlap: by default, and
// always with Topics (topics, not levels, order the crawl); never with
// StrictLevels alone.
func (c Config) LevelsOverlap() bool { return !c.StrictLevels || c.Topics != "" }

// relink reports whether depth levels overlap under a depth limit, so that
// a page may be fetched before its shortest path is known: then the
// state keeps each page's links (state.Options.Relink) and the fetcher
// the links the limit cut (Visit.Beyond), to pass a smaller depth on.
func (c Config) relink() bool {
	return c.MaxDepth >= 0 && c.LevelsOverlap()
}

// DepthOverlaps reports whether depth levels overlap under a depth limit
// (MaxDepth ≥ 0 without StrictLevels, or with Topics: the default): a
// State must then relink (state.Options.Relink, rstate.Options.Relink)
// for the limit to keep exactly the pages a level-by-level crawl fetches,
// and the fetcher fills Visit.Beyond.
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
	// StrictLevels crawls depth levels one after another under a depth
	// limit (MaxDepth ≥ 0): a page at depth d+1 is handed out only once
	// every page at depth d is done, so each page is fetched at its
	// shortest link depth. Off (the default), levels overlap: workers
	// never wait for a level to finish (much faster when answers are slow
	// or a few hosts hold a level: bench/RESULTS.md, latency-bound web),
	// and a page may be fetched before its shortest path is known. The
	// state then keeps each page's links, those beyond the limit too
	// (state.Options.Relink), and when a fetched page is found at a
	// smaller depth its links are discovered again that much shallower:
	// the crawl fetches the same pages as a level-by-level one, none
	// twice, though a page's record keeps the depth it was fetched at,
	// and a --max-pages budget may end the crawl with deeper pages
	// fetched while shallower ones wait. The Redis state of a master
	// (spider master) relinks the same way (rstate.Options.Relink), and a
	// peer-to-peer crawl relinks under a depth limit in either mode, since
	// its nodes' levels overlap (StrictLevels keeps each node's own
	// frontier level by level). The layered crawl (internal/layered) and
	// the mixed topology (internal/mixed) ignore it: their rounds and
	// pools keep their own depth rules; a Scheduler on a State that does
	// not relink (NewScheduler) goes level by level whatever this says.
	// StrictLevels with Topics is refused by Validate: topics, not levels,
	// order a topics crawl.
	StrictLevels bool `yaml:"strict_levels"`
	// LooseDepth is the former switch for what is now the default: true
	// asks for overlapping levels (the default anyway, so it changes
	// nothing) and is refused by Validate beside StrictLevels; false does
	// not select levels (set StrictLevels). It stays so that old
	// configuration files and command lines keep working, and RulesJSON
	// sets it to DepthOverlaps for workers of older versions.
	LooseDepth bool `yaml:"loose_depth"`
	// MaxPages stops the crawl at exactly this many completed URLs, each
	// one record in records.jsonl whatever its outcome (a retry is not a
	// completion), over all nodes and all runs of a resumed crawl: no
	// fetch beyond the limit starts (Budget) and the rest stays pending;
	// 0 means no limit.
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
	// NearDupDistance is the Hamming distance of 64-bit SimHashes of page
	// text within which a page is a near-duplicate of an earlier one
	// (crawlstate.Outcome.NearDistance), 1 to dedup.MaxNearDistance; 0
	// switches near-duplicate detection off (exact duplicates are still
	// found by fingerprint). NewConfig sets 3.
	NearDupDistance int `yaml:"near_dup_distance"`
	// Canonical respects a page's canonical URL (<link rel="canonical"> or
	// an HTTP Link header with rel="canonical"): when it names another URL
	// of the same host that the scope rules admit, the record carries it
	// (store.Record.Canonical, so the index folds the page into it) and it
	// is queued at the page's depth. NewConfig sets true.
	Canonical bool `yaml:"canonical"`
	// Sitemaps reads each host's sitemaps (the Sitemap: lines of its
	// robots.txt and /sitemap.xml) and crawls the pages they list at
	// depth 1, through the same filters as links (sitemaps.go). The
	// spider command turns it on by default (--sitemaps); NewConfig and
	// the zero Config leave it off, so that a library caller crawls links
	// alone unless it asks.
	Sitemaps bool `yaml:"sitemaps"`
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
	// overlap whatever StrictLevels says (topics, not levels, order the
	// crawl).
	// Empty (default): no topic scheduling.
	Topics string `yaml:"topics"`

	// Revisit is the revisit policy of fetched pages (package revisit):
	// "off" (NewConfig's default: a page is fetched once), "fixed" (every
	// RevisitInitial) or "adaptive" (each page's interval follows the
	// changes its revisits saw, within the bounds). Failed URLs are
	// retried on their own back-off in every mode (revisit.RetryAfter).
	Revisit string `yaml:"revisit"`
	// RevisitMin and RevisitMax bound every revisit interval; RevisitInitial
	// is a page's first one and, adaptive, the interval of a page that
	// changes at every visit (slower pages get longer ones). Defaults 1h,
	// 30 days (720h) and 24h.
	RevisitMin     Duration `yaml:"revisit_min"`
	RevisitMax     Duration `yaml:"revisit_max"`
	RevisitInitial Duration `yaml:"revisit_initial"`
	// RevisitHosts and RevisitTopics override RevisitMin/RevisitMax for a
	// host name (without port) or a topic; a host's bounds win over its
	// topic's, field by field; a zero field keeps the bound above it.
	// Config file only.
	RevisitHosts  map[string]RevisitBounds `yaml:"revisit_hosts"`
	RevisitTopics map[string]RevisitBounds `yaml:"revisit_topics"`
	// RevisitShare bounds the share of a continuous crawl's requests that
	// revisits (and retries of failed URLs) take while new URLs are
	// waiting: at most that share of the Concurrency slots hold revisits.
	// When no new URL waits, revisits use the free slots. Default 0.5.
	RevisitShare float64 `yaml:"revisit_share"`
	// Continuous keeps the crawl running until it is stopped (SIGINT,
	// spider control stop, MaxPages): new URLs and due revisits share the
	// frontier under the same politeness, and an idle crawl sleeps until
	// the next URL is due.
	Continuous bool `yaml:"continuous"`
	// RetryFailed makes every URL whose last fetch failed due at once
	// (crawlstate.Revisits.RetryFailed) before the crawl starts.
	RetryFailed bool `yaml:"retry_failed"`
}

// RevisitBounds bound the revisit interval of a host's or a topic's pages
// (Config.RevisitHosts, Config.RevisitTopics); a zero field keeps the
// bound of the level above.
type RevisitBounds struct {
	Min Duration `yaml:"min"`
	Max Duration `yaml:"max"`
}

// Values of Config.Revisit.
const (
	RevisitOff      = "off"
	RevisitFixed    = "fixed"
	RevisitAdaptive = "adaptive"
)

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
	if c.Revisit == "" {
		c.Revisit = RevisitOff
	}
	if c.RevisitMin == 0 {
		c.RevisitMin = Duration(time.Hour)
	}
	if c.RevisitMax == 0 {
		c.RevisitMax = Duration(30 * 24 * time.Hour)
	}
	if c.RevisitInitial == 0 {
		c.RevisitInitial = Duration(24 * time.Hour)
	}
	if c.RevisitShare == 0 {
		c.RevisitShare = 0.5
	}
}

// NewConfig returns a Config with every default set: MaxDepth 5, Delay 1s,
// MaxRetries 3, NearDupDistance 3, Canonical, plus what Defaults fills, except RobotsAgent, which
// Defaults derives from UserAgent when the Config is used.
func NewConfig() Config {
	c := Config{MaxDepth: 5, Delay: Duration(time.Second), MaxRetries: 3, NearDupDistance: 3, Canonical: true}
	c.Defaults()
	// RobotsAgent stays unset: Defaults derives it from the final UserAgent,
	// so a --user-agent flag or user_agent in a config file changes the
	// token matched in robots.txt too (unless robots_agent is given).
	c.RobotsAgent = ""
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

// Ranges of the numeric settings (Validate refuses values outside them;
// the flags' help texts quote them).
const (
	MaxMaxDepth       = 1000
	MaxConcurrency    = 10000
	MaxPerHost        = 64
	MaxRedirectsLimit = 50
	MaxRetriesLimit   = 20
	MinMemoryBudget   = 1000
	MaxMemoryBudget   = 1_000_000_000
	MinBodyBytes      = 1024
	MaxBodyLimit      = fetch.MaxBodyLimit // 1 GiB: one body is held in memory whole
	MinFPRate         = 1e-12
	// MaxNearDupDistance bounds NearDupDistance (dedup.MaxNearDistance).
	MaxNearDupDistance = dedup.MaxNearDistance
	MaxFPRate          = 0.5
	// MaxDelay bounds Delay, MaxCrawlDelay and RetryDelay; MaxTimeout each
	// time-out.
	MaxDelay   = Duration(time.Hour)
	MaxTimeout = Duration(time.Hour)
	// MinRevisit and MaxRevisit bound RevisitMin, RevisitMax,
	// RevisitInitial and the per-host and per-topic bounds.
	MinRevisit = Duration(100 * time.Millisecond)
	MaxRevisit = Duration(10 * 365 * 24 * time.Hour)
)

// Validate reports every problem with c at once, each on its own line
// naming the setting as its flag (--max-depth) with its valid range. It
// checks c as it is: run it on a configuration straight from the flags to
// refuse zeros that Defaults would otherwise replace.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch c.Scope {
	case "host", "domain", "seeds", "any":
	case "regexp":
		if c.ScopeRegexp == "" {
			bad("--scope is regexp but no --scope-regexp is given: set --scope-regexp PATTERN")
		} else if _, err := regexp.Compile(c.ScopeRegexp); err != nil {
			bad("--scope-regexp %q does not compile: %w", c.ScopeRegexp, err)
		}
	default:
		bad("unknown scope %q (--scope): use host, domain, seeds, regexp or any", c.Scope)
	}
	intRange := func(flag string, v, lo, hi int64, unit string) {
		if v < lo || v > hi {
			bad("--%s %d is out of range: use %d to %d%s", flag, v, lo, hi, unit)
		}
	}
	if c.MaxDepth < -1 || c.MaxDepth > MaxMaxDepth {
		bad("--max-depth %d is out of range: use -1 (unlimited) or 0 (seeds only) to %d", c.MaxDepth, MaxMaxDepth)
	}
	if c.MaxPages < 0 {
		bad("--max-pages %d is negative: use 0 (no limit) or a positive count", c.MaxPages)
	}
	intRange("concurrency", int64(c.Concurrency), 1, MaxConcurrency, " fetch workers")
	intRange("per-host", int64(c.PerHost), 1, MaxPerHost, " connections per host")
	durRange := func(flag string, v, lo, hi Duration) {
		if v < lo || v > hi {
			lows := time.Duration(lo).String()
			if lo == 1 {
				lows = "1ns"
			}
			bad("--%s %s is out of range: use %s to %s", flag, time.Duration(v), lows, time.Duration(hi))
		}
	}
	durRange("delay", c.Delay, 0, MaxDelay)
	durRange("max-crawl-delay", c.MaxCrawlDelay, 0, MaxDelay)
	durRange("retry-delay", c.RetryDelay, 1, MaxDelay)
	durRange("connect-timeout", c.ConnectTimeout, 1, MaxTimeout)
	durRange("first-byte-timeout", c.FirstByteTimeout, 1, MaxTimeout)
	durRange("timeout", c.Timeout, 1, MaxTimeout)
	if c.DelayFrom != DelayFromDone && c.DelayFrom != DelayFromStart {
		bad("unknown delay-from %q: use done (delay after each answer) or start (delay between request starts) with --delay-from", c.DelayFrom)
	}
	for _, h := range []struct{ flag, v string }{{"--user-agent", c.UserAgent}, {"--robots-agent", c.RobotsAgent}} {
		if err := fetch.CheckHeaderValue(h.flag, h.v); err != nil {
			errs = append(errs, err)
		}
	}
	if c.UserAgent == "" {
		bad("--user-agent is empty: name the crawler and a contact URL, e.g. %q", DefaultUserAgent)
	}
	intRange("max-redirects", int64(c.MaxRedirects), 0, MaxRedirectsLimit, "")
	intRange("max-retries", int64(c.MaxRetries), 0, MaxRetriesLimit, "")
	if c.NearDupDistance < 0 || c.NearDupDistance > dedup.MaxNearDistance {
		bad("--near-dup-distance %d is out of range: use 0 (off) to %d bits of 64", c.NearDupDistance, MaxNearDupDistance)
	}
	if c.Seen != "exact" && c.Seen != "bloom" {
		bad("unknown --seen %q: use exact or bloom", c.Seen)
	}
	fpOK := c.FPRate >= MinFPRate && c.FPRate <= MaxFPRate // false for NaN
	if !fpOK {
		bad("--fp-rate %g is out of range: use a probability from %g to %g, such as 1e-6", c.FPRate, MinFPRate, MaxFPRate)
	}
	if c.ExpectedURLs < 1 {
		bad("--expected-urls %d is out of range: use at least 1", c.ExpectedURLs)
	} else if need := dedup.BloomBytes(c.ExpectedURLs, c.FPRate); fpOK && need > dedup.MaxBloomBytes {
		most := uint64(dedup.MaxBloomBytes * 8 * math.Ln2 * math.Ln2 / -math.Log(c.FPRate))
		bad("--expected-urls %d at --fp-rate %g needs a Bloom filter of %s in memory, more than the %s allowed: use 1 to %d at this --fp-rate, or raise --fp-rate",
			c.ExpectedURLs, c.FPRate, byteSize(need), byteSize(dedup.MaxBloomBytes), most)
	}
	if !(c.MaxRate >= 0 && c.MaxRate <= HardMaxRate) { // NaN too
		bad("--max-rate %g is out of range: use 0 (no global cap) to %d requests/s", c.MaxRate, HardMaxRate)
	}
	intRange("memory-budget", int64(c.MemoryBudget), MinMemoryBudget, MaxMemoryBudget, " URLs")
	intRange("max-body-bytes", c.MaxBodyBytes, MinBodyBytes, MaxBodyLimit, " bytes (1 GiB)")
	if c.Topics != "" {
		if _, err := os.Stat(c.Topics); err != nil {
			bad("cannot use --topics file: %w", err)
		}
	}
	if c.StrictLevels && c.LooseDepth {
		bad("--loose-depth and --strict-levels contradict each other: depth levels overlap by default (--loose-depth is the default and changes nothing); drop --loose-depth to crawl level by level, or --strict-levels to let levels overlap")
	}
	if c.StrictLevels && c.Topics != "" {
		bad("--strict-levels cannot apply with --topics: topics, not depth levels, order a topics crawl; drop --strict-levels")
	}
	errs = append(errs, c.validateRevisit()...)
	return errors.Join(errs...)
}

// validateRevisit checks the revisit settings (Validate).
func (c *Config) validateRevisit() []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch c.Revisit {
	case RevisitOff, RevisitFixed, RevisitAdaptive:
	default:
		bad("unknown --revisit %q: use off (fetch each page once), fixed (every --revisit-initial) or adaptive (follow each page's changes)", c.Revisit)
	}
	span := fmt.Sprintf("%s to %s", time.Duration(MinRevisit), time.Duration(MaxRevisit))
	for _, d := range []struct {
		flag string
		v    Duration
	}{{"revisit-min", c.RevisitMin}, {"revisit-max", c.RevisitMax}, {"revisit-initial", c.RevisitInitial}} {
		if d.v < MinRevisit || d.v > MaxRevisit {
			bad("--%s %s is out of range: use %s", d.flag, time.Duration(d.v), span)
		}
	}
	if c.RevisitMax < c.RevisitMin {
		bad("--revisit-max %s is below --revisit-min %s: use a --revisit-max of at least --revisit-min", time.Duration(c.RevisitMax), time.Duration(c.RevisitMin))
	}
	if !(c.RevisitShare > 0 && c.RevisitShare <= 1) { // NaN too
		bad("--revisit-share %g is out of range: use a share above 0 up to 1 of the requests", c.RevisitShare)
	}
	checkBounds := func(kind string, m map[string]RevisitBounds) {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			b := m[name]
			for _, v := range []Duration{b.Min, b.Max} {
				if v != 0 && (v < MinRevisit || v > MaxRevisit) {
					bad("revisit bound %s of %s %q is out of range (config file revisit_%ss): use 0 (inherit) or %s", time.Duration(v), kind, name, kind, span)
				}
			}
			if b.Min != 0 && b.Max != 0 && b.Max < b.Min {
				bad("revisit bounds of %s %q have max %s below min %s (config file revisit_%ss): use a max of at least the min", kind, name, time.Duration(b.Max), time.Duration(b.Min), kind)
			}
		}
	}
	checkBounds("host", c.RevisitHosts)
	checkBounds("topic", c.RevisitTopics)
	return errs
}

// byteSize writes n bytes with a binary unit: "4 GiB", "178 TiB".
func byteSize(n float64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if n >= 1024 {
		return fmt.Sprintf("%.3g %s", n, units[i])
	}
	return fmt.Sprintf("%.0f %s", n, units[i])
}

// LocalFields names the settings that concern the machine a process runs
// on rather than the crawl's rules: where it writes (Data, Topics), whom it
// may connect to and how names resolve (AllowPrivate, Resolve,
// ResolveFile: the SSRF guard), and the resources it spends (Concurrency,
// MemoryBudget, MaxBodyBytes, the time-outs). A process that takes its
// configuration from another (a master–worker worker from Redis) must take
// these only from its own flags: whoever can write the shared copy could
// otherwise switch the SSRF guard off or point the process at its files.
// The names are the Go field names (the keys of the JSON form).
var LocalFields = []string{
	"Data", "Topics", "AllowPrivate", "Resolve", "ResolveFile",
	"Concurrency", "MemoryBudget", "MaxBodyBytes", "ConnectTimeout", "FirstByteTimeout", "Timeout",
}

// SetLocal copies the local-only settings (LocalFields) of local into c,
// leaving c's crawl rules as they are.
func (c *Config) SetLocal(local Config) {
	c.Data, c.Topics = local.Data, local.Topics
	c.AllowPrivate, c.ResolveFile = local.AllowPrivate, local.ResolveFile
	c.Resolve = slices.Clone(local.Resolve)
	c.Concurrency, c.MemoryBudget, c.MaxBodyBytes = local.Concurrency, local.MemoryBudget, local.MaxBodyBytes
	c.ConnectTimeout, c.FirstByteTimeout, c.Timeout = local.ConnectTimeout, local.FirstByteTimeout, local.Timeout
}

// RulesJSON is the JSON form of c's crawl rules alone, the form one process
// publishes for others (a master for its workers): every LocalFields key is
// left out, so that no local path, address policy or limit travels. A
// topics file (local) makes depth levels overlap; that rule travels as
// StrictLevels false, so the receivers still keep the links a depth limit
// cuts. LooseDepth carries whether levels overlap (DepthOverlaps) for
// receivers of older versions, which know no StrictLevels.
func (c Config) RulesJSON() ([]byte, error) {
	if c.Topics != "" {
		c.StrictLevels = false
	}
	c.LooseDepth = c.DepthOverlaps()
	c.SetLocal(Config{})
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the crawl's rules: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("cannot encode the crawl's rules: %w", err)
	}
	for _, k := range LocalFields {
		delete(m, k)
	}
	return json.Marshal(m)
}

// RulesFromJSON decodes a configuration published by another process
// (RulesJSON, or an older or hostile writer): it returns the crawl rules,
// with every local-only field at its zero value, and the names of the
// LocalFields keys the input carried and that were ignored, for the
// caller to warn about. Set the local fields with SetLocal.
func RulesFromJSON(b []byte) (rules Config, ignored []string, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return Config{}, nil, fmt.Errorf("cannot decode the published crawl configuration: %w", err)
	}
	for _, k := range LocalFields {
		if _, ok := m[k]; ok {
			ignored = append(ignored, k)
			delete(m, k)
		}
	}
	b, _ = json.Marshal(m)
	if err := json.Unmarshal(b, &rules); err != nil {
		return Config{}, nil, fmt.Errorf("cannot decode the published crawl configuration: %w", err)
	}
	if _, ok := m["StrictLevels"]; !ok {
		// An older writer, from before levels overlapped by default: its
		// crawl went level by level unless it said LooseDepth.
		rules.StrictLevels = !rules.LooseDepth
	}
	rules.LooseDepth = false // a hint for older receivers only
	return rules, ignored, nil
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
