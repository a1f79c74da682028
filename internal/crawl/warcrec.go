package crawl

import (
	"context"
	"net/http"
	"time"

	"github.com/spider-crawler/spider/internal/fetch"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
	"github.com/spider-crawler/spider/internal/store/warc"
)

// warcExchange is the WARC exchange of a page's answer (--warc): the body
// as transferred (fetch.Response.Raw: gzip or br bytes kept with their
// Content-Encoding), and, for a 304 to a conditional request, a revisit
// record of the server-not-modified profile naming the capture the
// request's revisit schedule entry kept (its last change, else its last
// fetch). A 304 to a request without validators is archived as the
// response it is. Exact duplicates become revisits in the writer itself
// (warc.Options.Dedup: by payload digest, within this process).
func warcExchange(req frontier.Request, resp *fetch.Response, fetched time.Time) *warc.Exchange {
	ex := &warc.Exchange{
		URL: req.URL, Method: http.MethodGet, RequestHeader: resp.RequestHeader, Status: resp.Status, Proto: resp.Proto,
		RawResponseHeader: resp.RawHeader, ResponseHeader: resp.Header, Body: resp.Raw,
		IP: ipOnly(resp.RemoteAddr), Fetched: fetched, Truncated: resp.RawTruncated, Duration: resp.Duration,
	}
	if resp.Status == http.StatusNotModified && isConditional(resp.RequestHeader) {
		ex.Revisit = &warc.Revisit{Profile: warc.ProfileServerNotModified, RefersToDate: capturedAt(req.Schedule)}
		ex.Body = nil
	}
	return ex
}

// isConditional reports whether a request carried a validator.
func isConditional(h http.Header) bool {
	return h.Get("If-None-Match") != "" || h.Get("If-Modified-Since") != ""
}

// capturedAt is when the copy a revisit schedule entry describes was
// fetched: its last change, else its last fetch; zero when unknown.
func capturedAt(sched string) time.Time {
	if sched == "" {
		return time.Time{}
	}
	e, err := revisit.UnmarshalEntry([]byte(sched))
	if err != nil {
		return time.Time{}
	}
	if !e.LastChange.IsZero() {
		return e.LastChange
	}
	return e.LastFetch
}

// archiveRobots writes a robots.txt answer's request and response records
// (--warc), as Heritrix and wget archive robots.txt: under the final URL
// of its redirects. A failure is logged, not returned: the robots.txt
// answer still counts, and the next page's records meet the same disk.
func (f *Fetcher) archiveRobots(ctx context.Context, resp *fetch.Response) {
	if f.warc == nil || resp.FinalURL == nil {
		return
	}
	req := frontier.Request{URL: resp.FinalURL.String()}
	if err := f.warc.WriteExchange(ctx, *warcExchange(req, resp, time.Now().UTC())); err != nil {
		f.log.Error("cannot write the WARC records of robots.txt", "url", req.URL, "err", err)
	}
}
