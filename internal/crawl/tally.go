package crawl

import (
	"maps"
	"sync"

	"github.com/spider-crawler/spider/internal/store"
)

// Counts are the results of a crawl process: URLs completed (records
// written), by SPEC §3 result row (Row) and by exact outcome class, and
// the body bytes stored. cluster.Counts has the same fields, so a topology
// publishes them with cluster.Counts(c) (this package links no Redis).
type Counts struct {
	Pages    int64            `json:"pages"`
	Bytes    int64            `json:"bytes"`
	Rows     map[string]int64 `json:"rows"`
	Outcomes map[string]int64 `json:"outcomes"`
}

// Tally counts the records a process wrote, as they are written. It is
// safe for concurrent use; the zero Tally is empty and ready.
//
// A URL recorded twice (fetched again after a kill) counts twice here,
// while readers of records.jsonl keep its last record only.
type Tally struct {
	mu sync.Mutex
	c  Counts
}

// Add counts one record.
func (t *Tally) Add(r store.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c.Rows == nil {
		t.c.Rows, t.c.Outcomes = map[string]int64{}, map[string]int64{}
	}
	t.c.Pages++
	t.c.Bytes += int64(r.Size)
	t.c.Rows[Row(r.Outcome)]++
	t.c.Outcomes[r.Outcome]++
}

// Counts returns a copy of the counts so far (maps never nil).
func (t *Tally) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.c
	c.Rows, c.Outcomes = maps.Clone(c.Rows), maps.Clone(c.Outcomes)
	if c.Rows == nil {
		c.Rows, c.Outcomes = map[string]int64{}, map[string]int64{}
	}
	return c
}

// CountsOf returns the counts of a data directory's records.jsonl, each
// URL's last record only (as Stats counts them).
func CountsOf(dataDir string) (Counts, error) {
	c := Counts{Rows: map[string]int64{}, Outcomes: map[string]int64{}}
	_, _, err := latestRecords(dataDir, false, func(r store.Record) error {
		c.Pages++
		c.Bytes += int64(r.Size)
		c.Rows[Row(r.Outcome)]++
		c.Outcomes[r.Outcome]++
		return nil
	})
	return c, err
}
