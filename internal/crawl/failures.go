package crawl

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// MaxFailureExamples is how many failed URLs a FailureClass names.
const MaxFailureExamples = 3

// FailureClass is one class of failed URLs in a crawl summary: the outcome
// class, how many URLs ended with it, the first few of them (in the order
// the crawl recorded them, so failed seeds come first) and what to do.
type FailureClass struct {
	Class    string      `json:"class"`    // outcome class: "dns", "refused", "404", "503"…
	URLs     int64       `json:"urls"`     // URLs that ended with it
	Examples []FailedURL `json:"examples"` // the first MaxFailureExamples of them
	Hint     string      `json:"hint"`     // what the class means and what to do
}

// FailedURL is an example of a failure class: the URL and the record's
// error text (empty for HTTP statuses and robots.txt disallows).
type FailedURL struct {
	URL   string `json:"url"`
	Error string `json:"error,omitempty"`
}

// Failed reports whether a URL that ended with outcome failed: every
// outcome but a 2xx or 3xx answer (a redirect's target is a URL of its own).
func Failed(outcome string) bool {
	if outcome == OutcomeSitemap || outcome == OutcomeNoSitemap {
		return false // a sitemap read, or a site without one (sitemaps.go)
	}
	code, err := strconv.Atoi(outcome)
	if err != nil {
		return true
	}
	return code < 200 || code >= 400
}

// Hint says what a failure class means and what to do about it, naming
// only flags that exist. It is never empty.
func Hint(outcome string) string {
	switch outcome {
	case OutcomeDNS:
		return "the host name did not resolve: check the name or your network"
	case OutcomeRefused:
		return "the connection was refused: nothing listens on that host and port; check the URL's port and that the server runs"
	case OutcomeTLS:
		return "the TLS handshake or the server's certificate failed: check the URL (https on a plain-HTTP port?) and the server's certificate"
	case OutcomeUnreachable:
		return "no route to the host: check your network"
	case OutcomeTimeout:
		return "the server did not answer in time: check your network, or raise --connect-timeout, --first-byte-timeout or --timeout"
	case OutcomeReset:
		return "the connection broke off (reset or closed early) after --max-retries retries: try again later"
	case OutcomeForbiddenAddress:
		return "the host resolves to a loopback, private or link-local address, which spider refuses by default: pass --allow-private to crawl it on purpose"
	case OutcomeRobots:
		return "robots.txt disallows these URLs for the crawler's product token (--robots-agent, from --user-agent): spider obeys it"
	case OutcomeRobotsUnavailable:
		return "robots.txt answered an error after --max-retries retries, so the host counts as disallowed (RFC 9309): try again later"
	case OutcomeTooManyRedirects:
		return "a redirect chain was longer than --max-redirects: raise it, or check the site for a redirect loop"
	case OutcomeSitemapFailed:
		return "a sitemap (a robots.txt Sitemap: line or /sitemap.xml) could not be read: see the error of its line in DATA/records.jsonl; the crawl went on without it (--sitemaps=false reads none)"
	case OutcomeError:
		return "see the error of each URL's line in DATA/records.jsonl"
	}
	code, err := strconv.Atoi(outcome)
	switch {
	case err != nil:
		return "see the error of each URL's line in DATA/records.jsonl"
	case code == 404 || code == 410:
		return "the page does not exist: a mistyped seed or a broken link"
	case code == 401 || code == 403:
		return "the server refuses access: the pages need a login, or the site blocks crawlers"
	case code == 429:
		return "the server asks to slow down: raise --delay or lower --per-host"
	case code >= 500 && code < 600:
		return "the server failed after --max-retries retries: try again later"
	case code >= 400 && code < 500:
		return "the server rejected the request"
	}
	return "the server gave an answer that is not a page"
}

// failureCollector groups failed records into FailureClasses.
type failureCollector struct {
	classes map[string]*FailureClass
}

func (c *failureCollector) add(url, outcome, errText string) {
	if !Failed(outcome) {
		return
	}
	if c.classes == nil {
		c.classes = map[string]*FailureClass{}
	}
	fc := c.classes[outcome]
	if fc == nil {
		fc = &FailureClass{Class: outcome, Hint: Hint(outcome)}
		c.classes[outcome] = fc
	}
	fc.URLs++
	if len(fc.Examples) < MaxFailureExamples {
		fc.Examples = append(fc.Examples, FailedURL{URL: url, Error: errText})
	}
}

// list returns the classes, the largest first (ties by class name).
func (c *failureCollector) list() []FailureClass {
	out := make([]FailureClass, 0, len(c.classes))
	for _, fc := range c.classes {
		out = append(out, *fc)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].URLs != out[j].URLs {
			return out[i].URLs > out[j].URLs
		}
		return out[i].Class < out[j].Class
	})
	return out
}

// FailedURLs is the number of URLs in s that failed (the sum over
// s.Failures).
func (s *Summary) FailedURLs() int64 {
	var n int64
	for _, fc := range s.Failures {
		n += fc.URLs
	}
	return n
}

// NothingFetched reports whether the crawl failed as a whole: some URLs
// failed and none was fetched with a 2xx answer, so every seed failed
// (or led only to failures through redirects).
func (s *Summary) NothingFetched() bool {
	return s.Rows[Row200] == 0 && s.FailedURLs() > 0
}

// PrintFailures writes the failure classes, each with its count, hint and
// first examples (error texts cut to one short line); nothing when no URL
// failed.
func (s *Summary) PrintFailures(w io.Writer) {
	if len(s.Failures) == 0 {
		return
	}
	fmt.Fprintf(w, "failed: %d of %d URLs, by class:\n", s.FailedURLs(), s.URLs)
	for _, fc := range s.Failures {
		fmt.Fprintf(w, "  %s: %d URL%s: %s\n", fc.Class, fc.URLs, plural(fc.URLs), fc.Hint)
		for _, ex := range fc.Examples {
			if ex.Error == "" {
				fmt.Fprintf(w, "    %s\n", ex.URL)
				continue
			}
			fmt.Fprintf(w, "    %s  (%s)\n", ex.URL, shorten(ex.Error, 160))
		}
		if more := fc.URLs - int64(len(fc.Examples)); more > 0 {
			fmt.Fprintf(w, "    … and %d more (spider export lists every record)\n", more)
		}
	}
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// shorten cuts s to one line of at most n runes, marking a cut with "…".
func shorten(s string, n int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
