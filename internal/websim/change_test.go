package websim

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestChangeDistribution checks that the drawn classes follow ChangeClasses and that the
// change instants are a Poisson process at the page's rate.
func TestChangeDistribution(t *testing.T) {
	w, err := New(Config{Seed: 3, Hosts: 40, PagesPerHost: 250})
	if err != nil {
		t.Fatal(err)
	}
	s := w.SummarizeChanges(40)
	if s.Pages != 10_000 {
		t.Fatalf("pages = %d", s.Pages)
	}
	sum := 0.0
	for i, c := range ChangeClasses {
		sum += c.Share
		if math.Abs(s.ClassShares[i]-c.Share) > 0.02 {
			t.Errorf("class %q: share %.3f, want %.2f", c.Name, s.ClassShares[i], c.Share)
		}
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares sum to %v", sum)
	}
	// About a fifth of the pages change at every daily visit, about a third stay
	// unchanged over four months (Cho and Garcia-Molina's figures).
	if s.ChangedWithinDay < 0.18 || s.ChangedWithinDay > 0.35 {
		t.Errorf("changed within a day %.3f", s.ChangedWithinDay)
	}
	if s.UnchangedFourMonths < 0.25 || s.UnchangedFourMonths > 0.40 {
		t.Errorf("unchanged over 120 days %.3f", s.UnchangedFourMonths)
	}
	// Exponential gaps: the count over 1000 days of a page with mean interval m is
	// about 1000/m.
	var ratio, n float64
	for _, u := range w.PageURLs(0)[:250] {
		h, ok := w.ChangeHistory(u, 1000)
		if !ok {
			t.Fatalf("no history for %s", u)
		}
		if h.MeanDays > 0 && h.MeanDays < 30 {
			ratio += float64(len(h.Changes)) * h.MeanDays / 1000
			n++
		}
		for i := 1; i < len(h.Changes); i++ {
			if h.Changes[i] < h.Changes[i-1] {
				t.Fatalf("%s: changes out of order", u)
			}
		}
	}
	if r := ratio / n; r < 0.9 || r > 1.1 {
		t.Errorf("observed/expected changes = %.3f over %v pages", r, n)
	}
	// Same seed, same history; another seed, another.
	w2, _ := New(Config{Seed: 3, Hosts: 40, PagesPerHost: 250})
	w3, _ := New(Config{Seed: 4, Hosts: 40, PagesPerHost: 250})
	u := w.PageURLs(1)[7]
	a, _ := w.ChangeHistory(u, 500)
	b, _ := w2.ChangeHistory(u, 500)
	c, _ := w3.ChangeHistory(u, 500)
	if a.MeanDays != b.MeanDays || len(a.Changes) != len(b.Changes) {
		t.Error("the same seed gave another history")
	}
	if a.MeanDays == c.MeanDays {
		t.Error("another seed gave the same rate")
	}
	if _, ok := w.ChangeHistory(w.URL("www.d0.test", "/about.html"), 10); ok {
		t.Error("about.html has a change history")
	}
}

// changingWeb returns a web whose days last an hour, its start moved so that page u of
// host 0 (the first article with a mean interval under ten days and two changes by day
// 30) is just after its second change.
func changingWeb(t *testing.T, cfg Config) (*Web, string, ChangeHistory) {
	t.Helper()
	cfg.ChangeDay = time.Hour
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range w.PageURLs(0)[w.shape.sections+1:] {
		h, _ := w.ChangeHistory(u, 30)
		if h.MeanDays > 0 && h.MeanDays < 10 && len(h.Changes) >= 3 && h.GoneVersion == 0 {
			// now = day Changes[1] + 0.1 (a tenth of the gap to the third change)
			now := h.Changes[1] + (h.Changes[2]-h.Changes[1])/10
			w.start = time.Now().Add(-time.Duration(now * float64(time.Hour)))
			return w, u, h
		}
	}
	t.Fatal("no changing article")
	return nil, "", ChangeHistory{}
}

func cget(t *testing.T, w *Web, u string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest("GET", u, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func TestChangingPageHTTP(t *testing.T) {
	w, u, h := changingWeb(t, Config{Seed: 5, Hosts: 2, PagesPerHost: 200})
	if v, _ := w.VersionAt(u, time.Now()); v != 2 {
		t.Fatalf("version now = %d, want 2", v)
	}
	res, body := cget(t, w, u, nil)
	etag, lm := res.Header.Get("ETag"), res.Header.Get("Last-Modified")
	if res.StatusCode != 200 || etag == "" || lm == "" {
		t.Fatalf("status %d etag %q last-modified %q", res.StatusCode, etag, lm)
	}
	if !strings.Contains(body, "Updated (version 2)") {
		t.Error("version 2 has no Updated line")
	}
	want := w.instant(h.Changes[1]).UTC().Truncate(time.Second).Format(http.TimeFormat)
	if lm != want {
		t.Errorf("Last-Modified %s, want the second change %s", lm, want)
	}
	for _, hdr := range []map[string]string{
		{"If-None-Match": etag},
		{"If-None-Match": `"x", W/` + etag},
		{"If-Modified-Since": lm},
		{"If-None-Match": "*"},
	} {
		res, body := cget(t, w, u, hdr)
		if res.StatusCode != 304 || body != "" || res.Header.Get("ETag") != etag {
			t.Errorf("%v: status %d, body %d bytes, etag %q", hdr, res.StatusCode, len(body), res.Header.Get("ETag"))
		}
	}
	// If-None-Match wins over If-Modified-Since; an old date gets the page.
	old := w.instant(h.Changes[0]).UTC().Format(http.TimeFormat)
	for _, hdr := range []map[string]string{
		{"If-None-Match": `"v1-0"`, "If-Modified-Since": lm},
		{"If-Modified-Since": old},
	} {
		if res, _ := cget(t, w, u, hdr); res.StatusCode != 200 {
			t.Errorf("%v: status %d, want 200", hdr, res.StatusCode)
		}
	}
	// Move to the third version: a new ETag and body, the old ETag gets 200.
	w.start = w.start.Add(-time.Duration((h.Changes[2] - h.Changes[1]) * float64(time.Hour)))
	res3, body3 := cget(t, w, u, map[string]string{"If-None-Match": etag})
	if res3.StatusCode != 200 || res3.Header.Get("ETag") == etag || body3 == body {
		t.Errorf("after the third change: status %d etag %q (was %q), body changed %v", res3.StatusCode, res3.Header.Get("ETag"), etag, body3 != body)
	}
	// The links stay: the same hrefs at every version.
	if chrefs(body3) != chrefs(body) {
		t.Error("a new version changed the links")
	}
	// Version 0 (a static web) has no validators.
	ws, _ := New(Config{Seed: 5, Hosts: 2, PagesPerHost: 200})
	res0, body0 := cget(t, ws, u, nil)
	if res0.Header.Get("ETag") != "" || res0.Header.Get("Last-Modified") != "" {
		t.Error("a static web sends validators")
	}
	if chrefs(body0) != chrefs(body) {
		t.Error("version 2 has other links than the static page")
	}
}

func chrefs(body string) string {
	var b strings.Builder
	for _, part := range strings.Split(body, `href="`)[1:] {
		end := strings.IndexByte(part, '"')
		b.WriteString(part[:end])
		b.WriteByte(' ')
	}
	return b.String()
}

func TestDisappearingPages(t *testing.T) {
	w, err := New(Config{Seed: 2, Hosts: 4, PagesPerHost: 300, ChangeDay: time.Hour, DisappearShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	gone, codes := 0, map[int]int{}
	for hi := range 4 {
		for _, u := range w.PageURLs(hi) {
			h, _ := w.ChangeHistory(u, 100)
			if h.GoneVersion == 0 || len(h.Changes) < h.GoneVersion {
				continue
			}
			w.start = time.Now().Add(-time.Duration((h.Changes[h.GoneVersion-1] + 1e-3) * float64(time.Hour)))
			res, _ := cget(t, w, u, nil)
			if res.StatusCode != h.GoneStatus || res.Header.Get("ETag") != "" {
				t.Fatalf("%s gone at version %d: status %d, want %d", u, h.GoneVersion, res.StatusCode, h.GoneStatus)
			}
			gone++
			codes[res.StatusCode]++
		}
	}
	if gone < 20 || codes[404] == 0 || codes[410] == 0 {
		t.Errorf("gone pages %d, codes %v", gone, codes)
	}
	// Indexes and sections never disappear.
	if h, _ := w.ChangeHistory(w.URL("www.d0.test", "/"), 100); h.GoneVersion != 0 {
		t.Error("the index disappears")
	}
}

func TestValidatorFaults(t *testing.T) {
	w, err := New(Config{Seed: 1, Hosts: 30, PagesPerHost: 20, ChangeDay: time.Hour, ValidatorFaults: AllValidatorFaults, FaultShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[ValidatorFault]bool{}
	for _, name := range w.Hosts() {
		f := w.HostFault(name)
		seen[f] = true
		u := w.URL(name, "/")
		res1, body1 := cget(t, w, u, nil)
		e1, lm := res1.Header.Get("ETag"), res1.Header.Get("Last-Modified")
		switch f {
		case FaultETagEveryAnswer:
			res2, body2 := cget(t, w, u, map[string]string{"If-None-Match": e1})
			if res2.StatusCode != 200 || res2.Header.Get("ETag") == e1 || body2 != body1 {
				t.Errorf("%s: status %d, etag %q then %q, same body %v", name, res2.StatusCode, e1, res2.Header.Get("ETag"), body2 == body1)
			}
		case FaultFutureLastModified:
			lmt, _ := http.ParseTime(lm)
			if e1 != "" || !lmt.After(time.Now().Add(300*24*time.Hour)) {
				t.Errorf("%s: etag %q last-modified %s", name, e1, lm)
			}
			if res2, _ := cget(t, w, u, map[string]string{"If-Modified-Since": time.Now().UTC().Format(http.TimeFormat)}); res2.StatusCode != 200 {
				t.Errorf("%s: If-Modified-Since now: status %d", name, res2.StatusCode)
			}
		case FaultUnconditional304:
			if res1.StatusCode != 200 {
				t.Errorf("%s: first request %d", name, res1.StatusCode)
			}
			if res2, body2 := cget(t, w, u, nil); res2.StatusCode != 304 || body2 != "" {
				t.Errorf("%s: unconditional second request: %d", name, res2.StatusCode)
			}
		default:
			t.Errorf("%s: no fault with FaultShare 1", name)
		}
	}
	if len(seen) != 3 {
		t.Errorf("faults seen: %v", seen)
	}
	if f, err := ParseValidatorFaults("all"); err != nil || f != AllValidatorFaults || f.String() != "etag-every-answer,future-last-modified,unconditional-304" {
		t.Errorf("ParseValidatorFaults(all) = %v, %v", f, err)
	}
	if _, err := ParseValidatorFaults("nope"); err == nil {
		t.Error("unknown fault accepted")
	}
}
