package revisittest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
)

// fakeWeb: every URL has one change, at change (version 0 before, 1 from
// then on); "/static" has no history.
type fakeWeb struct{ change time.Time }

func (w fakeWeb) VersionAt(u string, at time.Time) (int, bool) {
	if u == "/static" {
		return 0, false
	}
	if at.Before(w.change) {
		return 0, true
	}
	return 1, true
}

// TestJudge: each kind of revisit lands in its count, each wrong record in
// its violation, and the slack skips revisits near the change.
func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := fakeWeb{change: t0.Add(10 * time.Second)}
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rec := func(u string, s float64, status int, page int64, fp string) store.Record {
		return store.Record{URL: u, FetchedAt: at(s), Status: status, PageNo: page, Fingerprint: fp}
	}
	for _, c := range []struct {
		name   string
		recs   []store.Record
		faulty bool
		want   Report // URLs and Violations not compared
		kinds  []Kind
	}{
		{"unchanged 304", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 2, 304, -1, "")},
			false, Report{Unchanged: 1, Got304: 1}, nil},
		{"unchanged 200 same fingerprint", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 2, 200, 1, "x")},
			false, Report{Unchanged: 1}, nil},
		{"unchanged 200 new fingerprint", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 2, 200, 1, "y")},
			false, Report{Unchanged: 1}, []Kind{UnchangedNewFingerprint}},
		{"faulty host", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 2, 304, -1, ""), rec("/a", 3, 200, 1, "x")},
			true, Report{FaultyUnchanged: 2, Faulty304: 1}, nil},
		{"changed stored", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 12, 200, 1, "y")},
			false, Report{Changed: 1, Restored: 1, RestoredNew: 1}, nil},
		{"changed same fingerprint", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 12, 200, 1, "x")},
			false, Report{Changed: 1, Restored: 1}, []Kind{ChangedNotStored}},
		{"changed not stored", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 12, 200, -1, "y")},
			false, Report{Changed: 1}, []Kind{ChangedNotStored}},
		{"changed 304", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 12, 304, -1, "")},
			false, Report{Changed304: 1}, []Kind{Changed304}},
		{"first 304, stored 304", []store.Record{rec("/a", 1, 304, 3, "")},
			false, Report{}, []Kind{Stored304, First304}},
		{"near the change", []store.Record{rec("/a", 1, 200, 0, "x"), rec("/a", 10.1, 200, 1, "y"), rec("/a", 11, 200, 2, "y")},
			false, Report{Skipped: 2}, nil}, // the third: its previous fetch is near the change
		{"no history, errors ignored", []store.Record{rec("/static", 1, 200, 0, "x"), rec("/static", 2, 503, -1, ""), rec("/static", 3, 200, 1, "x")},
			false, Report{Skipped: 1}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opt Options
			if c.faulty {
				opt.Faulty = func(string) bool { return true }
			}
			got := Judge(c.recs, web, opt)
			var kinds []Kind
			for _, v := range got.Violations {
				kinds = append(kinds, v.Kind)
			}
			if !slices.Equal(kinds, c.kinds) {
				t.Errorf("violations %v, want kinds %v", got.Violations, c.kinds)
			}
			if len(got.URLs) != 1 {
				t.Errorf("URLs %v, want the one URL", got.URLs)
			}
			got.URLs, got.Violations = nil, nil
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestMissing: the URLs want holds (true) and have does not, sorted.
func TestMissing(t *testing.T) {
	want := map[string]bool{"c": true, "a": true, "b": true, "off": false}
	have := map[string]bool{"b": true, "c": false}
	if got := Missing(want, have); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Missing = %v, want [a c]", got)
	}
	if got := Missing(nil, have); got != nil {
		t.Errorf("Missing of nothing = %v", got)
	}
}
