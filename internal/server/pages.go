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
// Parameters: q, p (1-based page), signals=1.
func (s *Server) searchPage(w http.ResponseWriter, r *http.Request) {
	d := searchPageData{Page: 1}
	q := r.URL.Query()
	d.Signals = q.Get("signals") == "1"
	code := http.StatusOK
	req, err := s.searchParams(r)
	d.Query = req.Query
	if v := q.Get("p"); v != "" && err == nil {
		if d.Page, err = strconv.Atoi(v); err != nil || d.Page < 1 || (d.Page-1)*s.opt.PageSize > maxOffset {
			d.Page = 1
			err = errPage(maxOffset/s.opt.PageSize + 1)
		}
	}
	switch {
	case err != nil:
		d.Error, code = err.Error(), http.StatusBadRequest
	case s.opt.Searcher == nil:
		d.NoIndex, code = true, http.StatusServiceUnavailable
	case d.Query == "":
		d.Stats = s.opt.Searcher.Stats()
	default:
		d.Stats = s.opt.Searcher.Stats()
		req.Offset, req.Limit, req.Explain = (d.Page-1)*s.opt.PageSize, s.opt.PageSize, d.Signals
		res, err := s.search(r.Context(), req)
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
		d.Result = res
		d.TookMS = strconv.FormatFloat(float64(res.Took.Microseconds())/1000, 'f', 1, 64)
		d.Pages = (res.Total + s.opt.PageSize - 1) / s.opt.PageSize
		if len(res.Hits) > 0 {
			d.First = req.Offset + 1
			d.Last = req.Offset + len(res.Hits)
		}
		if d.Page > 1 {
			d.PrevURL = pageURL(d.Query, d.Page-1, d.Signals)
		}
		if d.Page < d.Pages && d.Page*s.opt.PageSize <= maxOffset {
			d.NextURL = pageURL(d.Query, d.Page+1, d.Signals)
		}
	}
	s.render(w, code, "search.html", d)
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

// render executes a template into a buffer first, so that a template
// error gives a clean 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("cannot render page", "page", name, "err", err)
		writeError(w, http.StatusInternalServerError, "cannot render the page; the server log says why")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}
