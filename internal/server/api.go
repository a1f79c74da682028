package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/spider-crawler/spider/internal/topics"
)

// Limits of the API's input.
const (
	maxQueryBytes = 1000    // longest query
	maxOffset     = 10000   // deepest hit reachable by paging
	maxLimit      = 100     // most hits per request
	maxBodyBytes  = 1 << 20 // largest control request body
	maxSeeds      = 10000   // most seeds per request
	maxRankWeight = 100     // largest rank_weight
	searchTimeout = 10 * time.Second
)

// errorBody is every error answer: {"error": "what was wrong and what to do"}.
type errorBody struct {
	Error string `json:"error"`
}

// encodeJSON is v as indented JSON with a final newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := encodeJSON(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error": "cannot encode the answer"}`+"\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(b)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

// statusOf maps a Searcher's or Controller's error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrBadQuery), errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// searchParams parses and checks the search parameters shared by the
// page and the API: q, offset, limit, rank_weight, explain.
func (s *Server) searchParams(r *http.Request) (SearchRequest, error) {
	return s.parseSearch(r.URL.Query())
}

// parseSearch is searchParams on parsed query parameters. The query is
// normalised: white space trimmed at both ends and runs of it inside
// replaced by one space (the index splits words on it), so that "a  b"
// and "a b" are one cache entry.
func (s *Server) parseSearch(q url.Values) (SearchRequest, error) {
	req := SearchRequest{Query: normaliseQuery(q.Get("q")), Limit: s.opt.PageSize, RankWeight: -1}
	if !utf8.ValidString(req.Query) {
		return req, errors.New("the query is not valid UTF-8")
	}
	if len(req.Query) > maxQueryBytes {
		return req, fmt.Errorf("the query has %d bytes: use at most %d", len(req.Query), maxQueryBytes)
	}
	var err error
	if v := q.Get("offset"); v != "" {
		if req.Offset, err = strconv.Atoi(v); err != nil || req.Offset < 0 || req.Offset > maxOffset {
			return req, fmt.Errorf("offset %q: use a whole number from 0 to %d", v, maxOffset)
		}
	}
	if v := q.Get("limit"); v != "" {
		if req.Limit, err = strconv.Atoi(v); err != nil || req.Limit < 1 || req.Limit > maxLimit {
			return req, fmt.Errorf("limit %q: use a whole number from 1 to %d", v, maxLimit)
		}
	}
	if v := q.Get("rank_weight"); v != "" {
		if req.RankWeight, err = strconv.ParseFloat(v, 64); err != nil || !(req.RankWeight >= 0 && req.RankWeight <= maxRankWeight) {
			return req, fmt.Errorf("rank_weight %q: use a number from 0 (BM25 alone) to %d (the weight of PageRank in the score)", v, maxRankWeight)
		}
	}
	if v := q.Get("explain"); v != "" {
		if req.Explain, err = strconv.ParseBool(v); err != nil {
			return req, fmt.Errorf("explain %q: use true or false", v)
		}
	}
	return req, nil
}

// normaliseQuery trims q and replaces runs of white space by one space;
// it returns q itself when there is nothing to change.
func normaliseQuery(q string) string {
	q = strings.TrimSpace(q)
	prevSpace := false
	for _, r := range q {
		space := unicode.IsSpace(r)
		if space && (prevSpace || r != ' ') {
			return strings.Join(strings.Fields(q), " ")
		}
		prevSpace = space
	}
	return q
}

// search runs req with a time limit against the index version of stats
// (the Searcher's Stats, read by the caller once per request); an empty
// query gives no hits.
func (s *Server) search(ctx context.Context, req SearchRequest, stats IndexStats) (*SearchResult, error) {
	if req.Query == "" {
		return &SearchResult{Hits: []Hit{}, Terms: []string{}}, nil
	}
	run := func(ctx context.Context) (*SearchResult, error) {
		if s.slots != nil {
			select {
			case s.slots <- struct{}{}:
			default: // every slot taken: wait for one
				callSlotWaitHook(s)
				select {
				case s.slots <- struct{}{}:
				case <-ctx.Done():
					return nil, fmt.Errorf("cannot search now: the server is busy (%d searches running, others waiting), try again: %w", cap(s.slots), ctx.Err())
				}
			}
			defer func() { <-s.slots }()
		}
		start := time.Now()
		res, err := s.opt.Searcher.Search(ctx, req)
		if err != nil {
			return nil, err
		}
		if res.Took == 0 {
			res.Took = time.Since(start)
		}
		return normalise(res), nil
	}
	if s.cache != nil {
		return s.cache.get(ctx, req, stats, run)
	}
	ctx, cancel := context.WithTimeout(ctx, searchTimeout)
	defer cancel()
	return run(ctx)
}

// normalise replaces nil slices by empty ones (JSON [] rather than null).
func normalise(res *SearchResult) *SearchResult {
	if res.Hits == nil {
		res.Hits = []Hit{}
	}
	if res.Terms == nil {
		res.Terms = []string{}
	}
	for i := range res.Hits {
		if res.Hits[i].Snippet == nil {
			res.Hits[i].Snippet = []Fragment{}
		}
	}
	return res
}

const noIndexMsg = "no search index here: build it with spider index --data DIR, then restart spider serve"

func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) {
	if s.opt.Searcher == nil {
		writeError(w, http.StatusServiceUnavailable, noIndexMsg)
		return
	}
	req, err := s.searchParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Query == "" {
		writeError(w, http.StatusBadRequest, "no query: pass q, e.g. /api/search?q=crawler")
		return
	}
	stats := s.opt.Searcher.Stats()
	key := apiKey(req)
	if s.responses != nil {
		if resp, ok := s.responses.get(key, stats); ok {
			serveResponse(w, r, resp, resp.body)
			return
		}
	}
	res, err := s.search(r.Context(), req, stats)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	answer := func(res *SearchResult) ([]byte, error) {
		return encodeJSON(NewSearchAnswer(req, res))
	}
	body, err := answer(res)
	if err != nil {
		s.fail(w, r, fmt.Errorf("cannot encode the search answer: %w", err))
		return
	}
	if s.responses == nil {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(body)
		return
	}
	resp, err := s.cacheResponse(key, stats, "application/json", res, body, answer)
	if err != nil {
		s.fail(w, r, fmt.Errorf("cannot encode the search answer: %w", err))
		return
	}
	serveResponse(w, r, resp, body)
}

// cacheResponse stores the rendered answer for res under key. What is
// stored is the answer as a cache hit shows it (Cached set, no time in
// the index): body itself when res already came from the result cache,
// otherwise a second rendering. The answer to this request (body) gets
// the stored answer's ETag: the two differ only in that note.
func (s *Server) cacheResponse(key string, stats IndexStats, contentType string, res *SearchResult, body []byte, render func(*SearchResult) ([]byte, error)) (*response, error) {
	cached := body
	if !res.Cached {
		hit := *res
		hit.Took, hit.Cached = 0, true
		var err error
		if cached, err = render(&hit); err != nil {
			return nil, err
		}
	}
	resp := &response{body: cached, contentType: contentType, etag: etagOf(cached)}
	s.responses.put(key, stats, resp)
	return resp, nil
}

// etagOf is a weak entity tag of body: W/"64-bit xxhash in hex".
func etagOf(body []byte) string {
	return `W/"` + strconv.FormatUint(xxhash.Sum64(body), 16) + `"`
}

// serveResponse writes body (resp's body, or this request's rendering of
// the same answer) as a 200 with resp's ETag, or a 304 when the request's
// If-None-Match names that tag. "no-cache" lets a browser keep the
// answer and revalidate it (no body crosses the wire when the index did
// not change).
func serveResponse(w http.ResponseWriter, r *http.Request, resp *response, body []byte) {
	h := w.Header()
	h.Set("Content-Type", resp.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", resp.etag)
	// http.ServeContent does the conditional-request logic (RFC 9110
	// If-None-Match with weak comparison, 304 without a body).
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// fail answers an error from a Searcher or Controller: its message for
// input and state errors, a generic one (and a log line) otherwise.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	msg := err.Error()
	if code == http.StatusInternalServerError {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, code, msg)
}

func (s *Server) apiIndex(w http.ResponseWriter, r *http.Request) {
	if s.opt.Searcher == nil {
		writeError(w, http.StatusServiceUnavailable, noIndexMsg)
		return
	}
	writeJSON(w, http.StatusOK, s.opt.Searcher.Stats())
}

const noCrawlMsg = "no crawl to show here: start spider serve with --data DIR (or --redis URL), or crawl with spider crawl --addr"

func (s *Server) apiCrawl(w http.ResponseWriter, r *http.Request) {
	if s.opt.Crawl == nil {
		writeError(w, http.StatusServiceUnavailable, noCrawlMsg)
		return
	}
	st, err := s.opt.Crawl.Snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.opt.Control == nil {
		st.Control = false
	}
	// Lists a client iterates are [] when empty, whichever view filled st.
	if st.Topics == nil {
		st.Topics = []Topic{}
	}
	if st.TopicNodes == nil {
		st.TopicNodes = []topics.NodeLoad{}
	}
	writeJSON(w, http.StatusOK, st)
}

// controlAnswer is the body of a successful control request.
type controlAnswer struct {
	OK     bool   `json:"ok"`
	Action string `json:"action"`
	Added  *int   `json:"added,omitempty"`
}

const noControlMsg = "this server cannot control the crawl: it does not run in this process; use spider crawl --addr to serve a crawl you can pause, resume, stop and add seeds to"

// control runs a control action or answers 501 when there is no
// controller.
func (s *Server) control(w http.ResponseWriter, r *http.Request, action string, fn func(Controller) error) {
	if s.opt.Control == nil {
		writeError(w, http.StatusNotImplemented, noControlMsg)
		return
	}
	if err := fn(s.opt.Control); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("crawl control", "action", action, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, controlAnswer{OK: true, Action: action})
}

func (s *Server) apiPause(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, "pause", func(c Controller) error { return c.Pause(r.Context()) })
}

func (s *Server) apiResume(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, "resume", func(c Controller) error { return c.Resume(r.Context()) })
}

func (s *Server) apiStop(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, "stop", func(c Controller) error { return c.Stop(r.Context()) })
}

// readBody decodes a JSON request body of at most maxBodyBytes into v,
// refusing unknown fields and trailing data.
func readBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("cannot read the request body as JSON (at most %d bytes): %w", maxBodyBytes, err)
	}
	if dec.More() {
		return errors.New("the request body holds more than one JSON value")
	}
	return nil
}

// seedsRequest is the body of POST /api/crawl/seeds.
type seedsRequest struct {
	URLs []string `json:"urls"`
}

func (s *Server) apiSeeds(w http.ResponseWriter, r *http.Request) {
	if s.opt.Control == nil {
		writeError(w, http.StatusNotImplemented, noControlMsg)
		return
	}
	var body seedsRequest
	if err := readBody(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error()+`: send {"urls": ["https://example.org/"]}`)
		return
	}
	if len(body.URLs) == 0 || len(body.URLs) > maxSeeds {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("give from 1 to %d URLs in \"urls\"", maxSeeds))
		return
	}
	n, err := s.opt.Control.AddSeeds(r.Context(), body.URLs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("crawl control", "action", "seeds", "urls", len(body.URLs), "added", n, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, controlAnswer{OK: true, Action: "seeds", Added: &n})
}

// priorityRequest is the body of PUT /api/topics/{topic}/priority: the
// topic's new priority, 0..topics.MaxPriority. A crawl in this process
// applies it at the next URL it hands out; a topics crawl on a cluster at
// its coordinator's next daemon tick.
type priorityRequest struct {
	Priority *int `json:"priority"`
}

func (s *Server) apiTopicPriority(w http.ResponseWriter, r *http.Request) {
	if s.opt.Control == nil {
		writeError(w, http.StatusNotImplemented, noControlMsg)
		return
	}
	topic := r.PathValue("topic")
	var body priorityRequest
	if err := readBody(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error()+`: send {"priority": 2}`)
		return
	}
	if body.Priority == nil || topics.CheckPriority(*body.Priority) != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`give "priority" as a whole number from 0 (lowest) to %d`, topics.MaxPriority))
		return
	}
	s.control(w, r, "topic-priority", func(c Controller) error { return c.SetTopicPriority(r.Context(), topic, *body.Priority) })
}
