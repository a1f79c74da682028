package sitemap

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func collect(t *testing.T, in []byte, opt Options) (Result, []Entry, error) {
	t.Helper()
	var got []Entry
	res, err := Parse(context.Background(), bytes.NewReader(in), opt, func(e Entry) error {
		got = append(got, e)
		return nil
	})
	return res, got, err
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func urlset(n int, prefix string) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for i := range n {
		b.WriteString("<url><loc>" + prefix + itoa(i) + "</loc></url>\n")
	}
	b.WriteString("</urlset>")
	return []byte(b.String())
}

func itoa(i int) string { return fmtInt(i) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

const ns = `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		in      []byte
		opt     Options
		kind    Kind
		locs    []string
		res     func(Result) bool
		wantErr error
	}{
		{name: "urlset with every field", kind: KindURLSet,
			in:   []byte(`<?xml version="1.0" encoding="UTF-8"?>` + ns + `<url><loc> http://a.test/x?a=1&amp;b=2 </loc><lastmod>2026-11-05</lastmod><changefreq>Daily</changefreq><priority>0.8</priority></url></urlset>`),
			locs: []string{"http://a.test/x?a=1&b=2"}},
		{name: "sitemap index", kind: KindIndex,
			in:   []byte(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>http://a.test/s1.xml.gz</loc><lastmod>2026-01-01T10:00:00+02:00</lastmod></sitemap><sitemap><loc>http://a.test/s2.xml</loc></sitemap></sitemapindex>`),
			locs: []string{"http://a.test/s1.xml.gz", "http://a.test/s2.xml"}},
		{name: "text, blank lines and a relative line", kind: KindText,
			in:   []byte("\ufeffhttp://a.test/1\r\n\n  https://a.test/2  \nnot-a-url\n/relative\nhttp://a.test/3"),
			locs: []string{"http://a.test/1", "https://a.test/2", "http://a.test/3"},
			res:  func(r Result) bool { return r.Invalid == 2 }},
		{name: "gzip by magic bytes", kind: KindURLSet, in: gz(urlset(3, "http://a.test/p")),
			locs: []string{"http://a.test/p0", "http://a.test/p1", "http://a.test/p2"},
			res:  func(r Result) bool { return r.Gzip }},
		{name: "URL cap keeps the first", kind: KindURLSet, in: urlset(10, "http://a.test/p"), opt: Options{MaxURLs: 2},
			locs: []string{"http://a.test/p0", "http://a.test/p1"},
			res:  func(r Result) bool { return r.Truncated && r.TruncatedBy == "urls" }},
		{name: "byte cap keeps the first", kind: KindURLSet, in: urlset(1000, "http://a.test/p"), opt: Options{MaxBytes: 200},
			locs: []string{"http://a.test/p0", "http://a.test/p1"},
			res:  func(r Result) bool { return r.Truncated && r.TruncatedBy == "bytes" && r.Bytes == 200 }},
		{name: "byte cap counts decompressed bytes", kind: KindURLSet, in: gz(urlset(1000, "http://a.test/p")), opt: Options{MaxBytes: 200},
			locs: []string{"http://a.test/p0", "http://a.test/p1"},
			res:  func(r Result) bool { return r.Truncated && r.TruncatedBy == "bytes" }},
		{name: "location rule: directory, host, scheme, port", kind: KindURLSet,
			in:   []byte(ns + `<url><loc>http://a.test/cat/1</loc></url><url><loc>http://A.TEST:80/cat/sub/2</loc></url><url><loc>http://a.test/other/3</loc></url><url><loc>https://a.test/cat/4</loc></url><url><loc>http://b.test/cat/5</loc></url><url><loc>http://a.test:8080/cat/6</loc></url></urlset>`),
			opt:  Options{SitemapURL: "http://a.test/cat/sitemap.xml"},
			locs: []string{"http://a.test/cat/1", "http://A.TEST:80/cat/sub/2"},
			res:  func(r Result) bool { return r.OutOfPlace == 4 && len(r.OutOfPlaceSample) == 4 }},
		{name: "cross-submitted host", kind: KindURLSet,
			in:   []byte(ns + `<url><loc>http://b.test/anything</loc></url><url><loc>http://c.test/x</loc></url></urlset>`),
			opt:  Options{SitemapURL: "http://a.test/sitemaps/b.xml", Hosts: []string{"http://b.test"}},
			locs: []string{"http://b.test/anything"},
			res:  func(r Result) bool { return r.OutOfPlace == 1 }},
		{name: "index: own host, any path", kind: KindIndex,
			in:   []byte(`<sitemapindex><sitemap><loc>http://a.test/x/1.xml</loc></sitemap><sitemap><loc>http://b.test/2.xml</loc></sitemap></sitemapindex>`),
			opt:  Options{SitemapURL: "http://a.test/deep/index.xml"},
			locs: []string{"http://a.test/x/1.xml"}},
		{name: "invalid changefreq and priority dropped", kind: KindURLSet,
			in:   []byte(ns + `<url><loc>http://a.test/1</loc><changefreq>sometimes</changefreq><priority>7</priority><lastmod>yesterday</lastmod></url></urlset>`),
			locs: []string{"http://a.test/1"}},
		{name: "extensions ignored", kind: KindURLSet,
			in:   []byte(`<urlset xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"><url><loc>http://a.test/1</loc><image:image><image:loc>http://a.test/i.png</image:loc></image:image></url></urlset>`),
			locs: []string{"http://a.test/1"}},
		{name: "HTML is not a sitemap", in: []byte("<!DOCTYPE html><html><body>hi</body></html>"), wantErr: ErrNotSitemap},
		{name: "empty", in: []byte("  \n"), wantErr: ErrNotSitemap},
		{name: "broken XML keeps the entries before", kind: KindURLSet,
			in:      []byte(ns + `<url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</lo`),
			locs:    []string{"http://a.test/1"},
			wantErr: ErrMalformed},
		{name: "broken gzip", in: gz(urlset(3, "http://a.test/p"))[:20], wantErr: ErrMalformed},
		{name: "UTF-16 declared", in: []byte(`<?xml version="1.0" encoding="UTF-16"?><urlset></urlset>`), wantErr: ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, got, err := collect(t, c.in, c.opt)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if c.kind != KindUnknown && res.Kind != c.kind {
				t.Errorf("kind %s, want %s", res.Kind, c.kind)
			}
			var locs []string
			for _, e := range got {
				locs = append(locs, e.Loc)
			}
			if strings.Join(locs, " ") != strings.Join(c.locs, " ") {
				t.Errorf("locs %q, want %q", locs, c.locs)
			}
			if res.Entries != len(got) {
				t.Errorf("Entries %d, handed %d", res.Entries, len(got))
			}
			if c.res != nil && !c.res(res) {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	_, got, err := collect(t, []byte(ns+`<url><loc>http://a.test/x</loc><lastmod>2026-11-05T10:30:00Z</lastmod><changefreq> WEEKLY </changefreq><priority>0.25</priority></url><url><loc>http://a.test/y</loc></url></urlset>`), Options{})
	if err != nil || len(got) != 2 {
		t.Fatal(err, got)
	}
	e := got[0]
	if !e.LastMod.Equal(time.Date(2026, 11, 5, 10, 30, 0, 0, time.UTC)) || e.ChangeFreq != "weekly" || e.Priority != 0.25 {
		t.Errorf("%+v", e)
	}
	if e := got[1]; !e.LastMod.IsZero() || e.ChangeFreq != "" || e.Priority != -1 {
		t.Errorf("absent fields: %+v", e)
	}
}

func TestParseW3CDate(t *testing.T) {
	utc := func(y, mo, d, h, mi, s, ns int) time.Time {
		return time.Date(y, time.Month(mo), d, h, mi, s, ns, time.UTC)
	}
	for in, want := range map[string]time.Time{
		"1997":                      utc(1997, 1, 1, 0, 0, 0, 0),
		"1997-07":                   utc(1997, 7, 1, 0, 0, 0, 0),
		"1997-07-16":                utc(1997, 7, 16, 0, 0, 0, 0),
		"1997-07-16T19:20+01:00":    utc(1997, 7, 16, 18, 20, 0, 0),
		"1997-07-16T19:20:30+01:00": utc(1997, 7, 16, 18, 20, 30, 0),
		"1997-07-16T19:20:30.45Z":   utc(1997, 7, 16, 19, 20, 30, 450_000_000),
		"1997-07-16t19:20:30z":      utc(1997, 7, 16, 19, 20, 30, 0),
		"1997-07-16T19:20:30-0500":  utc(1997, 7, 17, 0, 20, 30, 0),
		"1997-07-16T19:20:30":       utc(1997, 7, 16, 19, 20, 30, 0),
		" 2026-11-25 ":              utc(2026, 11, 25, 0, 0, 0, 0),
	} {
		got, err := ParseW3CDate(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "1997-13-01", "1997-07-16T25:00Z", "16/07/1997"} {
		if _, err := ParseW3CDate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseStops(t *testing.T) {
	// The callback's error ends the parse; a cancelled context too.
	stop := errors.New("stop")
	n := 0
	_, err := Parse(context.Background(), bytes.NewReader(urlset(10, "http://a.test/")), Options{}, func(Entry) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Errorf("err %v after %d", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Parse(ctx, bytes.NewReader(urlset(10, "http://a.test/")), Options{}, func(Entry) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// The protocol limit by default: 50,000 of 50,001.
	res, _, err := collect(t, urlset(ProtocolMaxURLs+1, "http://a.test/"), Options{})
	if err != nil || res.Entries != ProtocolMaxURLs || !res.Truncated {
		t.Errorf("%+v %v", res, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(urlset(2, "http://a.test/"))
	f.Add(gz(urlset(2, "http://a.test/")))
	f.Add([]byte("http://a.test/1\nhttp://a.test/2\n"))
	f.Add([]byte(`<sitemapindex><sitemap><loc>http://a.test/1.xml</loc><lastmod>2026-01</lastmod></sitemap></sitemapindex>`))
	f.Fuzz(func(t *testing.T, in []byte) {
		n := 0
		res, _ := Parse(context.Background(), bytes.NewReader(in), Options{MaxURLs: 100, MaxBytes: 1 << 16, SitemapURL: "http://a.test/"}, func(e Entry) error {
			n++
			if !strings.HasPrefix(e.Loc, "http") || len(e.Loc) >= MaxURLLength {
				t.Fatalf("bad loc handed over: %q", e.Loc)
			}
			if e.Priority != -1 && (e.Priority < 0 || e.Priority > 1) {
				t.Fatalf("priority %v", e.Priority)
			}
			return nil
		})
		if n != res.Entries || n > 100 || res.Bytes > 1<<16 {
			t.Fatalf("entries %d, result %+v", n, res)
		}
	})
}

// BenchmarkParse reads a urlset of 50,000 URLs.
func BenchmarkParse(b *testing.B) {
	in := urlset(ProtocolMaxURLs, "http://a.test/s/1/a/")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(context.Background(), bytes.NewReader(in), Options{SitemapURL: "http://a.test/"}, func(Entry) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
