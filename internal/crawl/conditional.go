package crawl

import (
	"net/http"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/fetch"
	"github.com/spider-crawler/spider/internal/revisit"
)

// conditionalHeaders makes r a conditional GET with the validators of the
// revisit schedule entry sched (frontier.Request.Schedule): If-None-Match
// with the stored ETag, If-Modified-Since with the stored Last-Modified. It
// reports whether r carries either. An empty or unreadable entry (a first
// fetch; a damaged schedule, fetched again as new) sends neither.
func conditionalHeaders(r *fetch.Request, sched string) bool {
	if sched == "" {
		return false
	}
	e, err := revisit.UnmarshalEntry([]byte(sched))
	if err != nil {
		return false
	}
	etag, since := e.Validators()
	if etag == "" && since.IsZero() {
		return false
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	if etag != "" && validETag(etag) {
		r.Header.Set("If-None-Match", etag)
	}
	if !since.IsZero() {
		r.Header.Set("If-Modified-Since", since.UTC().Format(http.TimeFormat))
	}
	return len(r.Header) > 0
}

// validETag reports whether an ETag may be sent back as a header value: no
// control characters (a hostile server's value never splits our request).
func validETag(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// validatorsOf returns an answer's ETag and Last-Modified (zero when absent
// or unparseable). Whether a Last-Modified in the future is kept is the
// revisit policy's decision (revisit.Policy.Observe drops it).
func validatorsOf(resp *fetch.Response) (etag string, lastModified time.Time) {
	if resp.Header == nil {
		return "", time.Time{}
	}
	etag = strings.TrimSpace(resp.Header.Get("ETag"))
	if len(etag) > revisit.MaxETag || !validETag(etag) {
		etag = ""
	}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		if t, err := http.ParseTime(lm); err == nil {
			lastModified = t.UTC()
		}
	}
	return etag, lastModified
}
