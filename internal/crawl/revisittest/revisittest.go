// Package revisittest judges the records of a continuous crawl (issue #26)
// against websim's change history, once for every topology's tests: the
// single-node engine, master–worker, peer-to-peer, layered and §0 crawls,
// and the CLI tests that kill them.
//
// Judge walks records in the order given (callers merging several data
// directories sort them first with SortByFetchTime) and compares every
// revisit — a URL's 200 or 304 record after an earlier 200 or 304 — with
// the page's versions at the two fetch times: a revisit of an unchanged
// page should be answered 304, a changed page must never be answered 304
// and must be stored again. A revisit with either fetch time within the
// slack of a change, or of a page without a change history, is skipped
// (ambiguous: a request reaches the server a little after its record's
// time). The Report holds the counts and every violation, by Kind; each
// test fails on the kinds it checks (Report.Check) and on its thresholds
// (Report.Expect, or its own).
//
// Records, Fetched and Scheduled read a crawl's data directory and its
// revisit schedule. This is test support: production code must not import
// it (internal/archtest).
package revisittest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// DefaultSlack is the slack Judge uses when Options.Slack is zero: a
// record's fetch time within it of a change is ambiguous.
const DefaultSlack = 150 * time.Millisecond

// Web is the change history Judge reads; *websim.Web implements it.
// VersionAt reports the version of the page at rawURL at t, and false for
// a URL without a change history.
type Web interface {
	VersionAt(rawURL string, t time.Time) (version int, ok bool)
}

// Options tune Judge.
type Options struct {
	// Slack: a revisit whose previous or own fetch time is within Slack of
	// a change is skipped. Zero means DefaultSlack.
	Slack time.Duration
	// Faulty reports whether a URL's host has a validator fault; the
	// unchanged revisits of such URLs are counted apart
	// (Report.FaultyUnchanged, Report.Faulty304). Nil: no host is faulty.
	Faulty func(rawURL string) bool
}

// FaultyHosts is an Options.Faulty for web: a URL is faulty when its host
// has a validator fault (websim.Web.HostFault).
func FaultyHosts(web *websim.Web) func(rawURL string) bool {
	return func(rawURL string) bool { return web.HostFault(HostName(rawURL)) != 0 }
}

// Kind is a kind of violation.
type Kind int

// The violations Judge reports.
const (
	// First304: a URL's first answered record is a 304 (a conditional
	// request without a copy?).
	First304 Kind = iota + 1
	// Stored304: a 304 record points at a stored page.
	Stored304
	// Changed304: the page changed between the two fetches and the revisit
	// was answered 304.
	Changed304
	// ChangedNotStored: the page changed, the revisit was answered with a
	// page, and it was not stored with a new fingerprint (no page number,
	// no fingerprint, or the stored copy's). The counts' weaker test is
	// Report.Restored (a page number only).
	ChangedNotStored
	// UnchangedNewFingerprint: the page did not change, the revisit was
	// answered with a page whose fingerprint differs from the stored
	// copy's.
	UnchangedNewFingerprint
)

// Violation is one record Judge found wrong.
type Violation struct {
	Kind Kind
	URL  string
	Msg  string // what was wrong, without the URL
}

// String is the URL and what was wrong, as a test reports it.
func (v Violation) String() string { return v.URL + ": " + v.Msg }

// Report is what Judge found. Counts of revisits judged exclude the
// skipped ones.
type Report struct {
	// URLs: every URL with a record, whatever its status.
	URLs map[string]bool
	// Unchanged: revisits of unchanged pages on hosts without a validator
	// fault; Got304: of them, answered 304.
	Unchanged, Got304 int
	// FaultyUnchanged, Faulty304: the same on hosts with a validator fault
	// (Options.Faulty).
	FaultyUnchanged, Faulty304 int
	// Changed: revisits of changed pages answered with a page (not 304);
	// Restored: of them, stored (a page number); RestoredNew: of them,
	// stored with a new, non-empty fingerprint.
	Changed, Restored, RestoredNew int
	// Changed304: revisits of changed pages answered 304 (each also a
	// Changed304 violation).
	Changed304 int
	// Skipped: revisits not judged (near a change, or no change history).
	Skipped int
	// Violations, in record order.
	Violations []Violation
}

// Judge judges recs, in the order given, against web's history (see the
// package comment). Records other than 200 and 304 are only counted in
// Report.URLs. The fingerprint of a URL's stored copy is that of its first
// record, then of every 200 skipped and of every changed revisit.
func Judge(recs []store.Record, web Web, opt Options) Report {
	slack := opt.Slack
	if slack == 0 {
		slack = DefaultSlack
	}
	faulty := opt.Faulty
	if faulty == nil {
		faulty = func(string) bool { return false }
	}
	ambiguous := func(u string, at time.Time) bool {
		a, _ := web.VersionAt(u, at.Add(-slack))
		b, _ := web.VersionAt(u, at.Add(slack))
		return a != b
	}
	rep := Report{URLs: map[string]bool{}}
	bad := func(k Kind, u, format string, args ...any) {
		rep.Violations = append(rep.Violations, Violation{Kind: k, URL: u, Msg: fmt.Sprintf(format, args...)})
	}
	last := map[string]store.Record{} // the URL's last record that answered (200 or 304)
	fp := map[string]string{}         // the stored copy's fingerprint
	for _, r := range recs {
		rep.URLs[r.URL] = true
		if r.Status != 200 && r.Status != 304 {
			continue
		}
		prev, seen := last[r.URL]
		last[r.URL] = r
		if r.Status == 304 && r.PageNo >= 0 {
			bad(Stored304, r.URL, "a 304 record points at a stored page %d", r.PageNo)
		}
		if !seen {
			if r.Status == 304 {
				bad(First304, r.URL, "first fetch answered 304 (a conditional request without a copy?)")
			}
			fp[r.URL] = r.Fingerprint
			continue
		}
		if _, ok := web.VersionAt(r.URL, r.FetchedAt); !ok || ambiguous(r.URL, prev.FetchedAt) || ambiguous(r.URL, r.FetchedAt) {
			rep.Skipped++
			if r.Status == 200 {
				fp[r.URL] = r.Fingerprint
			}
			continue
		}
		v0, _ := web.VersionAt(r.URL, prev.FetchedAt)
		v1, _ := web.VersionAt(r.URL, r.FetchedAt)
		if v0 == v1 {
			if faulty(r.URL) {
				rep.FaultyUnchanged++
				if r.Status == 304 {
					rep.Faulty304++
				}
			} else {
				rep.Unchanged++
				if r.Status == 304 {
					rep.Got304++
				}
			}
			if r.Status != 304 && r.Fingerprint != fp[r.URL] {
				bad(UnchangedNewFingerprint, r.URL, "unchanged (version %d) but fetched with a new fingerprint", v1)
			}
			continue
		}
		if r.Status == 304 {
			rep.Changed304++
			bad(Changed304, r.URL, "changed (version %d → %d) but answered 304", v0, v1)
		} else {
			rep.Changed++
			if r.PageNo >= 0 {
				rep.Restored++
			}
			if r.PageNo < 0 || r.Fingerprint == "" || r.Fingerprint == fp[r.URL] {
				bad(ChangedNotStored, r.URL, "changed (version %d → %d) but not stored with a new fingerprint (page %d, %q)", v0, v1, r.PageNo, r.Fingerprint)
			} else {
				rep.RestoredNew++
			}
		}
		fp[r.URL] = r.Fingerprint
	}
	return rep
}

// Add adds o's counts, URLs and violations to r (a crawl judged per data
// directory, summed).
func (r *Report) Add(o Report) {
	if r.URLs == nil {
		r.URLs = map[string]bool{}
	}
	for u := range o.URLs {
		r.URLs[u] = true
	}
	r.Unchanged += o.Unchanged
	r.Got304 += o.Got304
	r.FaultyUnchanged += o.FaultyUnchanged
	r.Faulty304 += o.Faulty304
	r.Changed += o.Changed
	r.Restored += o.Restored
	r.RestoredNew += o.RestoredNew
	r.Changed304 += o.Changed304
	r.Skipped += o.Skipped
	r.Violations = append(r.Violations, o.Violations...)
}

// Check reports every violation of the given kinds as a test error, in
// record order.
func (r Report) Check(t testing.TB, kinds ...Kind) {
	t.Helper()
	for _, v := range r.Violations {
		for _, k := range kinds {
			if v.Kind == k {
				t.Errorf("%s", v)
				break
			}
		}
	}
}

// Expect applies the distributed topologies' thresholds: it stops the test
// (Fatalf) unless at least minUnchanged unchanged and minChanged changed
// revisits were judged, and fails it (Errorf) unless ≥ 80 % of the
// unchanged ones were answered 304 (hint, if any, follows the message) and
// every changed page was stored again (Restored == Changed).
func (r Report) Expect(t testing.TB, minUnchanged, minChanged int, hint string) {
	t.Helper()
	if r.Unchanged < minUnchanged || r.Changed < minChanged {
		t.Fatalf("too few revisits to judge: %d unchanged, %d changed (want ≥ %d and ≥ %d)", r.Unchanged, r.Changed, minUnchanged, minChanged)
	}
	if hint != "" {
		hint = " " + hint
	}
	if float64(r.Got304) < 0.8*float64(r.Unchanged) {
		t.Errorf("%d of %d revisits to unchanged pages answered 304, want ≥ 80%%%s", r.Got304, r.Unchanged, hint)
	}
	if r.Restored != r.Changed {
		t.Errorf("%d of %d changed pages stored again", r.Restored, r.Changed)
	}
}

// Records returns every record of the data directories dirs, each
// directory's in file order, one after the other.
func Records(t testing.TB, dirs ...string) []store.Record {
	t.Helper()
	var out []store.Record
	for _, d := range dirs {
		rs, err := store.OpenRecords(d, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = rs.Iterate(func(r store.Record) error { out = append(out, r); return nil })
		rs.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// SortByFetchTime sorts recs by fetch time, records of the same time kept
// in their order: the order to judge records merged from several
// directories in.
func SortByFetchTime(recs []store.Record) {
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].FetchedAt.Before(recs[j].FetchedAt) })
}

// Fetched returns the URLs of the data directory dir with a 200 or 304
// record fetched at or after since.
func Fetched(t testing.TB, dir string, since time.Time) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range Records(t, dir) {
		if (r.Status == 200 || r.Status == 304) && !r.FetchedAt.Before(since) {
			out[r.URL] = true
		}
	}
	return out
}

// Scheduled opens the revisit schedule at path (a state file: a data
// directory's "schedule", or a single-node crawl's "state") and returns
// the URLs it holds, due at any time within a day or pending, and how many
// were due. With entryRequired, a pending URL counts only if its request
// carries its schedule entry (as TakeDue made it pending).
func Scheduled(t testing.TB, path string, entryRequired bool) (have map[string]bool, due int) {
	t.Helper()
	st, err := state.Open(path, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	have = map[string]bool{}
	if err := st.LoadPending(ctx, func(q frontier.Request) error { have[q.URL] = !entryRequired || q.Schedule != ""; return nil }); err != nil {
		t.Fatal(err)
	}
	qs, err := st.TakeDue(ctx, time.Now().Add(24*time.Hour), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		have[q.URL] = true
	}
	return have, len(qs)
}

// Missing returns the URLs want holds (true) and have does not, sorted:
// pages lost from a schedule, or not fetched again.
func Missing(want, have map[string]bool) []string {
	var out []string
	for u, ok := range want {
		if ok && !have[u] {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out
}

// StartWeb starts websim with cfg until the test ends.
func StartWeb(t testing.TB, cfg websim.Config) *websim.Server {
	t.Helper()
	srv, err := websim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("cannot start websim: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// ResolveFile writes srv's --resolve lines to a file in dir and returns
// its path (spider crawl --resolve-file).
func ResolveFile(t testing.TB, dir string, srv *websim.Server) string {
	t.Helper()
	p := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(p, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// HostName is the host name of a URL (no port), "" if it does not parse.
func HostName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
