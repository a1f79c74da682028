package server

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strconv"
)

// searchPageData is what templates/search.html shows.
type searchPageData struct {
	Query   string
	Signals bool // show each hit's score, BM25, PageRank and explanation
	Error   string
	NoIndex bool
	Result  *SearchResult
	TookMS  string
	First   int // 1-based number of the first hit shown
	Last    int
	Page    int // 1-based
	Pages   int
	PrevURL string // "" on the first page
	NextURL string // "" on the last page
	Stats   IndexStats
}

// pageURL is the search page's own URL for query q, page p.
func pageURL(q string, p int, signals bool) string {
	v := url.Values{"q": {q}}
	if p > 1 {
		v.Set("p", strconv.Itoa(p))
	}
	if signals {
		v.Set("signals", "1")
	}
	return "/?" + v.Encode()
}

// searchPage renders the search page server-side (it works without
// JavaScript); static/search.js then updates it in place as one types.
// Parameters: q, p (1-based page), signals=1. A page that rendered once
// is served again from the response cache, byte for byte, while the index
// does not change.
func (s *Server) searchPage(w http.ResponseWriter, r *http.Request) {
	d := searchPageData{Page: 1}
	q := r.URL.Query()
	d.Signals = q.Get("signals") == "1"
	code := http.StatusOK
	req, err := s.parseSearch(q)
	d.Query = req.Query
	if v := q.Get("p"); v != "" && err == nil {
		if d.Page, err = strconv.Atoi(v); err != nil || d.Page < 1 || (d.Page-1)*s.opt.PageSize > maxOffset {
			d.Page = 1
			err = errPage(maxOffset/s.opt.PageSize + 1)
		}
	}
	key := ""
	switch {
	case err != nil:
		d.Error, code = err.Error(), http.StatusBadRequest
	case s.opt.Searcher == nil:
		d.NoIndex, code = true, http.StatusServiceUnavailable
	default:
		d.Stats = s.opt.Searcher.Stats()
		if s.responses != nil {
			key = pageKey(d.Query, d.Page, d.Signals)
			if resp, ok := s.responses.get(key, d.Stats); ok {
				serveResponse(w, r, resp, resp.body)
				return
			}
		}
		if d.Query == "" {
			break
		}
		req.Offset, req.Limit, req.Explain = (d.Page-1)*s.opt.PageSize, s.opt.PageSize, d.Signals
		res, err := s.search(r.Context(), req, d.Stats)
		if errors.Is(err, ErrUnavailable) {
			d.NoIndex, code = true, http.StatusServiceUnavailable
			break
		}
		if err != nil {
			code = statusOf(err)
			d.Error = err.Error()
			if code == http.StatusInternalServerError {
				s.log.Error("search failed", "err", err)
				d.Error = "the search failed; the server log says why"
			}
			break
		}
		d.setResult(res, req.Offset, s.opt.PageSize)
	}
	body, err := s.renderBytes("search.html", d)
	if err != nil {
		s.renderFailed(w, "search.html", err)
		return
	}
	if code != http.StatusOK || key == "" {
		writeHTML(w, code, body)
		return
	}
	res := d.Result
	if res == nil {
		res = &SearchResult{Cached: true} // the empty query's page: nothing to note
	}
	resp, err := s.cacheResponse(key, d.Stats, htmlType, res, body, func(hit *SearchResult) ([]byte, error) {
		d.setResult(hit, req.Offset, s.opt.PageSize)
		return s.renderBytes("search.html", d)
	})
	if err != nil {
		s.renderFailed(w, "search.html", err)
		return
	}
	serveResponse(w, r, resp, body)
}

// setResult fills the result part of the page from res, the hits from
// offset on, pageSize per page.
func (d *searchPageData) setResult(res *SearchResult, offset, pageSize int) {
	d.Result = res
	d.TookMS = strconv.FormatFloat(float64(res.Took.Microseconds())/1000, 'f', 1, 64)
	d.Pages = (res.Total + pageSize - 1) / pageSize
	d.First, d.Last = 0, 0
	if len(res.Hits) > 0 {
		d.First = offset + 1
		d.Last = offset + len(res.Hits)
	}
	d.PrevURL, d.NextURL = "", ""
	if d.Page > 1 {
		d.PrevURL = pageURL(d.Query, d.Page-1, d.Signals)
	}
	if d.Page < d.Pages && d.Page*pageSize <= maxOffset {
		d.NextURL = pageURL(d.Query, d.Page+1, d.Signals)
	}
}

type errPage int

func (e errPage) Error() string {
	return "page number: use a whole number from 1 to " + strconv.Itoa(int(e))
}

// dashboardPage is the crawl dashboard's frame; static/dashboard.js fills
// it from /api/crawl every second.
func (s *Server) dashboardPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "dashboard.html", struct{ HasCrawl bool }{s.opt.Crawl != nil})
}

const htmlType = "text/html; charset=utf-8"

// render executes a template into a buffer first, so that a template
// error gives a clean 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	body, err := s.renderBytes(name, data)
	if err != nil {
		s.renderFailed(w, name, err)
		return
	}
	writeHTML(w, code, body)
}

// renderBytes executes template name on data.
func (s *Server) renderBytes(name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(16 << 10)
	if err := s.pages.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *Server) renderFailed(w http.ResponseWriter, name string, err error) {
	s.log.Error("cannot render page", "page", name, "err", err)
	writeError(w, http.StatusInternalServerError, "cannot render the page; the server log says why")
}

// writeHTML writes a page that must not be cached (an error, or a page
// rendered without the response cache).
func writeHTML(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", htmlType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(body)
}
