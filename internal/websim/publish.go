package websim

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxPublished caps the new articles of a section (about 20 KB of links).
const maxPublished = 1000

// published returns how many new articles each section lists at now:
// floor((now − start) / PublishEvery), 0 for a static web.
func (w *Web) published(now time.Time) int {
	if w.cfg.PublishEvery <= 0 {
		return 0
	}
	return min(maxPublished, int(now.Sub(w.start)/w.cfg.PublishEvery))
}

// Published returns how many new articles each section lists now (0 for a
// static web).
func (w *Web) Published() int { return w.published(time.Now()) }

// PublishedAt returns when new article K (of every section) appeared: the
// web's start plus K×PublishEvery. It returns the zero time for a static web
// or K < 1.
func (w *Web) PublishedAt(k int) time.Time {
	if w.cfg.PublishEvery <= 0 || k < 1 {
		return time.Time{}
	}
	return w.start.Add(time.Duration(k) * w.cfg.PublishEvery)
}

// NewArticle reports whether rawURL is a new article /s/N/new/K.html of a
// growing web, and returns K.
func NewArticle(rawURL string) (k int, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, false
	}
	seg := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(seg) != 4 || seg[0] != "s" || seg[2] != "new" {
		return 0, false
	}
	if _, ok := num(seg[1]); !ok {
		return 0, false
	}
	k, ok = numSuffix(seg[3], ".html")
	return k, ok && k >= 1
}

func newsPath(n, k int) string {
	return "/s/" + strconv.Itoa(n) + "/new/" + strconv.Itoa(k) + ".html"
}

// news builds new article k of section n: the section's topic, a link back
// to its section and to a few pages of the host.
func (b *builder) news(n, k int) {
	d := b.d
	d.topics[0] = b.w.sectionTopic(b.hi, n)
	b.title("News "+strconv.Itoa(k), "新闻"+strconv.Itoa(k))
	b.head()
	b.nav()
	b.content(b.randForm(), "/s/"+strconv.Itoa(n)+"/", pick(d.zh, "Section ", "栏目")+strconv.Itoa(n), relNone)
	for range b.r.between(1, 3) {
		b.content(b.randForm(), b.pagePath(b.w.pageZipf.sample(&b.r)), b.anchor(), relNone)
	}
	b.footer()
	b.layout(3)
}
