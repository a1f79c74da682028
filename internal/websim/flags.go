package websim

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// RegisterFlags registers on fs one flag per Config field that makes sense on a command
// line, plus one boolean flag per Feature (named like the feature: --redirects,
// --gzip-bomb, … ; --hang=false removes a behaviour of the profile). The returned Config
// is filled when fs is parsed; LogWriter and Logger are left to the caller.
func RegisterFlags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.Int64Var(&c.Seed, "seed", 0, "seed of the web: the same seed and flags give byte-identical pages")
	fs.IntVar(&c.Hosts, "hosts", 20, "number of hosts")
	fs.IntVar(&c.PagesPerHost, "pages", 50, "pages per host (index, sections /s/N/, articles /s/N/a/M.html)")
	fs.IntVar(&c.Domains, "domains", 4, "registrable domains d0.test … (hosts www.dD.test, dD.test, blog.dD.test, news.dD.test, siteI.dD.test)")
	fs.IntVar(&c.ExtraLinks, "extra-links", 0, "links added to every article, to uniformly chosen pages of uniformly chosen hosts (large-frontier runs; 0-1000)")
	fs.BoolVar(&c.NearDups, "near-dups", false, "copies of articles: /mirror/ (exact), /dated/ (a date line added), /print/ views with a canonical Link header, and canonical links good, to 404s, to other hosts and in loops; labelled in the truth")
	fs.BoolVar(&c.PageModel, "page-model", false, "pages as real sites make them: navigation, sidebar, footer, share/language/export/tag/ads blocks on every page of a host (noise), tables of contents and link-dense editorial paragraphs (content); labelled in the truth")
	fs.Float64Var(&c.ChineseShare, "chinese-share", 0.25, "share of hosts in Chinese (negative: none)")
	fs.StringVar(&c.Profile, "profile", ProfileClean, "clean (200 HTML pages only, robots allow all) or hostile (every behaviour on)")
	fs.Float64Var(&c.TroubleShare, "trouble-share", 0.5, "share of hosts whose pages link to the enabled behaviours' URLs (negative: none)")
	fs.Func("enable", "comma-separated behaviours to add to the profile (all, or names as the boolean flags below)", func(s string) error {
		f, err := ParseFeatures(s)
		c.Enable |= f
		c.Disable &^= f
		return err
	})
	fs.Func("disable", "comma-separated behaviours to remove from the profile", func(s string) error {
		f, err := ParseFeatures(s)
		c.Disable |= f
		c.Enable &^= f
		return err
	})
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:0", "listen address (loopback only)")
	fs.IntVar(&c.Port, "port", 0, "port written in generated URLs when not serving (truth); serve uses the listener's")
	fs.BoolVar(&c.PerIP, "per-ip", false, fmt.Sprintf("give every host its own address 127.A.B.C and listen on each (at most %d hosts)", MaxPerIPHosts))
	fs.DurationVar(&c.Latency, "latency", 0, "delay before every answer")
	fs.Int64Var(&c.Bandwidth, "bandwidth", 0, "bytes per second per answer (0: unlimited)")
	fs.Float64Var(&c.SlowShare, "slow-share", 0.2, "share of hosts made slow by --slow")
	fs.DurationVar(&c.SlowLatency, "slow-latency", 0, "delay before answers of slow hosts (default 200ms)")
	fs.Int64Var(&c.SlowBandwidth, "slow-bandwidth", 0, "bytes per second of slow hosts (default 262144)")
	fs.DurationVar(&c.HangTime, "hang-time", 0, "how long hang pages stay silent (default 2m)")
	fs.IntVar(&c.BusyCount, "busy-count", 1, "503 answers of an unavailable URL before it answers 200")
	fs.IntVar(&c.LargeSize, "large-size", 5<<20, "body size of large pages in bytes")
	fs.Int64Var(&c.BombSize, "bomb-size", 1<<30, "decompressed size of the gzip bomb in bytes")
	fs.DurationVar(&c.CrawlDelay, "crawl-delay", 0, "Crawl-delay written in robots.txt files that have one (default 100ms)")
	fs.DurationVar(&c.PublishEvery, "publish-every", 0, "every this long, each section page lists one more new article /s/N/new/K.html (0 = static web)")
	fs.StringVar(&c.Robots, "robots-kind", "", "force one robots.txt kind on every host: "+strings.Join(robotsNames[:], ", "))
	fs.DurationVar(&c.ChangeDay, "change-day", 0, "make pages change (Poisson rates from Cho & Garcia-Molina's distribution; see websim changes), one model day lasting this long (0 = pages never change)")
	fs.Float64Var(&c.DisappearShare, "disappear-share", 0.02, "with --change-day: share of articles that disappear (404 or 410) at their 1st-3rd change (negative: none)")
	fs.Func("validator-faults", "with --change-day: bad servers' validators on --fault-share of the hosts: all, or etag-every-answer, future-last-modified, unconditional-304", func(s string) error {
		f, err := ParseValidatorFaults(s)
		c.ValidatorFaults = f
		return err
	})
	fs.Float64Var(&c.FaultShare, "fault-share", 0.25, "share of hosts given one of --validator-faults")
	fs.BoolVar(&c.Sitemaps, "sitemaps", false, "rich sitemaps: lastmod, changefreq, an index past --sitemap-max-urls, .gz variants, cross-submitted and out-of-place sitemaps, /sitemap-huge.xml")
	fs.IntVar(&c.SitemapMaxURLs, "sitemap-max-urls", 50_000, "URLs per sitemap file (1-50000)")
	fs.Float64Var(&c.SitemapLieShare, "sitemap-lie-share", 0, "share of pages whose sitemap lastmod lies (the answer's time)")
	fs.Int64Var(&c.HugeSitemapSize, "huge-sitemap-size", 1<<30, "uncompressed bytes of /sitemap-huge.xml")
	fs.IntVar(&c.LogCap, "log-cap", 1_000_000, "access-log entries kept in memory (negative: none)")
	for i, f := range FeatureList() {
		fs.Var(&featureFlag{c: c, f: f}, featureNames[i], "behaviour "+featureNames[i]+": "+featureHelp[i])
	}
	return c
}

var featureHelp = [numFeatures]string{
	"301/302/307/308 chains of 1-3 hops",
	"two URLs redirecting to each other",
	"redirect chains of 11-13 hops",
	"links to missing pages (404)",
	"links to pages answering 410",
	"links to pages answering 500",
	"503 with Retry-After: 1 for the first --busy-count requests, then 200",
	"--slow-share of hosts answer with --slow-latency and --slow-bandwidth",
	"pages silent for --hang-time",
	"connections reset without an answer",
	"brotli or gzip bodies when Accept-Encoding allows",
	"HTML served as text/plain, binary served as text/html",
	"GBK, Big5 and Shift_JIS pages (charset in the header or only in <meta>)",
	"unclosed tags, deeply nested divs, invalid UTF-8",
	"pages of --large-size bytes",
	"/print/ mirrors of articles",
	"an infinite /trap/1/2/3/... hierarchy",
	"a small gzip body expanding to --bomb-size bytes",
	"session ids, tracking parameters, calendars, link farms",
	"robots.txt from a menu of kinds per host",
}

// featureFlag is a boolean flag adding (true) or removing (false) one behaviour.
type featureFlag struct {
	c *Config
	f Feature
}

func (v *featureFlag) String() string {
	if v == nil || v.c == nil {
		return "false"
	}
	return strconv.FormatBool(v.c.Enable.Has(v.f))
}

func (v *featureFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("cannot parse %q as a boolean: %w", s, err)
	}
	if on {
		v.c.Enable |= v.f
		v.c.Disable &^= v.f
	} else {
		v.c.Disable |= v.f
		v.c.Enable &^= v.f
	}
	return nil
}

func (v *featureFlag) IsBoolFlag() bool { return true }

// RegisterTruthFlags registers the ground-truth rules on fs (--seeds, --max-depth,
// --scope, --agent, --follow-nofollow, --max-redirects, --max-urls). The returned rules
// are filled when fs is parsed.
func RegisterTruthFlags(fs *flag.FlagSet) *TruthRules {
	r := &TruthRules{}
	fs.Func("seeds", "comma-separated seed URLs (repeatable; default: the first host's index)", func(s string) error {
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				r.Seeds = append(r.Seeds, part)
			}
		}
		return nil
	})
	fs.IntVar(&r.MaxDepth, "max-depth", 5, "largest depth fetched (seeds are 0; redirect targets keep their source's depth); negative: unlimited")
	fs.StringVar(&r.Scope, "scope", ScopeSeeds, "host (seeds' host:port), domain (seeds' registrable domains), seeds (seed host names) or any")
	fs.StringVar(&r.Agent, "agent", "spider", "robots.txt product token")
	fs.BoolVar(&r.FollowNofollow, "follow-nofollow", false, "also follow rel=nofollow links")
	fs.BoolVar(&r.Canonical, "canonical", false, "a crawler that respects rel=canonical (spider's default): a same-host canonical URL is queued at the page's depth, never one of another host (pages of --near-dups)")
	r.MaxRedirects = 5
	fs.Func("max-redirects", "longest redirect chain followed, in hops; 0 follows none (default 5)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("cannot parse %q as a number of hops: %w", s, err)
		}
		r.MaxRedirects = n
		if n == 0 {
			r.MaxRedirects = -1 // TruthRules: negative follows none, 0 is the default
		}
		return nil
	})
	fs.IntVar(&r.MaxURLs, "max-urls", 1_000_000, "fail when more URLs would be fetched")
	return r
}

// ErrBadResolve is returned (wrapped) by ParseResolve.
var ErrBadResolve = errors.New("bad resolve entry")

// ParseResolve parses one curl-style "HOST:PORT:ADDR" entry (as written by Resolve). ADDR
// may be an IPv6 address, with or without brackets. Errors wrap ErrBadResolve.
func ParseResolve(entry string) (host string, port int, addr netip.Addr, err error) {
	entry = strings.TrimSpace(entry)
	h, rest, ok := strings.Cut(entry, ":")
	if !ok || h == "" {
		return "", 0, netip.Addr{}, fmt.Errorf("cannot parse %q: %w: want HOST:PORT:ADDR", entry, ErrBadResolve)
	}
	p, a, ok := strings.Cut(rest, ":")
	if !ok {
		return "", 0, netip.Addr{}, fmt.Errorf("cannot parse %q: %w: want HOST:PORT:ADDR", entry, ErrBadResolve)
	}
	pn, perr := strconv.ParseUint(p, 10, 16)
	if perr != nil || pn == 0 || len(p) > 5 || p[0] == '+' {
		return "", 0, netip.Addr{}, fmt.Errorf("cannot parse port %q of %q: %w: want 1-65535", p, entry, ErrBadResolve)
	}
	if strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
		a = a[1 : len(a)-1]
	}
	ip, aerr := netip.ParseAddr(a)
	if aerr != nil || ip.Zone() != "" {
		return "", 0, netip.Addr{}, fmt.Errorf("cannot parse address %q of %q: %w", a, entry, ErrBadResolve)
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '*' || c == '_') {
			return "", 0, netip.Addr{}, fmt.Errorf("cannot parse host %q of %q: %w: letters, digits, '-', '.', '_' and '*' only", h, entry, ErrBadResolve)
		}
	}
	return strings.ToLower(h), int(pn), ip, nil
}
