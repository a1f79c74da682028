package websim

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sitemaps (Config.Sitemaps). Without it every host serves /sitemap.xml as a plain
// urlset of its first 50,000 pages (no lastmod). With it:
//
//	/sitemap.xml             a urlset of the host's pages (index, sections, articles)
//	                         with <lastmod> and <changefreq>, or, when the host has more
//	                         pages than Config.SitemapMaxURLs, a <sitemapindex> of
//	                         /sitemaps/K.xml (odd K) and /sitemaps/K.xml.gz (even K)
//	/sitemaps/K.xml[.gz]     the K-th file (K = 1, 2, …) of SitemapMaxURLs pages
//	/sitemap.xml.gz          /sitemap.xml gzip-compressed (the file is gzip, not the
//	                         transfer: Content-Type application/gzip, no Content-Encoding)
//	/sitemaps/host-I.xml     (host 0 only) the pages of host I, cross-submitted: host I's
//	                         robots.txt lists it in a second Sitemap: line
//	/sitemap-others.xml      (host 0 only) a urlset listing pages of hosts 1–3 and a few
//	                         of its own: the other hosts' are out of place (not
//	                         cross-submitted)
//	/sitemap-huge.xml[.gz]   a urlset of Config.HugeSitemapSize bytes (default 1 GiB,
//	                         uncompressed), generated while it is sent: URLs
//	                         /s/1/?huge=N of the host, far beyond the protocol's 50,000
//	                         URLs and 50 MB; linked from nowhere
//
// <lastmod> is the time of the page's current version (Config.ChangeDay; without it the
// version-0 date, in model days before the start), to the second; a share of the pages
// (Config.SitemapLieShare, LastmodLies) lie: their lastmod is the time of the answer.
// <changefreq> follows the page's mean change interval in real time (hourly, daily,
// weekly, monthly, yearly). Sitemaps ignore Config.Bandwidth and compression.

// sitemapFreq names a mean change interval as a changefreq.
func sitemapFreq(d time.Duration) string {
	switch {
	case d <= 0:
		return "never"
	case d <= 2*time.Hour:
		return "hourly"
	case d <= 36*time.Hour:
		return "daily"
	case d <= 10*24*time.Hour:
		return "weekly"
	case d <= 45*24*time.Hour:
		return "monthly"
	}
	return "yearly"
}

// modelDay is the real duration of one model day (24h for a static web).
func (w *Web) modelDay() time.Duration {
	if w.cfg.ChangeDay > 0 {
		return w.cfg.ChangeDay
	}
	return 24 * time.Hour
}

// LastmodLies reports whether the sitemaps give a false lastmod (the answer's time) for
// a page URL.
func (w *Web) LastmodLies(rawURL string) bool {
	hi, id, ok := w.pageOf(rawURL)
	if !ok {
		return false
	}
	return w.lies(w.changeOf(hi, id))
}

func (w *Web) lies(pc pageChange) bool {
	return w.cfg.SitemapLieShare > 0 && unit(hash2(pc.key, 7)) < w.cfg.SitemapLieShare
}

// appendURLEntry appends the <url> of page id of host hi at now.
func (w *Web) appendURLEntry(dst []byte, hi, id int, now time.Time) []byte {
	pc := w.changeOf(hi, id)
	var last time.Time
	if w.cfg.ChangeDay > 0 {
		_, at := pc.versionAt(w.days(now))
		last = w.instant(at)
	} else {
		last = w.start.Add(time.Duration(pc.origin * float64(24*time.Hour)))
	}
	if w.lies(pc) {
		last = now
	}
	dst = append(dst, "<url><loc>"...)
	dst = append(dst, w.hosts[hi].origin...)
	dst = appendPath(dst, w.shape.pageRoute(id))
	dst = append(dst, "</loc><lastmod>"...)
	dst = last.UTC().AppendFormat(dst, time.RFC3339)
	dst = append(dst, "</lastmod><changefreq>"...)
	dst = append(dst, sitemapFreq(time.Duration(pc.interval*float64(w.modelDay())))...)
	return append(dst, "</changefreq></url>\n"...)
}

const (
	urlsetOpen  = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"
	urlsetClose = "</urlset>\n"
)

// serveSitemap answers the sitemap paths of Config.Sitemaps; it reports false for other
// paths.
func (w *Web) serveSitemap(rw http.ResponseWriter, r *http.Request, hi int) bool {
	path := r.URL.Path
	gz := strings.HasSuffix(path, ".gz")
	base := strings.TrimSuffix(path, ".gz")
	per := w.cfg.SitemapMaxURLs
	files := (w.shape.pages + per - 1) / per
	now := time.Now()
	var body func(bw *bufio.Writer)
	switch {
	case base == "/sitemap.xml" && files > 1:
		body = func(bw *bufio.Writer) {
			bw.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n")
			for k := 1; k <= files; k++ {
				bw.WriteString("<sitemap><loc>" + w.hosts[hi].origin + "/sitemaps/" + strconv.Itoa(k) + ".xml")
				if k%2 == 0 {
					bw.WriteString(".gz")
				}
				bw.WriteString("</loc><lastmod>" + now.UTC().Format(time.RFC3339) + "</lastmod></sitemap>\n")
			}
			bw.WriteString("</sitemapindex>\n")
		}
	case base == "/sitemap.xml":
		body = w.urlsetBody(hi, 0, w.shape.pages, now)
	case strings.HasPrefix(base, "/sitemaps/host-") && hi == 0:
		other, ok := numSuffix(strings.TrimPrefix(base, "/sitemaps/host-"), ".xml")
		if !ok || other <= 0 || other >= len(w.hosts) || gz {
			return false
		}
		body = w.urlsetBody(other, 0, min(w.shape.pages, per), now)
	case strings.HasPrefix(base, "/sitemaps/"):
		k, ok := numSuffix(strings.TrimPrefix(base, "/sitemaps/"), ".xml")
		if !ok || k < 1 || k > files {
			return false
		}
		body = w.urlsetBody(hi, (k-1)*per, min(k*per, w.shape.pages), now)
	case base == "/sitemap-others.xml" && hi == 0 && !gz:
		body = func(bw *bufio.Writer) {
			bw.WriteString(urlsetOpen)
			var b []byte
			for o := range min(4, len(w.hosts)) {
				for id := range min(3, w.shape.pages) {
					b = w.appendURLEntry(b[:0], o, id, now)
					bw.Write(b)
				}
			}
			bw.WriteString(urlsetClose)
		}
	case base == "/sitemap-huge.xml":
		body = func(bw *bufio.Writer) {
			bw.WriteString(urlsetOpen)
			line := "<url><loc>" + w.hosts[hi].origin + "/s/1/?huge="
			written := int64(len(urlsetOpen))
			var b []byte
			for n := 0; written < w.cfg.HugeSitemapSize; n++ {
				b = append(append(append(b[:0], line...), strconv.Itoa(n)...), "</loc></url>\n"...)
				if _, err := bw.Write(b); err != nil {
					return
				}
				written += int64(len(b))
			}
			bw.WriteString(urlsetClose)
		}
	default:
		return false
	}
	h := rw.Header()
	if gz {
		h.Set("Content-Type", "application/gzip")
	} else {
		h.Set("Content-Type", "application/xml; charset=utf-8")
	}
	rw.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return true
	}
	var out io.Writer = rw
	var zw *gzip.Writer
	if gz {
		zw, _ = gzip.NewWriterLevel(rw, gzip.BestSpeed)
		out = zw
	}
	bw := bufio.NewWriterSize(out, 32<<10)
	body(bw)
	if bw.Flush() == nil && zw != nil {
		_ = zw.Close()
	}
	return true
}

// urlsetBody writes the urlset of pages [from, to) of host hi.
func (w *Web) urlsetBody(hi, from, to int, now time.Time) func(*bufio.Writer) {
	return func(bw *bufio.Writer) {
		bw.WriteString(urlsetOpen)
		var b []byte
		for id := from; id < to; id++ {
			b = w.appendURLEntry(b[:0], hi, id, now)
			if _, err := bw.Write(b); err != nil {
				return
			}
		}
		bw.WriteString(urlsetClose)
	}
}
