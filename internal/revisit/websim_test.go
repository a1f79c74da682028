package revisit

import (
	"context"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// TestConditionalRevisits runs the policy against websim's changing pages over HTTP for
// a few seconds: revisits carry the entry's validators; every 304 must be a page whose
// version did not change since the copy, every unchanged revisit must be answered 304
// (the goal is 80%), and Observe must see exactly the changes the truth made.
//
// With every host a bad server (websim.AllValidatorFaults: ETags new at every answer,
// Last-Modified in the future, 304 to unconditional requests) no change may be seen where
// the truth has none.
func TestConditionalRevisits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 6 s")
	}
	t.Run("good servers", func(t *testing.T) { conditionalRevisits(t, 0) })
	t.Run("bad servers", func(t *testing.T) { conditionalRevisits(t, websim.AllValidatorFaults) })
}

func conditionalRevisits(t *testing.T, faults websim.ValidatorFault) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 4, Hosts: 6, PagesPerHost: 20, ChangeDay: 100 * time.Millisecond, DisappearShare: -1, ValidatorFaults: faults, FaultShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr := srv.Addr()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	web := srv.Web
	p := policy(t, Policy{Mode: ModeAdaptive, Initial: 200 * time.Millisecond, Min: 50 * time.Millisecond, Max: 2 * time.Second, Target: 200 * time.Millisecond})

	type page struct {
		url     string
		e       Entry
		version int // of the stored copy
	}
	var pages []*page
	for hi := range 6 {
		for _, u := range web.PageURLs(hi) {
			pages = append(pages, &page{url: u})
		}
	}
	var unchanged, answered304, changedSeen, changedTrue, ambiguous, falseChanges, failures int
	fetch := func(pg *page, now time.Time) {
		req, _ := http.NewRequest("GET", pg.url, nil)
		etag, lm := pg.e.Validators()
		conditional := etag != "" || !lm.IsZero()
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		if !lm.IsZero() {
			req.Header.Set("If-Modified-Since", lm.Format(http.TimeFormat))
		}
		before, _ := web.VersionAt(pg.url, time.Now())
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		after, _ := web.VersionAt(pg.url, time.Now())
		first := pg.e.LastFetch.IsZero()
		if before != after {
			ambiguous++ // changed while the request ran: either answer is right
		}
		o := Observation{At: now, ETag: res.Header.Get("ETag"), Conditional: conditional}
		o.LastModified, _ = http.ParseTime(res.Header.Get("Last-Modified"))
		switch res.StatusCode {
		case 304:
			o.Outcome = NotModified
			if len(body) != 0 {
				t.Errorf("%s: 304 with a %d-byte body", pg.url, len(body))
			}
			if before == after && pg.version >= 0 && before != pg.version {
				t.Errorf("%s: 304 for version %d, the copy is version %d", pg.url, before, pg.version)
			}
		case 200:
			h := fnv.New64a()
			h.Write(body)
			o.Outcome, o.Fingerprint = Fetched, h.Sum64()|1
		default:
			t.Fatalf("%s: status %d", pg.url, res.StatusCode)
		}
		changed := p.Observe(&pg.e, o, "", "")
		if pg.e.Failures > 0 {
			failures++
		}
		if !first && before == after && pg.version >= 0 {
			if before == pg.version {
				unchanged++
				if changed {
					falseChanges++
				}
				if res.StatusCode == 304 {
					answered304++
				}
			} else {
				changedTrue++
				if changed {
					changedSeen++
				}
			}
		}
		if res.StatusCode == 200 {
			pg.version = after
			if before != after {
				// The body may be either version: the copy's version is
				// unknown until the next unambiguous 200, and the
				// revisits in between are not judged (a copy of version
				// before, taken for after, made the next unchanged
				// revisit look like a false change).
				pg.version = -1
			}
		}
		if !conditional && res.StatusCode == 304 && pg.e.FailClass != ClassProtocol {
			t.Errorf("%s: a 304 to an unconditional request is not a protocol failure", pg.url)
		}
	}
	end := time.Now().Add(3 * time.Second)
	for now := time.Now(); now.Before(end); now = time.Now() {
		for _, pg := range pages {
			if pg.e.LastFetch.IsZero() || pg.e.Due(now) {
				fetch(pg, now)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("unchanged revisits %d (304: %d), changed %d (seen %d), ambiguous %d, failures %d", unchanged, answered304, changedTrue, changedSeen, ambiguous, failures)
	if unchanged < 50 || changedTrue < 50 {
		t.Fatalf("too few revisits to judge: %d unchanged, %d changed", unchanged, changedTrue)
	}
	if falseChanges > 0 {
		t.Errorf("%d changes seen where the page did not change", falseChanges)
	}
	if faults == 0 && answered304 < unchanged*8/10 {
		t.Errorf("%d of %d unchanged revisits answered 304", answered304, unchanged)
	}
	if changedSeen != changedTrue {
		t.Errorf("Observe saw %d of %d changes", changedSeen, changedTrue)
	}
}
