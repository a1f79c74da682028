package crawl

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/fetch"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
	"github.com/spider-crawler/spider/internal/store/warc"
)

// TestWARCExchangeRevisit: a 304 answer to a conditional request is a
// server-not-modified revisit naming the capture of the request's schedule
// entry (its last change, else its last fetch); a 304 to a request without
// validators, and any other answer, is a response with the raw body.
func TestWARCExchangeRevisit(t *testing.T) {
	changed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fetched := changed.Add(72 * time.Hour)
	sched := func(e revisit.Entry) string { b, _ := e.MarshalBinary(); return string(b) }
	u, _ := url.Parse("http://a.test/p")
	resp := func(status int, h http.Header) *fetch.Response {
		return &fetch.Response{URL: u, FinalURL: u, Status: status, RequestHeader: h, Proto: "HTTP/1.1",
			RawHeader: []byte("HTTP/1.1 304 Not Modified\r\n\r\n"), Body: []byte("decoded"), Raw: []byte("raw"), RemoteAddr: "192.0.2.1:80"}
	}
	cond := http.Header{"If-None-Match": {`"x"`}}
	since := http.Header{"If-Modified-Since": {"Fri, 02 Jan 2026 03:04:05 GMT"}}
	for _, tc := range []struct {
		name    string
		sched   string
		resp    *fetch.Response
		revisit bool
		date    time.Time
	}{
		{"304 to If-None-Match", sched(revisit.Entry{LastFetch: fetched, LastChange: changed, ETag: `"x"`}), resp(304, cond), true, changed},
		{"304 to If-Modified-Since, no change seen", sched(revisit.Entry{LastFetch: fetched}), resp(304, since), true, fetched},
		{"304 with an unreadable entry", "\xff", resp(304, cond), true, time.Time{}},
		{"304 to an unconditional request", sched(revisit.Entry{LastFetch: fetched}), resp(304, http.Header{}), false, time.Time{}},
		{"200 to a conditional request", sched(revisit.Entry{LastFetch: fetched}), resp(200, cond), false, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := warcExchange(frontier.Request{URL: u.String(), Schedule: tc.sched}, tc.resp, fetched)
			if ex.IP != "192.0.2.1" || ex.URL != u.String() {
				t.Fatalf("exchange %+v", ex)
			}
			if !tc.revisit {
				if ex.Revisit != nil || string(ex.Body) != "raw" {
					t.Fatalf("revisit %+v, body %q; want a response with the raw body", ex.Revisit, ex.Body)
				}
				return
			}
			if ex.Revisit == nil || ex.Revisit.Profile != warc.ProfileServerNotModified || !ex.Revisit.RefersToDate.Equal(tc.date) || ex.Body != nil {
				t.Fatalf("revisit %+v, body %q; want server-not-modified referring to %v", ex.Revisit, ex.Body, tc.date)
			}
		})
	}
}
