package websim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// Feature is a set of switchable behaviours of the synthetic web. Each constant is one
// behaviour; a Config enables the union of its Profile's features and Enable, minus
// Disable. Behaviours that add links (redirects, errors, traps …) only add them to the
// pages of "troubled" hosts (a deterministic share, Config.TroubleShare), so a crawl still
// finds plenty of good pages; the URLs of an enabled behaviour are served on every host.
// The URL of every behaviour is listed in the package documentation.
type Feature uint32

// The behaviours. Their names (Feature.String, ParseFeatures, command-line switches) are
// given in each comment.
const (
	// FeatureRedirects ("redirects"): 301/302/307/308 chains of 1–3 hops ending on a page.
	FeatureRedirects Feature = 1 << iota
	// FeatureRedirectLoops ("redirect-loops"): two URLs redirecting to each other.
	FeatureRedirectLoops
	// FeatureLongRedirects ("long-redirects"): chains of 11–13 hops.
	FeatureLongRedirects
	// FeatureNotFound ("not-found"): links to missing pages (404).
	FeatureNotFound
	// FeatureGone ("gone"): links to pages answering 410.
	FeatureGone
	// FeatureServerErrors ("server-errors"): links to pages answering 500.
	FeatureServerErrors
	// FeatureUnavailable ("unavailable"): pages answering 503 with Retry-After: 1 for the
	// first Config.BusyCount requests of the URL, then 200.
	FeatureUnavailable
	// FeatureSlow ("slow"): a share of hosts (Config.SlowShare) answer with
	// Config.SlowLatency and Config.SlowBandwidth.
	FeatureSlow
	// FeatureHang ("hang"): pages that send nothing for Config.HangTime (time-out case).
	FeatureHang
	// FeatureReset ("reset"): pages whose connection is reset (TCP RST) without an answer.
	FeatureReset
	// FeatureCompress ("compress"): bodies are brotli- or gzip-encoded when the request's
	// Accept-Encoding allows it (br preferred).
	FeatureCompress
	// FeatureWrongType ("wrong-type"): HTML served as text/plain, binary served as text/html.
	FeatureWrongType
	// FeatureCharsets ("charsets"): GBK, Big5 and Shift_JIS pages, the charset declared
	// in the Content-Type header or only in <meta charset>.
	FeatureCharsets
	// FeatureMalformed ("malformed"): unclosed tags, deeply nested divs, invalid UTF-8.
	FeatureMalformed
	// FeatureLarge ("large"): pages of Config.LargeSize bytes.
	FeatureLarge
	// FeatureDuplicates ("duplicates"): /print/… mirrors of articles (same text).
	FeatureDuplicates
	// FeatureTraps ("traps"): an infinite /trap/1/2/3/… hierarchy.
	FeatureTraps
	// FeatureGzipBomb ("gzip-bomb"): a small gzip body that expands to BombSize bytes.
	FeatureGzipBomb
	// FeatureNoise ("noise"): session ids (;jsessionid=, ?sid=), tracking parameters
	// (?utm_source=), a tracking pixel, endless calendars and link-farm blocks.
	FeatureNoise
	// FeatureRobots ("robots"): every host takes its robots.txt from the menu of
	// RobotsKind values instead of allow-all.
	FeatureRobots

	numFeatures = iota
)

// AllFeatures is the union of every behaviour; it is what the "hostile" profile enables.
const AllFeatures Feature = 1<<numFeatures - 1

var featureNames = [numFeatures]string{
	"redirects", "redirect-loops", "long-redirects", "not-found", "gone", "server-errors",
	"unavailable", "slow", "hang", "reset", "compress", "wrong-type", "charsets",
	"malformed", "large", "duplicates", "traps", "gzip-bomb", "noise", "robots",
}

// FeatureList returns every single-behaviour Feature in declaration order. The caller
// owns the slice.
func FeatureList() []Feature {
	out := make([]Feature, numFeatures)
	for i := range out {
		out[i] = 1 << i
	}
	return out
}

// Has reports whether every behaviour of x is in f.
func (f Feature) Has(x Feature) bool { return f&x == x }

// String returns the comma-separated names of the behaviours in f ("" for none), the
// form ParseFeatures reads.
func (f Feature) String() string {
	var b strings.Builder
	for i := range numFeatures {
		if f&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(featureNames[i])
		}
	}
	return b.String()
}

// ErrUnknownFeature is returned (wrapped) by ParseFeatures for a name that is no feature.
var ErrUnknownFeature = errors.New("unknown feature")

// ParseFeatures parses a comma-separated list of feature names (spaces around names are
// ignored; "all" means AllFeatures; "" and "none" mean no feature). It returns an error
// wrapping ErrUnknownFeature naming the first unknown name.
func ParseFeatures(s string) (Feature, error) {
	var f Feature
	for part := range strings.SplitSeq(s, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		switch name {
		case "", "none":
			continue
		case "all":
			f |= AllFeatures
			continue
		}
		found := false
		for i, n := range featureNames {
			if n == name {
				f |= 1 << i
				found = true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("cannot parse feature %q: %w (known: all, %s)", name, ErrUnknownFeature, AllFeatures)
		}
	}
	return f, nil
}

// Profile names accepted in Config.Profile.
const (
	// ProfileClean serves only 200 HTML pages (plus the images, scripts and styles they
	// reference), robots.txt allows everything, no traps.
	ProfileClean = "clean"
	// ProfileHostile enables AllFeatures.
	ProfileHostile = "hostile"
)

// Config describes a synthetic web. The zero value is usable: every field documents its
// default. Fields are read once by New; changing a Config afterwards has no effect.
type Config struct {
	// Seed makes the web: the same Config gives byte-identical pages. Default 0.
	Seed int64
	// Hosts is the number of hosts (1–1,000,000). Default 20.
	Hosts int
	// PagesPerHost is the number of pages of each host's hierarchy: the index, sections
	// /s/N/ and articles /s/N/a/M.html (1–1,000,000). Default 50.
	PagesPerHost int
	// Domains is the number of registrable domains d0.test, d1.test, …; host i belongs to
	// domain i mod Domains and is named www.dD.test, dD.test, blog.dD.test, news.dD.test,
	// then siteI.dD.test. Default 4 (capped at Hosts).
	Domains int
	// ChineseShare is the share of hosts whose pages are in Chinese. Default 0.25;
	// a negative value means none.
	ChineseShare float64
	// ExtraLinks adds this many links to every article page, each to a page
	// (index, section or article) of a host, both chosen uniformly at random
	// among all Hosts × PagesPerHost pages (the page's own host included), in a
	// link-farm table. On a large web most of them are new to a crawler, so
	// the set of discovered URLs grows about ExtraLinks per article fetched:
	// the knob of the large-frontier benchmark (bench/frontier.sh). Default 0:
	// pages are unchanged (0–1000).
	ExtraLinks int
	// PageModel renders pages the way real sites are made (pagemodel.go):
	// on every page of a host the same navigation, sidebar, footer and
	// held-out noise blocks (share widget, language switcher, print/export
	// links, tag cloud, a "sponsored" box in one of three variants) —
	// template, labelled noise; link-dense content unique to its page — the
	// index's and sections' tables of contents (replacing their link
	// paragraphs) and an editorial paragraph with a link every word or two
	// on articles. Half the hosts use <nav>/<aside>/<footer>, the others
	// <div>s only. Truth.LinkBlocks labels every <a> link. Default false:
	// pages are unchanged.
	PageModel bool
	// NearDups adds copies of articles and canonical links (duplicates.go):
	// /mirror/ exact copies, /dated/ copies with a date line, /print/ views
	// naming their article canonical in a Link header, and canonical links to
	// the article, to a 404, to another host and in a loop. Truth.Duplicates
	// and Truth.Canonicals label them. Default false: pages are unchanged.
	NearDups bool
	// Profile is ProfileClean (default) or ProfileHostile.
	Profile string
	// Enable adds behaviours to those of the profile.
	Enable Feature
	// Disable removes behaviours from those of the profile and Enable.
	Disable Feature
	// TroubleShare is the share of hosts whose pages link to the URLs of the enabled
	// link-adding behaviours. Default 0.5; 1 puts them on every host; negative means none.
	TroubleShare float64

	// Addr is the listen address of Start; it must be a loopback address. Default
	// "127.0.0.1:0" (any free port).
	Addr string
	// Port is the port written in generated absolute URLs (http://HOST:PORT/path). Start
	// sets it to the listener's port; with New, set it to the port the handler is served on
	// (0 writes URLs without a port).
	Port int
	// PerIP gives every host its own loopback address 127.A.B.C (see Server.Resolve) and
	// makes Start listen on each of them (at most MaxPerIPHosts hosts).
	PerIP bool

	// Latency delays the first byte of every answer. Default 0.
	Latency time.Duration
	// Bandwidth limits every body to this many bytes per second. Default 0 (unlimited).
	Bandwidth int64
	// SlowShare is the share of hosts made slow by FeatureSlow. Default 0.2.
	SlowShare float64
	// SlowLatency is the first-byte delay of slow hosts. Default 200ms.
	SlowLatency time.Duration
	// SlowBandwidth is the bandwidth of slow hosts in bytes/s. Default 256 KiB/s.
	SlowBandwidth int64
	// HangTime is how long a hang page sends nothing before answering 200 (the request's
	// end or Server.Close end it earlier). Default 2 minutes.
	HangTime time.Duration
	// LyingLength serves two pages that lie about their length, on every host, linked
	// from nowhere (a crawler gets them as seeds): /x/len-huge/K announces
	// Content-Length: 1000000000000000 (HugeContentLength) and sends a short body, then
	// closes the connection; /x/len-stall/K announces Content-Length: 4000000000
	// (StallContentLength), sends no body for HangTime, then closes; /x/len-cap/K does
	// the same with Content-Length: 1073741824 (CapContentLength, 1 GiB). Default false:
	// they answer 404 like any unknown path.
	LyingLength bool
	// BusyCount is how many requests of an "unavailable" URL get 503 before it answers
	// 200. Default 1.
	BusyCount int
	// LargeSize is the body size of large pages in bytes. Default 5 MiB.
	LargeSize int
	// BombSize is the decompressed size of the gzip bomb in bytes (rounded up to MiB).
	// Default 1 GiB; its compressed body is about BombSize/1000.
	BombSize int64
	// CrawlDelay is the Crawl-delay written by the robots.txt kinds that carry one.
	// Default 100ms (written "0.1").
	CrawlDelay time.Duration
	// Robots, when not empty, forces this RobotsKind name on every host (regardless of
	// FeatureRobots); "" lets each host use the menu (FeatureRobots) or allow-all.
	Robots string

	// PublishEvery, when positive, makes the web grow: every PublishEvery
	// after New, each section page /s/N/ of every host lists one more new
	// article /s/N/new/K.html (K = 1, 2, …, newest first), whose topic is the
	// section's. Web.PublishedAt tells when a new article appeared. Default
	// 0: the static web (Truth then never changes).
	PublishEvery time.Duration

	// ChangeDay, when positive, makes the pages of every host's hierarchy change
	// (change.go): each page changes as a Poisson process at a rate drawn from
	// ChangeClasses (Cho and Garcia-Molina's measurements), one day of the model
	// lasting ChangeDay of real time from New; ETag, Last-Modified and 304 answers.
	// The model covers 10,000 days (about 27 years): past 10,000 × ChangeDay of real
	// time pages stop changing. Default 0: pages never change and carry no validators.
	ChangeDay time.Duration
	// DisappearShare is the share of articles that disappear (404 or 410) at their
	// first, second or third change. Default 0.02 (with ChangeDay); negative: none.
	DisappearShare float64
	// ValidatorFaults are the bad servers' ways with validators (with ChangeDay): each
	// host of FaultShare gets one of them. Default none.
	ValidatorFaults ValidatorFault
	// FaultShare is the share of hosts given one of ValidatorFaults. Default 0.25.
	FaultShare float64

	// Sitemaps serves rich sitemaps (sitemap.go): /sitemap.xml with lastmod and
	// changefreq, an index of /sitemaps/K.xml[.gz] files past SitemapMaxURLs pages,
	// gzip variants, a cross-submitted sitemap per host on host 0 (listed in the host's
	// robots.txt), /sitemap-others.xml (out-of-place URLs) and /sitemap-huge.xml[.gz].
	// Default false: /sitemap.xml is the plain urlset of a host's first 50,000 pages.
	Sitemaps bool
	// SitemapMaxURLs is the URLs per sitemap file (1–50,000). Default 50,000.
	SitemapMaxURLs int
	// SitemapLieShare is the share of pages whose sitemap lastmod lies (the answer's
	// time). Default 0.
	SitemapLieShare float64
	// HugeSitemapSize is the uncompressed size of /sitemap-huge.xml. Default 1 GiB.
	HugeSitemapSize int64

	// LogCap is the number of access-log entries kept in memory; further entries are
	// counted as dropped. Default 1,000,000; negative keeps none.
	LogCap int
	// LogWriter, when not nil, receives every access-log entry as one JSON line.
	LogWriter io.Writer
	// Logger receives warnings (misrouted requests, log write errors). Default: discard.
	Logger *slog.Logger
}

// MaxPerIPHosts is the largest Hosts value accepted with PerIP (one listener per host).
const MaxPerIPHosts = 4096

// Errors returned (wrapped) by New and Start.
var (
	// ErrBadConfig reports a Config field out of range.
	ErrBadConfig = errors.New("bad websim config")
	// ErrNotLoopback reports a listen address that is not a loopback address.
	ErrNotLoopback = errors.New("address is not loopback")
)

// settings is a Config with defaults applied and the profile resolved.
type settings struct {
	Config
	features Feature
	robots   RobotsKind // forced kind, or -1
}

func (c Config) resolve() (settings, error) {
	s := settings{Config: c, robots: -1}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.Hosts, 20)
	def(&s.PagesPerHost, 50)
	def(&s.Domains, 4)
	def(&s.BusyCount, 1)
	def(&s.LargeSize, 5<<20)
	def(&s.LogCap, 1_000_000)
	if s.ChineseShare == 0 {
		s.ChineseShare = 0.25
	}
	if s.TroubleShare == 0 {
		s.TroubleShare = 0.5
	}
	def(&s.SitemapMaxURLs, 50_000)
	if s.HugeSitemapSize == 0 {
		s.HugeSitemapSize = 1 << 30
	}
	if s.DisappearShare == 0 {
		s.DisappearShare = 0.02
	}
	if s.FaultShare == 0 {
		s.FaultShare = 0.25
	}
	if s.SlowShare == 0 {
		s.SlowShare = 0.2
	}
	if s.SlowLatency == 0 {
		s.SlowLatency = 200 * time.Millisecond
	}
	if s.SlowBandwidth == 0 {
		s.SlowBandwidth = 256 << 10
	}
	if s.HangTime == 0 {
		s.HangTime = 2 * time.Minute
	}
	if s.BombSize == 0 {
		s.BombSize = 1 << 30
	}
	if s.CrawlDelay == 0 {
		s.CrawlDelay = 100 * time.Millisecond
	}
	if s.Addr == "" {
		s.Addr = "127.0.0.1:0"
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	switch strings.ToLower(s.Profile) {
	case "", ProfileClean:
		s.Profile = ProfileClean
	case ProfileHostile:
		s.Profile = ProfileHostile
		s.features = AllFeatures
	default:
		return s, fmt.Errorf("cannot use profile %q: %w: want %q or %q", c.Profile, ErrBadConfig, ProfileClean, ProfileHostile)
	}
	s.features = (s.features | s.Enable) &^ s.Disable & AllFeatures
	if s.Robots != "" {
		k, err := ParseRobotsKind(s.Robots)
		if err != nil {
			return s, fmt.Errorf("cannot use robots kind: %w", err)
		}
		s.robots = k
	}
	switch {
	case s.Hosts < 1 || s.Hosts > 1_000_000:
		return s, fmt.Errorf("cannot use %d hosts: %w: want 1–1000000", s.Hosts, ErrBadConfig)
	case s.PagesPerHost < 1 || s.PagesPerHost > 1_000_000:
		return s, fmt.Errorf("cannot use %d pages per host: %w: want 1–1000000", s.PagesPerHost, ErrBadConfig)
	case s.ExtraLinks < 0 || s.ExtraLinks > 1000:
		return s, fmt.Errorf("cannot add %d extra links per article: %w: want 0–1000", s.ExtraLinks, ErrBadConfig)
	case s.Domains < 1:
		return s, fmt.Errorf("cannot use %d domains: %w: want at least 1", s.Domains, ErrBadConfig)
	case s.Port < 0 || s.Port > 65535:
		return s, fmt.Errorf("cannot use port %d: %w", s.Port, ErrBadConfig)
	case s.PerIP && s.Hosts > MaxPerIPHosts:
		return s, fmt.Errorf("cannot give %d hosts their own address: %w: at most %d with PerIP", s.Hosts, ErrBadConfig, MaxPerIPHosts)
	case s.Latency < 0 || s.Bandwidth < 0 || s.SlowLatency < 0 || s.SlowBandwidth < 0 || s.HangTime < 0:
		return s, fmt.Errorf("cannot use negative latency, bandwidth or hang time: %w", ErrBadConfig)
	case s.PublishEvery < 0:
		return s, fmt.Errorf("cannot publish every %s: %w: use 0 (static) or a positive interval", s.PublishEvery, ErrBadConfig)
	case s.SitemapMaxURLs < 1 || s.SitemapMaxURLs > 50_000 || s.HugeSitemapSize < 0:
		return s, fmt.Errorf("cannot put %d URLs in a sitemap file: %w: want 1–50000 (and a huge sitemap size ≥ 0)", s.SitemapMaxURLs, ErrBadConfig)
	case s.ChangeDay < 0:
		return s, fmt.Errorf("cannot make a day last %s: %w: use 0 (pages never change) or a positive duration", s.ChangeDay, ErrBadConfig)
	case s.BusyCount < 0 || s.LargeSize < 0 || s.BombSize < 0 || s.CrawlDelay < 0:
		return s, fmt.Errorf("cannot use negative busy count, large size, bomb size or crawl delay: %w", ErrBadConfig)
	}
	if s.Domains > s.Hosts {
		s.Domains = s.Hosts
	}
	return s, nil
}
