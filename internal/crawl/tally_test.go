package crawl

import (
	"maps"
	"testing"

	"github.com/spider-crawler/spider/internal/store"
)

// TestTallyAndCountsOf: a Tally counts every record it is given by result
// row and outcome, with the bytes; CountsOf counts a data directory's
// records.jsonl keeping each URL's last record, as spider stats does.
func TestTallyAndCountsOf(t *testing.T) {
	recs := []store.Record{
		{URL: "http://a.test/", Outcome: "200", Size: 100},
		{URL: "http://a.test/x", Outcome: "404", Size: 10},
		{URL: "http://a.test/r", Outcome: "301"},
		{URL: "http://a.test/t", Outcome: OutcomeTimeout},
		{URL: "http://a.test/x", Outcome: "200", Size: 50}, // fetched again: the last record counts
	}
	var tl Tally
	if c := tl.Counts(); c.Pages != 0 || c.Rows == nil || c.Outcomes == nil {
		t.Fatalf("empty tally: %+v, want zero with maps", c)
	}
	dir := t.TempDir()
	rs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		tl.Add(r)
		if err := rs.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		got            Counts
		pages, bytes   int64
		rows, outcomes map[string]int64
	}{
		{"tally", tl.Counts(), 5, 160, map[string]int64{Row200: 2, Row404: 1, Row30x: 1, RowTimeout: 1},
			map[string]int64{"200": 2, "404": 1, "301": 1, OutcomeTimeout: 1}},
		{"records", mustCounts(t, dir), 4, 150, map[string]int64{Row200: 2, Row30x: 1, RowTimeout: 1},
			map[string]int64{"200": 2, "301": 1, OutcomeTimeout: 1}},
	} {
		if tc.got.Pages != tc.pages || tc.got.Bytes != tc.bytes || !maps.Equal(tc.got.Rows, tc.rows) || !maps.Equal(tc.got.Outcomes, tc.outcomes) {
			t.Errorf("%s: %+v; want %d pages, %d bytes, rows %v, outcomes %v", tc.name, tc.got, tc.pages, tc.bytes, tc.rows, tc.outcomes)
		}
	}
	// Counts is a copy: changing it leaves the tally alone.
	c := tl.Counts()
	c.Rows[Row200] = 99
	if tl.Counts().Rows[Row200] != 2 {
		t.Error("Counts shares its maps with the tally")
	}
}

func mustCounts(t *testing.T, dir string) Counts {
	t.Helper()
	c, err := CountsOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
