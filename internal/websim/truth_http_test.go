package websim

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/publicsuffix"
)

// This file is an independent crawler over real HTTP: its own URL normalisation, link
// extraction (x/net/html tokenizer), block labelling, robots.txt check and layered
// breadth-first search. Its results must equal Web.Truth.

type probe struct {
	status   int
	outcome  string // Final value
	ctype    string
	location string
	body     []byte
}

type indepCrawler struct {
	t        *testing.T
	client   *http.Client
	rules    TruthRules
	robots   map[string]*tinyRobots
	robotsMu sync.Mutex
}

func newIndepCrawler(t *testing.T, srv *Server, rules TruthRules) *indepCrawler {
	dial := &net.Dialer{Timeout: time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dial.DialContext(ctx, network, srv.Addr())
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &indepCrawler{
		t:     t,
		rules: rules,
		client: &http.Client{
			Transport:     tr,
			Timeout:       5 * time.Second, // well above a loaded machine's latency, well below HangTime
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		robots: map[string]*tinyRobots{},
	}
}

// fetch requests u, retrying 503 answers, and reads at most 1 MiB of (decoded) body.
func (c *indepCrawler) fetch(u string) probe {
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("User-Agent", "spider-test/1.0")
		resp, err := c.client.Do(req)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
				return probe{outcome: FinalTimeout}
			}
			return probe{outcome: FinalReset}
		}
		var r io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			if gz, err := gzip.NewReader(resp.Body); err == nil {
				r = gz
			}
		}
		body, _ := io.ReadAll(io.LimitReader(r, 1<<20))
		resp.Body.Close()
		if resp.StatusCode == 503 && attempt < 5 {
			continue
		}
		return probe{status: resp.StatusCode, outcome: strconv.Itoa(resp.StatusCode), ctype: resp.Header.Get("Content-Type"),
			location: resp.Header.Get("Location"), body: body}
	}
}

// canon is the test's own normaliser.
func canon(base *url.URL, ref string) (*url.URL, bool) {
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return nil, false
	}
	var u *url.URL
	if base == nil {
		u = (&url.URL{}).ResolveReference(r)
	} else {
		u = base.ResolveReference(r)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, false
	}
	u.Host = strings.ToLower(u.Host)
	u.Host = strings.TrimSuffix(u.Host, ":80")
	if u.Path == "" {
		u.Path = "/"
	}
	u.Fragment, u.RawFragment = "", ""
	return u, true
}

type foundLink struct {
	u        *url.URL
	nofollow bool
}

// extract returns the links of an HTML body and the links labelled noise by the
// link-text ratio of their innermost <p>, <td> or <div> block (> 1/4).
func extract(pageURL *url.URL, body []byte) (links []foundLink, noise []string) {
	type blk struct{ text, linkText int } // non-space characters: all, inside <a>
	type rawLink struct {
		ref      string
		nofollow bool
		blk      *blk
		isA      bool
	}
	base := pageURL
	baseSet := false
	inA := 0
	var raw []rawLink
	type frame struct {
		tag string
		b   *blk
	}
	var frames []frame
	cur := func() *blk {
		for i := len(frames) - 1; i >= 0; i-- {
			if frames[i].b != nil {
				return frames[i].b
			}
		}
		return nil
	}
	z := html.NewTokenizer(strings.NewReader(string(body)))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			attr := map[string]string{}
			for _, a := range tok.Attr {
				if _, ok := attr[a.Key]; !ok {
					attr[a.Key] = a.Val
				}
			}
			nofollow := slices.Contains(strings.Fields(strings.ToLower(attr["rel"])), "nofollow")
			add := func(ref string, isA bool) { raw = append(raw, rawLink{ref, nofollow, cur(), isA}) }
			switch tok.Data {
			case "base":
				if h, ok := attr["href"]; ok && !baseSet {
					if b, ok := canon(pageURL, h); ok {
						base, baseSet = b, true
					}
				}
			case "a":
				if h, ok := attr["href"]; ok {
					add(h, true)
				}
				if tt == html.StartTagToken {
					inA++
				}
			case "area", "link":
				if h, ok := attr["href"]; ok {
					add(h, false)
				}
			case "iframe", "frame", "img", "script":
				if s, ok := attr["src"]; ok {
					add(s, false)
				}
			case "meta":
				if strings.EqualFold(attr["http-equiv"], "refresh") {
					c := attr["content"]
					if i := strings.Index(strings.ToLower(c), "url="); i >= 0 {
						add(c[i+4:], false)
					}
				}
			case "p", "td", "div":
				if tt == html.StartTagToken {
					b := &blk{}
					frames = append(frames, frame{tok.Data, b})
				}
			}
		case html.EndTagToken:
			switch tok.Data {
			case "a":
				inA = max(0, inA-1)
			case "p", "td", "div":
				for i := len(frames) - 1; i >= 0; i-- {
					if frames[i].tag == tok.Data {
						frames = frames[:i]
						break
					}
				}
			}
		case html.TextToken:
			n := 0
			for _, r := range tok.Data {
				if !unicode.IsSpace(r) {
					n++
				}
			}
			if b := cur(); b != nil {
				b.text += n
				if inA > 0 {
					b.linkText += n
				}
			}
		}
	}
	for _, r := range raw {
		u, ok := canon(base, r.ref)
		if !ok {
			continue
		}
		links = append(links, foundLink{u: u, nofollow: r.nofollow})
		if r.isA && r.blk != nil && r.blk.text > 0 && float64(r.blk.linkText)/float64(r.blk.text) > 0.25 {
			noise = append(noise, u.String())
		}
	}
	slices.Sort(noise)
	return links, slices.Compact(noise)
}

// tinyRobots is the test's own robots.txt check (regexp based).
type tinyRobots struct {
	disallowAll bool
	rules       []tinyRule
}

type tinyRule struct {
	allow bool
	n     int
	re    *regexp.Regexp
}

func parseTiny(body []byte, agent string) *tinyRobots {
	if len(body) > 500*1024 {
		body = body[:500*1024]
	}
	type group struct {
		agents []string
		rules  []tinyRule
	}
	var groups []*group
	var g *group
	lastAgent := false
	for _, line := range strings.FieldsFunc(string(body), func(r rune) bool { return r == '\n' || r == '\r' }) {
		line, _, _ = strings.Cut(line, "#")
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		switch k {
		case "user-agent":
			if !lastAgent {
				g = &group{}
				groups = append(groups, g)
			}
			g.agents = append(g.agents, strings.ToLower(strings.Fields(v + " x")[0]))
			lastAgent = true
		case "allow", "disallow":
			lastAgent = false
			if g == nil || v == "" {
				continue
			}
			pat := "^" + strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSuffix(v, "$")), `\*`, ".*")
			if strings.HasSuffix(v, "$") {
				pat += "$"
			}
			g.rules = append(g.rules, tinyRule{allow: k == "allow", n: len(v), re: regexp.MustCompile(pat)})
		case "crawl-delay":
			lastAgent = false
		}
	}
	out := &tinyRobots{}
	for _, want := range []string{strings.ToLower(agent), "*"} {
		for _, g := range groups {
			if slices.Contains(g.agents, want) {
				out.rules = append(out.rules, g.rules...)
			}
		}
		if len(out.rules) > 0 || slices.ContainsFunc(groups, func(g *group) bool { return slices.Contains(g.agents, want) }) {
			return out
		}
	}
	return out
}

func (r *tinyRobots) allows(pq string) bool {
	if r.disallowAll {
		return false
	}
	best, allow := -1, true
	for _, rule := range r.rules {
		if rule.re.MatchString(pq) && (rule.n > best || rule.n == best && rule.allow) {
			best, allow = rule.n, rule.allow
		}
	}
	return allow
}

func (c *indepCrawler) robotsFor(u *url.URL) *tinyRobots {
	c.robotsMu.Lock()
	defer c.robotsMu.Unlock()
	if r, ok := c.robots[u.Host]; ok {
		return r
	}
	cur := "http://" + u.Host + "/robots.txt"
	r := &tinyRobots{}
	for range 6 {
		p := c.fetch(cur)
		if p.status >= 300 && p.status < 400 {
			base, _ := url.Parse(cur)
			next, _ := canon(base, p.location)
			cur = next.String()
			continue
		}
		switch {
		case p.status >= 200 && p.status < 300:
			r = parseTiny(p.body, c.rules.Agent)
		case p.status >= 500 || p.outcome == FinalReset || p.outcome == FinalTimeout:
			r.disallowAll = true
		}
		break
	}
	c.robots[u.Host] = r
	return r
}

func (c *indepCrawler) reason(u *url.URL, seeds []*url.URL) string {
	for _, s := range c.rules.Suffixes {
		if strings.HasSuffix(strings.ToLower(u.Path), s) {
			return ReasonSuffix
		}
	}
	in := false
	for _, s := range seeds {
		switch c.rules.Scope {
		case ScopeHost:
			in = in || s.Host == u.Host
		case ScopeSeeds:
			in = in || s.Hostname() == u.Hostname()
		case ScopeDomain:
			a, _ := publicsuffix.EffectiveTLDPlusOne(s.Hostname())
			b, _ := publicsuffix.EffectiveTLDPlusOne(u.Hostname())
			in = in || a == b
		case ScopeAny:
			in = true
		}
	}
	if !in {
		return ReasonScope
	}
	pq := u.EscapedPath()
	if u.RawQuery != "" {
		pq += "?" + u.RawQuery
	}
	if !c.robotsFor(u).allows(pq) {
		return ReasonRobots
	}
	return ""
}

func noiseURL(u *url.URL) bool {
	q := "&" + u.RawQuery
	return strings.Contains(u.Path, ";jsessionid=") || strings.HasPrefix(u.Path, "/calendar/") ||
		u.Path == "/beacon" || strings.Contains(q, "&sid=") || strings.Contains(q, "&utm_")
}

type crawlResult struct {
	fetch      []string
	final      map[string]string
	notFetch   map[string]string
	noiseLinks map[string][]string
	noiseURLs  []string
}

// crawl is the independent layered breadth-first crawl.
func (c *indepCrawler) crawl(seedList []string) crawlResult {
	res := crawlResult{final: map[string]string{}, notFetch: map[string]string{}, noiseLinks: map[string][]string{}}
	rank := map[string]int{ReasonSuffix: 0, ReasonScope: 1, ReasonRobots: 2, ReasonNofollow: 3, ReasonRedirects: 4, ReasonDepth: 5}
	exclude := func(k, r string) {
		if old, ok := res.notFetch[k]; !ok || rank[r] < rank[old] {
			res.notFetch[k] = r
		}
	}
	noise := map[string]bool{}
	note := func(u *url.URL) {
		if noiseURL(u) {
			noise[u.String()] = true
		}
	}
	var seeds []*url.URL
	for _, s := range seedList {
		u, _ := canon(nil, s)
		seeds = append(seeds, u)
	}
	seen := map[string]bool{}
	type item struct {
		u    *url.URL
		hops int
	}
	admit := func(u *url.URL, hops int, out *[]item) {
		k := u.String()
		if seen[k] {
			return
		}
		if r := c.reason(u, seeds); r != "" {
			exclude(k, r)
			return
		}
		seen[k] = true
		*out = append(*out, item{u, hops})
	}
	var cur []item
	for _, u := range seeds {
		note(u)
		admit(u, 0, &cur)
	}
	for depth := 0; len(cur) > 0; depth++ {
		var next []foundLink
		for len(cur) > 0 {
			probes := make([]probe, len(cur))
			var wg sync.WaitGroup
			sem := make(chan struct{}, 8)
			for i, it := range cur {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					probes[i] = c.fetch(it.u.String())
				}()
			}
			wg.Wait()
			var more []item
			for i, it := range cur {
				p, k := probes[i], it.u.String()
				res.fetch = append(res.fetch, k)
				res.final[k] = p.outcome
				if p.status >= 300 && p.status < 400 {
					tgt, ok := canon(it.u, p.location)
					if !ok {
						continue
					}
					note(tgt)
					if it.hops+1 > c.rules.MaxRedirects {
						res.final[k] = FinalTooManyRedirects
						exclude(tgt.String(), ReasonRedirects)
						continue
					}
					admit(tgt, it.hops+1, &more)
					continue
				}
				mt, _, _ := mime.ParseMediaType(p.ctype)
				if p.status != 200 || mt != "text/html" {
					continue
				}
				links, nl := extract(it.u, p.body)
				if len(nl) > 0 {
					res.noiseLinks[k] = nl
				}
				for _, l := range links {
					note(l.u)
				}
				next = append(next, links...)
			}
			cur = more
		}
		var layer []item
		for _, l := range next {
			k := l.u.String()
			if seen[k] {
				continue
			}
			if r := c.reason(l.u, seeds); r != "" {
				exclude(k, r)
				continue
			}
			if l.nofollow && !c.rules.FollowNofollow {
				exclude(k, ReasonNofollow)
				continue
			}
			if c.rules.MaxDepth >= 0 && depth+1 > c.rules.MaxDepth {
				exclude(k, ReasonDepth)
				continue
			}
			admit(l.u, 0, &layer)
		}
		cur = layer
	}
	for k := range seen {
		delete(res.notFetch, k)
	}
	slices.Sort(res.fetch)
	res.noiseURLs = slices.Sorted(maps.Keys(noise))
	return res
}

func TestTruthMatchesIndependentHTTPCrawl(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls several small webs over loopback")
	}
	hostile := Config{
		Profile: ProfileHostile, Hosts: 8, PagesPerHost: 25, Domains: 2, TroubleShare: 0.75,
		LargeSize: 256 << 10, BombSize: 2 << 20, HangTime: 10 * time.Second,
		SlowLatency: time.Millisecond, SlowBandwidth: 64 << 20,
	}
	cases := []struct {
		name  string
		cfg   Config
		rules TruthRules
		seeds int
	}{
		{"clean-seeds-unlimited", Config{Seed: 3, Hosts: 6, PagesPerHost: 30, Domains: 2}, TruthRules{MaxDepth: -1, Scope: ScopeSeeds}, 2},
		{"clean-domain-depth2", Config{Seed: 4, Hosts: 9, PagesPerHost: 20, Domains: 3}, TruthRules{MaxDepth: 2, Scope: ScopeDomain}, 1},
		{"hostile-domain-depth4", withSeed(hostile, 5), TruthRules{MaxDepth: 4, Scope: ScopeDomain}, 1},
		{"hostile-host-nofollow", withSeed(hostile, 6), TruthRules{MaxDepth: 3, Scope: ScopeHost, FollowNofollow: true, MaxRedirects: 2}, 2},
		{"hostile-any-agents", func() Config { c := withSeed(hostile, 7); c.Robots = "agents"; return c }(), TruthRules{MaxDepth: 2, Scope: ScopeAny, Agent: "Spider"}, 1},
		{"hostile-seeds-menu", withSeed(hostile, 8), TruthRules{MaxDepth: 3, Scope: ScopeSeeds}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := Start(t.Context(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			rules := tc.rules
			rules.Seeds = srv.SeedURLs(tc.seeds)
			truth, err := srv.Truth(rules)
			if err != nil {
				t.Fatal(err)
			}
			c := newIndepCrawler(t, srv, truth.Rules)
			got := c.crawl(rules.Seeds)
			if len(truth.MustFetch) < 20 {
				t.Errorf("truth fetches only %d URLs", len(truth.MustFetch))
			}
			compareSets(t, "MustFetch", truth.MustFetch, got.fetch)
			compareMaps(t, "Final", truth.Final, got.final)
			compareMaps(t, "MustNotFetch", truth.MustNotFetch, got.notFetch)
			compareSets(t, "NoiseURLs", truth.NoiseURLs, got.noiseURLs)
			if !maps.EqualFunc(truth.NoiseLinks, got.noiseLinks, slices.Equal) {
				for k, v := range truth.NoiseLinks {
					if !slices.Equal(v, got.noiseLinks[k]) {
						t.Errorf("NoiseLinks[%s]: truth %v, crawl %v", k, v, got.noiseLinks[k])
						break
					}
				}
				t.Errorf("NoiseLinks differ: truth %d pages, crawl %d pages", len(truth.NoiseLinks), len(got.noiseLinks))
			}
			if d := srv.Log().Duplicates(); len(d) > 0 {
				t.Errorf("the crawl requested URLs twice: %v", d)
			}
			if os.Getenv("WEBSIM_VERBOSE") != "" {
				t.Logf("%d fetched, %d not fetched, %d noise URLs, %d requests", len(truth.MustFetch), len(truth.MustNotFetch), len(truth.NoiseURLs), srv.Log().Len())
			}
		})
	}
}

func withSeed(c Config, seed int64) Config {
	c.Seed = seed
	return c
}

func compareSets(t *testing.T, name string, want, got []string) {
	t.Helper()
	w := map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	g := map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	n := 0
	for s := range w {
		if !g[s] && n < 10 {
			t.Errorf("%s: truth has %s, crawl does not", name, s)
			n++
		}
	}
	for s := range g {
		if !w[s] && n < 10 {
			t.Errorf("%s: crawl has %s, truth does not", name, s)
			n++
		}
	}
}

func compareMaps(t *testing.T, name string, want, got map[string]string) {
	t.Helper()
	n := 0
	for k, v := range want {
		if got[k] != v && n < 10 {
			t.Errorf("%s[%s]: truth %q, crawl %q", name, k, v, got[k])
			n++
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && n < 10 {
			t.Errorf("%s[%s]: crawl %q, truth has none", name, k, v)
			n++
		}
	}
}
