package websim

import (
	"bytes"
	"compress/gzip"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// Content types.
const (
	ctHTML  = "text/html; charset=utf-8"
	ctPlain = "text/plain; charset=utf-8"
)

// answer is what the model says a URL answers; the handler serves it and the ground
// truth reads it.
type answer struct {
	rt       route
	status   int
	ctype    string
	location string // Location header of redirects
	doc      bool   // the body is a generated page (w.build, or w.buildError for errors)
	parse    bool   // a crawler extracts this answer's links (200 and text/html)
	final    string // the outcome a correct crawl records
}

// routeOf parses a request path of host hi, honouring the enabled behaviours.
func (w *Web) routeOf(path string) (route, bool) {
	if w.cfg.features.Has(FeatureNoise) {
		path, _ = stripSession(path)
	}
	rt, ok := parsePath(path, w.shape)
	if !ok || !w.served(rt) {
		return route{}, false
	}
	return rt, true
}

// served reports whether the behaviour a route belongs to is enabled.
func (w *Web) served(rt route) bool {
	f := w.cfg.features
	switch rt.kind {
	case rRedirect:
		return f.Has(FeatureRedirects) || f.Has(FeatureLongRedirects)
	case rLoop:
		return f.Has(FeatureRedirectLoops)
	case rGone:
		return f.Has(FeatureGone)
	case rError:
		return f.Has(FeatureServerErrors)
	case rBusy:
		return f.Has(FeatureUnavailable)
	case rHang:
		return f.Has(FeatureHang)
	case rReset:
		return f.Has(FeatureReset)
	case rPlain, rBin:
		return f.Has(FeatureWrongType)
	case rCharset:
		return f.Has(FeatureCharsets)
	case rMalformed:
		return f.Has(FeatureMalformed)
	case rLarge:
		return f.Has(FeatureLarge)
	case rBomb:
		return f.Has(FeatureGzipBomb)
	case rTrap:
		return f.Has(FeatureTraps)
	case rPrint:
		return f.Has(FeatureDuplicates) || w.cfg.NearDups
	case rMirror, rDated:
		return w.cfg.NearDups
	case rCalendar, rBeacon:
		return f.Has(FeatureNoise)
	case rNews:
		return rt.b <= w.published(time.Now())
	case rLenHuge, rLenStall, rLenCap:
		return w.cfg.LyingLength
	}
	return true
}

// answerOf returns the answer of path on host hi.
func (w *Web) answerOf(hi int, path string) answer {
	rt, ok := w.routeOf(path)
	if !ok {
		return answer{status: 404, ctype: ctHTML, doc: true, final: "404"}
	}
	a := answer{rt: rt, status: 200, ctype: ctHTML, doc: true, parse: true, final: "200"}
	switch rt.kind {
	case rCharset:
		a.ctype = "text/html"
		if rt.b == 0 {
			a.ctype += "; charset=" + charsetNames[rt.a]
		}
	case rPlain:
		a.ctype, a.parse = ctPlain, false
	case rBin, rBomb:
		a.doc = false
	case rHang:
		a.doc, a.parse, a.final = false, false, "timeout"
	case rLenHuge:
		a.doc, a.parse, a.final = false, false, "reset"
	case rLenStall, rLenCap:
		a.doc, a.parse, a.final = false, false, "timeout"
	case rReset:
		a.doc, a.parse, a.status, a.final = false, false, 0, "reset"
	case rGone, rError:
		a.status = 410
		if rt.kind == rError {
			a.status = 500
		}
		a.parse, a.final = false, strconv.Itoa(a.status)
	case rRedirect:
		a.status, a.doc, a.parse, a.final = rt.a, false, false, strconv.Itoa(rt.a)
		var target []byte
		if rt.b > 1 {
			target = appendPath(nil, route{kind: rRedirect, a: rt.a, b: rt.b - 1, c: rt.c})
		} else {
			target = appendPath(nil, w.shape.pageRoute(rt.c))
		}
		if rt.b%2 == 0 {
			a.location = w.hosts[hi].origin + string(target)
		} else {
			a.location = string(target)
		}
	case rLoop:
		a.status, a.doc, a.parse, a.final = 302, false, false, "302"
		if rt.b == 0 {
			a.location = w.hosts[hi].origin + string(appendPath(nil, route{kind: rLoop, a: rt.a, b: 1}))
		} else {
			a.location = "a"
		}
	case rRobots, rRobotsReal:
		ra := w.robotsFor(hi, rt.kind == rRobotsReal)
		a.status, a.location, a.ctype, a.doc, a.parse = ra.status, ra.location, ctPlain, false, false
		a.final = strconv.Itoa(ra.status)
	case rSitemap, rCSS, rJS, rPNG, rJPG, rGIF, rPDF, rBeacon:
		a.doc, a.parse = false, false
		a.ctype = staticTypes[rt.kind]
	}
	return a
}

var staticTypes = map[routeKind]string{
	rSitemap: "application/xml; charset=utf-8", rCSS: "text/css; charset=utf-8",
	rJS: "text/javascript; charset=utf-8", rPNG: "image/png", rJPG: "image/jpeg",
	rGIF: "image/gif", rPDF: "application/pdf", rBeacon: "image/gif",
}

// Handler returns the web's HTTP handler: it serves every host by the request's Host
// header (port ignored) and answers 421 for unknown hosts. Every request is recorded in
// Log().
func (w *Web) Handler() http.Handler { return http.HandlerFunc(w.serveHTTP) }

// pooled per-request state.
type scratch struct {
	d   doc
	buf []byte
	enc []byte
}

func (w *Web) getScratch() *scratch {
	if s, ok := w.bufs.Get().(*scratch); ok {
		return s
	}
	return &scratch{buf: make([]byte, 0, 16<<10)}
}

func (w *Web) putScratch(s *scratch) {
	if cap(s.buf) > 1<<20 || cap(s.enc) > 1<<20 {
		return
	}
	w.bufs.Put(s)
}

// recorder captures the status and body size of an answer.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (flush, hijack).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (w *Web) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	w.active.Add(1)
	defer w.active.Done()
	start := time.Now()
	hostname := normHost(r.Host)
	open := w.log.begin(hostname)
	rec := &recorder{ResponseWriter: rw}
	pq := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		pq += "?" + r.URL.RawQuery
	}
	e := Entry{Time: start, Host: hostname, Path: pq, Method: r.Method, UserAgent: r.UserAgent(), OpenAtArrival: open}
	hi, known := w.lookup(hostname)
	if known {
		e.URL = w.hosts[hi].origin + pq
	} else {
		e.URL = "http://" + hostname + portSuffix(w.cfg.Port) + pq
	}
	defer func() {
		e.End, e.Status, e.Bytes = time.Now(), rec.status, rec.bytes
		w.log.finish(e)
	}()
	if !known {
		http.Error(rec, "websim: unknown host "+strconv.Quote(hostname), http.StatusMisdirectedRequest)
		return
	}
	if w.cfg.PerIP {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if ap, err := netip.ParseAddrPort(la.String()); err == nil && ap.Addr().Unmap() != HostAddr(hi) {
				e.Misrouted = true
				w.cfg.Logger.Debug("request on another host's address", "host", hostname, "addr", ap.Addr())
			}
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rec.Header().Set("Allow", "GET, HEAD")
		http.Error(rec, "websim: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := &w.hosts[hi]
	latency, bw := w.cfg.Latency, w.cfg.Bandwidth
	if h.slow {
		latency, bw = w.cfg.SlowLatency, w.cfg.SlowBandwidth
	}
	if latency > 0 && !w.sleep(r, latency) {
		panic(http.ErrAbortHandler)
	}
	if w.cfg.Sitemaps && w.serveSitemap(rec, r, hi) {
		return
	}
	a := w.answerOf(hi, r.URL.Path)
	out := sender{w: w, rw: rec, r: r, bw: bw}
	switch a.rt.kind {
	case rHang:
		if !w.sleep(r, w.cfg.HangTime) {
			panic(http.ErrAbortHandler) // no answer at all: the client timed out
		}
		out.send(200, ctPlain, true, []byte("websim: late answer\n"))
		return
	case rReset:
		w.reset(rec)
		return
	case rLenHuge:
		w.lyingLength(rec, r, HugeContentLength, []byte("<html><body>short</body></html>\n"), false)
		return
	case rLenStall:
		w.lyingLength(rec, r, StallContentLength, nil, true)
		return
	case rLenCap:
		w.lyingLength(rec, r, CapContentLength, nil, true)
		return
	case rBomb:
		rec.Header().Set("Content-Encoding", "gzip")
		out.send(200, ctHTML, false, w.bombBody())
		return
	case rBin:
		out.send(200, "text/html", false, binBody(hash2(w.pageKey(hi, a.rt), keyBin)))
		return
	case rRedirect, rLoop:
		rec.Header().Set("Location", a.location)
		out.send(a.status, ctHTML, true, []byte("<html><body><a href=\""+a.location+"\">moved</a></body></html>\n"))
		return
	case rRobots, rRobotsReal:
		ra := w.robotsFor(hi, a.rt.kind == rRobotsReal)
		if ra.location != "" {
			rec.Header().Set("Location", ra.location)
		}
		body := ra.body
		if ra.status != 200 {
			body = []byte(strconv.Itoa(ra.status) + " " + http.StatusText(ra.status) + "\n")
		}
		out.send(ra.status, ctPlain, true, body)
		return
	case rSitemap:
		s := w.getScratch()
		defer w.putScratch(s)
		s.buf = w.sitemap(s.buf[:0], hi)
		out.send(200, a.ctype, true, s.buf)
		return
	case rCSS, rJS, rPNG, rJPG, rGIF, rPDF, rBeacon:
		body := staticBodies[a.rt.kind]
		out.send(200, a.ctype, a.rt.kind == rCSS || a.rt.kind == rJS, body)
		return
	}
	// A generated page: an ordinary page, an error page or a busy page.
	s := w.getScratch()
	defer w.putScratch(s)
	status, ctype := a.status, a.ctype
	var pv pageVersion
	if w.cfg.ChangeDay > 0 && status == 200 {
		var done bool
		if pv, done = w.versioned(rec, r, hi, a.rt, hostname+pq); done {
			return
		}
		if pv.gone != 0 {
			status, ctype = pv.gone, ctHTML
		}
	}
	if a.rt.kind == rBusy {
		if w.busy.hit(hostname+pq) < w.cfg.BusyCount {
			status, ctype = 503, ctHTML
			rec.Header().Set("Retry-After", "1")
		}
	}
	if status != 200 {
		w.buildError(hi, status, &s.d)
	} else {
		w.build(hi, a.rt, &s.d)
		w.applyVersion(&s.d, pv)
		if l := w.canonicalHeader(hi, a.rt); l != "" {
			rec.Header().Set("Link", l)
		}
	}
	var padAt int
	s.buf, padAt = w.render(s.buf[:0], &s.d)
	body := s.buf
	if s.d.kind == docCharset {
		s.enc = encodeCharset(s.enc[:0], s.d.charset, s.buf)
		body = s.enc
	}
	if padAt >= 0 {
		out.sendLarge(ctype, body[:padAt], w.largeChunk(), w.cfg.LargeSize-len(body), body[padAt:])
		return
	}
	out.send(status, ctype, true, body)
}

func portSuffix(port int) string {
	if port == 0 {
		return ""
	}
	return ":" + strconv.Itoa(port)
}

// sleep waits d; it returns false when the request or the web ended first.
func (w *Web) sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-w.done:
		return false
	}
}

// reset closes the connection without an answer, with a TCP RST where possible.
func (w *Web) reset(rw http.ResponseWriter) {
	conn, _, err := http.NewResponseController(rw).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// Content-Length values of the lying-length pages (Config.LyingLength).
const (
	// HugeContentLength is announced by /x/len-huge/K, which then sends a short body
	// and closes the connection.
	HugeContentLength int64 = 1_000_000_000_000_000
	// StallContentLength is announced by /x/len-stall/K, which then sends no body at all
	// for Config.HangTime and closes the connection.
	StallContentLength int64 = 4_000_000_000
	// CapContentLength is announced by /x/len-cap/K, which then behaves like
	// /x/len-stall/K: 1 GiB, a length a crawler allowing bodies that large believes.
	CapContentLength int64 = 1 << 30
)

// lyingLength answers 200 with a Content-Length of length on the raw connection, sends
// body (much shorter than length), optionally sends nothing more for HangTime (the
// request's end or Server.Close end it earlier), and closes the connection. Without a
// connection to take over (an in-process recorder) it answers 502.
func (w *Web) lyingLength(rw http.ResponseWriter, r *http.Request, length int64, body []byte, stall bool) {
	conn, buf, err := http.NewResponseController(rw).Hijack()
	if err != nil {
		http.Error(rw, "websim: lying Content-Length needs a connection", http.StatusBadGateway)
		return
	}
	defer conn.Close()
	head := "HTTP/1.1 200 OK\r\nContent-Type: " + ctHTML + "\r\nContent-Length: " + strconv.FormatInt(length, 10) + "\r\n\r\n"
	if _, err := buf.WriteString(head); err != nil {
		return
	}
	if r.Method != http.MethodHead {
		buf.Write(body)
	}
	if err := buf.Flush(); err != nil || !stall {
		return
	}
	t := time.NewTimer(w.cfg.HangTime)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.done:
	}
}

// sender writes answers: compression, bandwidth limit, HEAD.
type sender struct {
	w  *Web
	rw http.ResponseWriter
	r  *http.Request
	bw int64
}

// encoding picks the content coding for a compressible answer ("" for none).
func (s *sender) encoding(compressible bool) string {
	if !compressible || !s.w.cfg.features.Has(FeatureCompress) {
		return ""
	}
	return pickEncoding(s.r.Header.Get("Accept-Encoding"))
}

// pickEncoding returns "br", "gzip" or "" for an Accept-Encoding header value.
func pickEncoding(accept string) string {
	br, gz := false, false
	for part := range strings.SplitSeq(accept, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				continue
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "br":
			br = true
		case "gzip", "x-gzip":
			gz = true
		case "*":
			gz = true
		}
	}
	switch {
	case br:
		return "br"
	case gz:
		return "gzip"
	}
	return ""
}

func (s *sender) send(status int, ctype string, compressible bool, body []byte) {
	s.stream(status, ctype, compressible, int64(len(body)), func(w io.Writer) error {
		_, err := w.Write(body)
		return err
	})
}

// sendLarge sends head, then pad bytes made of repeated chunk, then tail.
func (s *sender) sendLarge(ctype string, head, chunk []byte, pad int, tail []byte) {
	pad = max(pad, 0)
	total := int64(len(head) + pad + len(tail))
	s.stream(200, ctype, true, total, func(w io.Writer) error {
		if _, err := w.Write(head); err != nil {
			return err
		}
		for left := pad; left > 0; {
			n := min(left, len(chunk))
			if _, err := w.Write(chunk[:n]); err != nil {
				return err
			}
			left -= n
		}
		_, err := w.Write(tail)
		return err
	})
}

var (
	gzipPool   = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed); return w }}
	brotliPool = sync.Pool{New: func() any { return brotli.NewWriterLevel(io.Discard, 1) }}
)

func (s *sender) stream(status int, ctype string, compressible bool, length int64, body func(io.Writer) error) {
	h := s.rw.Header()
	h.Set("Content-Type", ctype)
	enc := s.encoding(compressible)
	if compressible && s.w.cfg.features.Has(FeatureCompress) {
		h.Add("Vary", "Accept-Encoding")
	}
	if enc != "" {
		h.Set("Content-Encoding", enc)
	} else {
		h.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	s.rw.WriteHeader(status)
	if s.r.Method == http.MethodHead {
		return
	}
	var out io.Writer = s.rw
	if s.bw > 0 {
		out = &throttle{r: s.r, w: s.w, out: s.rw, bps: s.bw, start: time.Now()}
	}
	var err error
	switch enc {
	case "gzip":
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(out)
		if err = body(gz); err == nil {
			err = gz.Close()
		}
		gz.Reset(io.Discard)
		gzipPool.Put(gz)
	case "br":
		br := brotliPool.Get().(*brotli.Writer)
		br.Reset(out)
		if err = body(br); err == nil {
			err = br.Close()
		}
		br.Reset(io.Discard)
		brotliPool.Put(br)
	default:
		err = body(out)
	}
	if err != nil {
		panic(http.ErrAbortHandler) // the client went away or the web shut down
	}
}

// throttle writes at most bps bytes per second, in slices of 1/20 s.
type throttle struct {
	r     *http.Request
	w     *Web
	out   http.ResponseWriter
	bps   int64
	start time.Time
	sent  int64
}

func (t *throttle) Write(p []byte) (int, error) {
	step := int(max(t.bps/20, 512))
	n := 0
	for len(p) > 0 {
		k := min(step, len(p))
		m, err := t.out.Write(p[:k])
		n += m
		t.sent += int64(m)
		if err != nil {
			return n, err
		}
		_ = http.NewResponseController(t.out).Flush()
		p = p[k:]
		due := t.start.Add(time.Duration(float64(t.sent) / float64(t.bps) * float64(time.Second)))
		if wait := time.Until(due); wait > 0 && !t.w.sleep(t.r, wait) {
			return n, io.ErrClosedPipe
		}
	}
	return n, nil
}

// encodeCharset appends src (UTF-8) encoded in charset cs.
func encodeCharset(dst []byte, cs int, src []byte) []byte {
	var e encoding.Encoding
	switch cs {
	case csGBK:
		e = simplifiedchinese.GBK
	case csBig5:
		e = traditionalchinese.Big5
	default:
		e = japanese.ShiftJIS
	}
	out, err := e.NewEncoder().Bytes(src)
	if err != nil {
		// Every phrase is representable; keep the page served even if one is not.
		out, _ = encoding.ReplaceUnsupported(e.NewEncoder()).Bytes(src)
	}
	return append(dst, out...)
}

// binBody returns 4 KiB of deterministic bytes without '<' (no tags at all).
func binBody(key uint64) []byte {
	r := newRNG(key)
	b := make([]byte, 4096)
	for i := range b {
		c := byte(r.u64())
		if c == '<' || c == '>' || c == '&' {
			c = 0x80 | c
		}
		b[i] = c
	}
	return b
}

// bombBody returns the gzip bomb: identical gzip members of 1 MiB of zeros each, as many
// as BombSize needs (multi-member gzip, RFC 1952 §2.2).
func (w *Web) bombBody() []byte {
	w.bombOnce.Do(func() {
		var m bytes.Buffer
		gz, _ := gzip.NewWriterLevel(&m, gzip.BestCompression)
		_, _ = gz.Write(make([]byte, 1<<20))
		_ = gz.Close()
		n := int((w.cfg.BombSize + 1<<20 - 1) >> 20)
		w.bomb = bytes.Repeat(m.Bytes(), n)
	})
	return w.bomb
}

// largeChunk returns about 64 KiB of ASCII paragraphs used to pad large pages.
func (w *Web) largeChunk() []byte {
	w.largeOnce.Do(func() {
		d := doc{zh: false, nt: 1}
		var b []byte
		for i := 0; len(b) < 64<<10; i++ {
			p := para{key: hash2(uint64(w.cfg.Seed), uint64(i)), words: 60, nt: 1, topics: [2]Topic{Topic(i % int(numTopics))}}
			b = append(b, "<p>"...)
			b = w.writeWords(b, &d, &p, nil, 0, false)
			b = append(b, "</p>\n"...)
		}
		w.large = b
	})
	return w.large
}

// sitemap appends the sitemap of host hi (its first 50,000 pages).
func (w *Web) sitemap(dst []byte, hi int) []byte {
	dst = append(dst, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"...)
	origin := w.hosts[hi].origin
	for id := range min(w.shape.pages, 50_000) {
		dst = append(dst, "<url><loc>"...)
		dst = append(dst, origin...)
		dst = appendPath(dst, w.shape.pageRoute(id))
		dst = append(dst, "</loc></url>\n"...)
	}
	return append(dst, "</urlset>\n"...)
}

// staticBodies are the small bodies of non-HTML resources.
var staticBodies = func() map[routeKind][]byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{200, 30, 30, 255})
	var p, j bytes.Buffer
	_ = png.Encode(&p, img)
	_ = jpeg.Encode(&j, img, &jpeg.Options{Quality: 50})
	gif := []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	return map[routeKind][]byte{
		rCSS:    []byte("body{font-family:sans-serif;margin:1em}\n.nav a{margin-right:.5em}\n"),
		rJS:     []byte("document.addEventListener('DOMContentLoaded',function(){});\n"),
		rPNG:    p.Bytes(),
		rJPG:    j.Bytes(),
		rGIF:    gif,
		rBeacon: gif,
		rPDF:    []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"),
	}
}()
