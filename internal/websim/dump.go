package websim

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DumpOptions say how Web.Dump writes the web as static files.
type DumpOptions struct {
	// Origins gives each host's origin in the files ("http://127.0.0.11:8081"),
	// replacing "http://NAME[:PORT]" everywhere in the pages, so that a static
	// server on those addresses serves the web with no name resolution. Nil
	// keeps the web's own origins.
	Origins func(i int) string
	// TOC adds to every HTML page, right after <body>, a documentation-like
	// table of contents of its host: every page of the host, sections
	// nested with their articles (a few hundred links on a host of a few
	// hundred pages).
	TOC bool
	// Disallow, when not empty, is the robots.txt Disallow path written for
	// every host (the pages under it are written too and linked from the
	// TOC, so a crawler that ignores robots.txt fetches them). Empty writes
	// the web's own robots.txt.
	Disallow string
	// Gzip writes beside every file its gzip form (FILE.gz, best
	// compression), for a server's gzip_static.
	Gzip bool
}

// DumpHost is one host of a dump, as DumpManifest lists it.
type DumpHost struct {
	Name   string `json:"name"`   // the web's host name
	Origin string `json:"origin"` // the origin in the files
	Dir    string `json:"dir"`    // the host's directory under the dump, its document root
	// Pages are the URLs of the host's HTML pages a polite crawler fetches
	// (robots.txt allows them), Disallowed those robots.txt forbids, Other
	// the files that are not HTML (images, scripts, styles).
	Pages      []string `json:"pages"`
	Disallowed []string `json:"disallowed,omitempty"`
	Other      []string `json:"other,omitempty"`
}

// DumpManifest describes a dump (DIR/manifest.json): its hosts, their seed
// URLs, and the size of what was written.
type DumpManifest struct {
	Hosts     []DumpHost `json:"hosts"`
	Seeds     []string   `json:"seeds"`
	HTMLBytes int64      `json:"html_bytes"` // the HTML pages, uncompressed
	GzipBytes int64      `json:"gzip_bytes"` // their .gz forms
	Files     int        `json:"files"`      // files written (without .gz)
}

// Dump writes the web as static files under dir, one directory per host
// (DumpHost.Dir), each URL at its path ("/" and "/s/1/" as index.html),
// with the host's robots.txt, and DIR/manifest.json. The files are what
// the web serves (profile and features as configured; only 200 answers
// without a query are written), with origins and TOC changed as opt says;
// the same Config and opt give byte-identical files. The pages are those a
// crawl of every host from its index page, without depth limit, fetches.
func (w *Web) Dump(ctx context.Context, dir string, opt DumpOptions) (*DumpManifest, error) {
	seeds := w.SeedURLs(len(w.hosts))
	truth, err := w.Truth(TruthRules{Seeds: seeds, MaxDepth: -1, Scope: ScopeAny})
	if err != nil {
		return nil, fmt.Errorf("cannot list the web's pages: %w", err)
	}
	origin := func(i int) string {
		if opt.Origins == nil {
			return w.hosts[i].origin
		}
		return strings.TrimSuffix(opt.Origins(i), "/")
	}
	// The replacements of origins, scheme-relative ("//NAME:PORT") so
	// that protocol-relative references move too.
	var repl []string
	for i := range w.hosts {
		_, oldRest, _ := strings.Cut(w.hosts[i].origin, "//")
		_, newRest, _ := strings.Cut(origin(i), "//")
		repl = append(repl, "//"+oldRest, "//"+newRest)
	}
	fix := strings.NewReplacer(repl...)

	m := &DumpManifest{}
	type page struct {
		path string
		body []byte
		html bool
	}
	perHost := make([][]page, len(w.hosts))
	h := w.Handler()
	for _, raw := range truth.MustFetch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		u, err := url.Parse(raw)
		if err != nil || u.RawQuery != "" {
			continue
		}
		hi, ok := w.lookup(u.Host)
		if !ok {
			continue
		}
		req := httptest.NewRequest(http.MethodGet, u.RequestURI(), nil)
		req.Host = u.Host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			continue
		}
		html := strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html")
		body := rec.Body.Bytes()
		if html {
			body = []byte(fix.Replace(string(body)))
		}
		perHost[hi] = append(perHost[hi], page{path: u.EscapedPath(), body: body, html: html})
	}
	for i := range w.hosts {
		hostDir := strings.NewReplacer(":", "_", "/", "_").Replace(strings.TrimPrefix(strings.TrimPrefix(origin(i), "http://"), "https://"))
		dh := DumpHost{Name: w.hosts[i].name, Origin: origin(i), Dir: hostDir}
		pages := perHost[i]
		slices.SortFunc(pages, func(a, b page) int { return strings.Compare(a.path, b.path) })
		var toc []byte
		if opt.TOC {
			var paths []string
			for _, p := range pages {
				if p.html {
					paths = append(paths, p.path)
				}
			}
			toc = tocOf(paths)
		}
		for _, p := range pages {
			body := p.body
			if p.html && toc != nil {
				body = insertAfterBody(body, toc)
			}
			name := p.path
			if strings.HasSuffix(name, "/") {
				name += "index.html"
			}
			if err := writeDumpFile(filepath.Join(dir, hostDir, filepath.FromSlash(name)), body, opt.Gzip, m); err != nil {
				return nil, err
			}
			full := dh.Origin + p.path
			switch {
			case !p.html:
				dh.Other = append(dh.Other, full)
			case opt.Disallow != "" && strings.HasPrefix(p.path, opt.Disallow):
				dh.Disallowed = append(dh.Disallowed, full)
			default:
				dh.Pages = append(dh.Pages, full)
				m.HTMLBytes += int64(len(body))
			}
		}
		robots := []byte("User-agent: *\nDisallow:\n")
		if opt.Disallow != "" {
			robots = []byte("User-agent: *\nDisallow: " + opt.Disallow + "\n")
		} else {
			ra := w.robotsFor(i, false)
			if ra.status == http.StatusOK {
				robots = ra.body
			}
		}
		if err := writeDumpFile(filepath.Join(dir, hostDir, "robots.txt"), robots, false, nil); err != nil {
			return nil, err
		}
		m.Hosts = append(m.Hosts, dh)
		m.Seeds = append(m.Seeds, dh.Origin+"/")
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("cannot write the dump's manifest: %w", err)
	}
	return m, nil
}

// writeDumpFile writes body at name (and name.gz with gz), counting it in
// m when m is not nil.
func writeDumpFile(name string, body []byte, gz bool, m *DumpManifest) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("cannot create the dump's directories: %w", err)
	}
	if err := os.WriteFile(name, body, 0o644); err != nil {
		return fmt.Errorf("cannot write the dump: %w", err)
	}
	if m != nil {
		m.Files++
	}
	if !gz {
		return nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(body)
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(name+".gz", buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cannot write the dump: %w", err)
	}
	if m != nil {
		m.GzipBytes += int64(buf.Len())
	}
	return nil
}

// tocOf renders a documentation-like table of contents of paths (sorted):
// nested lists, one level per path segment.
func tocOf(paths []string) []byte {
	var b bytes.Buffer
	b.WriteString(`<nav class="toc"><h2>Contents</h2>` + "\n")
	depth := 0
	for _, p := range paths {
		// "/" and "/about.html" at level 1, "/s/1/" at 2, "/s/1/a/2.html" at 4
		d := strings.Count(strings.Trim(p, "/"), "/") + 1
		if p == "/" {
			d = 1
		}
		for depth < d {
			b.WriteString("<ul>\n")
			depth++
		}
		for depth > d {
			b.WriteString("</ul>\n")
			depth--
		}
		label := strings.Trim(p, "/")
		if label == "" {
			label = "Home"
		}
		b.WriteString(`<li><a class="toc-link" href="` + p + `">` + label + "</a></li>\n")
	}
	for ; depth > 0; depth-- {
		b.WriteString("</ul>\n")
	}
	b.WriteString("</nav>\n")
	return b.Bytes()
}

// insertAfterBody inserts ins right after the page's <body ...> tag, or
// at the start when it has none.
func insertAfterBody(page, ins []byte) []byte {
	at := 0
	if i := bytes.Index(page, []byte("<body")); i >= 0 {
		if j := bytes.IndexByte(page[i:], '>'); j >= 0 {
			at = i + j + 1
		}
	}
	out := make([]byte, 0, len(page)+len(ins))
	out = append(out, page[:at]...)
	out = append(out, ins...)
	return append(out, page[at:]...)
}

// ErrDumpDirNotEmpty is returned (wrapped) by DumpTo for a directory that
// already holds files.
var ErrDumpDirNotEmpty = errors.New("dump directory is not empty")

// DumpTo is Dump into dir, which must be empty or absent.
func (w *Web) DumpTo(ctx context.Context, dir string, opt DumpOptions) (*DumpManifest, error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("cannot dump into %s: %w; give an empty or new directory", dir, ErrDumpDirNotEmpty)
	}
	return w.Dump(ctx, dir, opt)
}

// LoopbackOrigins gives host i the origin http://127.0.0.(first+i):port,
// for DumpOptions.Origins; it fails when the hosts do not fit in 127.0.0.x.
func LoopbackOrigins(hosts, first, port int) (func(i int) string, error) {
	if first < 2 || first+hosts-1 > 254 {
		return nil, fmt.Errorf("cannot give %d hosts addresses 127.0.0.%d…: use a first address of 2 to %d", hosts, first, 255-hosts)
	}
	return func(i int) string {
		return "http://127.0.0." + strconv.Itoa(first+i) + ":" + strconv.Itoa(port)
	}, nil
}
