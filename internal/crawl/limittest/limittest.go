// Package limittest checks --max-pages (crawl.Budget) in every topology's
// tests: a crawl stopped by the limit holds exactly that many records over
// all its nodes' data directories, and the synthetic web saw a page request
// for those URLs and no other.
package limittest

import (
	"errors"
	"io/fs"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// RecordURLs returns the URL of every record line in the records.jsonl of
// dirs, in order (a URL recorded twice appears twice). A directory without
// records.jsonl holds none.
func RecordURLs(t testing.TB, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, dir := range dirs {
		err := store.EachRecordLine(dir, func(i int, l store.RecordLine) error {
			if l.Err != nil {
				t.Errorf("%s: record line %d is not a record: %v", dir, i, l.Err)
				return nil
			}
			out = append(out, l.Rec.URL)
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	return out
}

// key is a URL as the access log names it: lower-case host name (no port)
// and the path with its query.
func key(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return strings.ToLower(u.Hostname()) + u.RequestURI()
}

// PageRequests returns the page requests (robots.txt left out) in web's
// access log, as host+path keys, with how often each was requested.
func PageRequests(web *websim.Server) map[string]int {
	out := map[string]int{}
	for _, e := range web.Log().Entries() {
		if e.Path == "/robots.txt" || e.Path == "/robots-real.txt" {
			continue
		}
		out[strings.ToLower(e.Host)+e.Path]++
	}
	return out
}

// Exact checks that dirs hold exactly want record lines, no URL twice, and
// that the web's page requests are exactly the requests of those records,
// once each: no fetch went beyond the limit, not even one cancelled in
// flight. It returns the recorded URLs.
func Exact(t testing.TB, web *websim.Server, want int, dirs ...string) map[string]bool {
	t.Helper()
	got := RecordURLs(t, dirs...)
	seen := map[string]bool{}
	for _, u := range got {
		if seen[u] {
			t.Errorf("%s recorded twice", u)
		}
		seen[u] = true
	}
	if len(got) != want {
		t.Errorf("%d records over %d data directories, want exactly %d (--max-pages)", len(got), len(dirs), want)
	}
	reqs := PageRequests(web)
	recorded := map[string]bool{}
	for u := range seen {
		recorded[key(u)] = true
	}
	var extra []string
	total := 0
	for k, n := range reqs {
		total += n
		if !recorded[k] || n > 1 {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if total != len(got) || len(extra) > 0 {
		t.Errorf("the web answered %d page requests for %d records; requested but not recorded (or more than once): %.10q",
			total, len(got), extra)
	}
	return seen
}

// Resumed checks a crawl resumed with a larger limit (or none): the
// records of dirs hold every URL of before, no URL twice, and at least
// want URLs.
func Resumed(t testing.TB, before map[string]bool, want int, dirs ...string) map[string]bool {
	t.Helper()
	got := RecordURLs(t, dirs...)
	seen := map[string]bool{}
	for _, u := range got {
		if seen[u] {
			t.Errorf("%s recorded twice after resuming", u)
		}
		seen[u] = true
	}
	for u := range before {
		if !seen[u] {
			t.Errorf("%s, recorded before resuming, is lost", u)
		}
	}
	if len(seen) < want {
		t.Errorf("%d URLs recorded after resuming, want at least %d", len(seen), want)
	}
	return seen
}
