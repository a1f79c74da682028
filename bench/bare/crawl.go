package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/html"
)

// options configure one bare crawl. The zero value is not usable: Seeds and
// Parallelism must be set (run fills every field from flags).
type options struct {
	Seeds       []string
	MaxDepth    int               // largest depth fetched (seeds are 0); negative: no limit
	Parallelism int               // fetch goroutines
	Resolve     map[string]string // "host:port" → "addr:port" to dial instead
	Suffixes    []string          // lower-case path suffixes not fetched
	UserAgent   string
	Timeout     time.Duration // per request
	MaxBody     int64         // bytes read from a body
}

// result is what a crawl did.
type result struct {
	Pages  int64 // requests completed (any status, network errors included)
	Errors int64 // network errors and answers outside 2xx/3xx
}

// crawler is the floor: a breadth-first loop with no frontier, robots.txt or
// politeness. Each depth level is fed through one channel to Parallelism
// goroutines; a mutex-guarded map is the only de-duplication. Levels make a
// page's depth its shortest link depth, the convention of the ground truth.
type crawler struct {
	opt    options
	client *http.Client

	mu   sync.Mutex
	seen map[string]struct{}

	pages, errors atomic.Int64
}

func newCrawler(opt options) *crawler {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := opt.Resolve[strings.ToLower(addr)]; ok {
				addr = to
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	return &crawler{
		opt:    opt,
		client: &http.Client{Transport: tr, Timeout: opt.Timeout},
		seen:   make(map[string]struct{}),
	}
}

// run crawls from the seeds until no URL is left within the depth limit or
// ctx ends. It returns an error only for unusable seeds.
func (c *crawler) run(ctx context.Context) (result, error) {
	var level []*url.URL
	for _, s := range c.opt.Seeds {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return result{}, fmt.Errorf("cannot use seed %q: want an absolute http(s) URL", s)
		}
		u = canonical(u)
		if c.add(u.String()) {
			level = append(level, u)
		}
	}
	for depth := 0; len(level) > 0 && ctx.Err() == nil; depth++ {
		follow := c.opt.MaxDepth < 0 || depth < c.opt.MaxDepth
		level = c.level(ctx, level, follow)
	}
	c.client.CloseIdleConnections()
	return result{Pages: c.pages.Load(), Errors: c.errors.Load()}, nil
}

// level fetches every URL of one depth level and returns the new URLs found
// on its pages (none unless follow).
func (c *crawler) level(ctx context.Context, urls []*url.URL, follow bool) []*url.URL {
	ch := make(chan *url.URL)
	var (
		wg     sync.WaitGroup
		nextMu sync.Mutex
		next   []*url.URL
	)
	for range c.opt.Parallelism {
		wg.Go(func() {
			var found []*url.URL
			for u := range ch {
				found = found[:0]
				for _, l := range c.fetch(ctx, u) {
					if follow && !c.skip(l) && c.add(l.String()) {
						found = append(found, l)
					}
				}
				if len(found) > 0 {
					nextMu.Lock()
					next = append(next, found...)
					nextMu.Unlock()
				}
			}
		})
	}
feed:
	for _, u := range urls {
		select {
		case ch <- u:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	return next
}

// add records u as seen and reports whether it was new.
func (c *crawler) add(u string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[u]; ok {
		return false
	}
	c.seen[u] = struct{}{}
	return true
}

// skip reports whether u's path ends with a denied suffix.
func (c *crawler) skip(u *url.URL) bool {
	p := strings.ToLower(u.Path)
	for _, s := range c.opt.Suffixes {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}

// fetch GETs u and returns the links of a 200 text/html answer.
func (c *crawler) fetch(ctx context.Context, u *url.URL) []*url.URL {
	defer c.pages.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		c.errors.Add(1)
		return nil
	}
	req.Header.Set("User-Agent", c.opt.UserAgent)
	resp, err := c.client.Do(req)
	if err != nil {
		c.errors.Add(1)
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opt.MaxBody))
	if err != nil {
		c.errors.Add(1)
		return nil
	}
	if resp.StatusCode >= 400 {
		c.errors.Add(1)
	}
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/html" {
		return nil
	}
	return extractLinks(resp.Request.URL, body)
}

// extractLinks returns the canonical http(s) URLs of the links of an HTML
// page, the set spider follows: a, area and link href (rel=nofollow skipped),
// iframe and frame src, and a meta refresh URL, resolved against the first
// <base href> when present. The caller owns the slice.
func extractLinks(page *url.URL, body []byte) []*url.URL {
	z := html.NewTokenizer(bytes.NewReader(body))
	var (
		refs []string
		base *url.URL
	)
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if !hasAttr {
			continue
		}
		var want string
		switch string(name) {
		case "a", "area", "link", "base":
			want = "href"
		case "iframe", "frame":
			want = "src"
		case "meta":
			want = "content"
		default:
			continue
		}
		var val, rel, equiv string
		found := false
		for {
			k, v, more := z.TagAttr()
			switch string(k) {
			case want:
				if !found {
					val, found = string(v), true
				}
			case "rel":
				rel = string(v)
			case "http-equiv":
				equiv = string(v)
			}
			if !more {
				break
			}
		}
		if !found {
			continue
		}
		switch string(name) {
		case "base":
			if base == nil {
				if b, err := page.Parse(strings.TrimSpace(val)); err == nil {
					base = b
				}
			}
			continue
		case "meta":
			if !strings.EqualFold(strings.TrimSpace(equiv), "refresh") {
				continue
			}
			var ok bool
			if val, ok = refreshURL(val); !ok {
				continue
			}
		case "a", "area", "link":
			if hasToken(rel, "nofollow") {
				continue
			}
		}
		refs = append(refs, val)
	}
	if base == nil {
		base = page
	}
	out := make([]*url.URL, 0, len(refs))
	for _, r := range refs {
		u, err := base.Parse(strings.TrimSpace(r))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		out = append(out, canonical(u))
	}
	return out
}

// refreshURL returns the URL of a meta refresh content ("5; url=/next").
func refreshURL(content string) (string, bool) {
	_, rest, ok := strings.Cut(content, ";")
	if !ok {
		_, rest, ok = strings.Cut(content, ",")
	}
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 4 || !strings.EqualFold(rest[:3], "url") {
		return "", false
	}
	rest = strings.TrimSpace(rest[3:])
	rest, ok = strings.CutPrefix(rest, "=")
	if !ok {
		return "", false
	}
	rest = strings.Trim(strings.TrimSpace(rest), `"'`)
	return rest, rest != ""
}

// hasToken reports whether the space-separated list s contains tok
// (case-insensitive).
func hasToken(s, tok string) bool {
	for f := range strings.FieldsSeq(s) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// canonical lower-cases the scheme and host, drops the fragment and gives an
// empty path "/" (dot segments are already removed by URL.Parse resolution).
func canonical(u *url.URL) *url.URL {
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path, u.RawPath = "/", ""
	}
	return u
}

// readResolve reads curl-style HOST:PORT:ADDR lines (blank lines and # comments
// skipped) into a map from "host:port" to "addr:port".
func readResolve(r io.Reader) (map[string]string, error) {
	m := make(map[string]string)
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		host, port, addr, err := parseResolve(line)
		if err != nil {
			return nil, fmt.Errorf("cannot use resolve line %d: %w", n, err)
		}
		m[net.JoinHostPort(host, port)] = net.JoinHostPort(addr, port)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read resolve entries: %w", err)
	}
	return m, nil
}

// parseResolve splits "HOST:PORT:ADDR" (ADDR may be a bracketed IPv6
// address) and lower-cases HOST.
func parseResolve(line string) (host, port, addr string, err error) {
	host, rest, ok := strings.Cut(line, ":")
	if !ok {
		return "", "", "", fmt.Errorf("%q is not HOST:PORT:ADDR", line)
	}
	port, addr, ok = strings.Cut(rest, ":")
	if !ok || host == "" || port == "" || addr == "" {
		return "", "", "", fmt.Errorf("%q is not HOST:PORT:ADDR", line)
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return "", "", "", fmt.Errorf("%q has a port that is not a number", line)
		}
	}
	addr = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	if net.ParseIP(addr) == nil {
		return "", "", "", fmt.Errorf("%q has an address that is not an IP", line)
	}
	return strings.ToLower(host), port, addr, nil
}

// readResolveFile is readResolve on a file ("" gives an empty map).
func readResolveFile(path string) (map[string]string, error) {
	if path == "" {
		return map[string]string{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open resolve file: %w", err)
	}
	defer f.Close()
	return readResolve(f)
}
