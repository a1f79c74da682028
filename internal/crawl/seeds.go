package crawl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/urls"
)

// priorSeedScan bounds how much of records.jsonl OtherSeeds reads. A crawl
// hands its seeds out first (shallowest first), so the first records are
// depth 0; reading further would cost seconds on a large crawl.
const priorSeedScan = 16 << 20

// OtherSeeds tells whether the data directory cfg.Data holds a crawl that
// started from other seeds than cfg.Seeds: it returns the depth-0 URLs
// (the seeds, their redirect targets and seeds added while running) among
// the first records of records.jsonl when none of cfg.Seeds (normalised
// as the crawl does) is one of them, and nil otherwise: for a directory
// without records, for a resumed crawl given any of its seeds again, and
// for a crawl without seeds (--topics). It reads records.jsonl only and
// never changes the directory.
func OtherSeeds(cfg Config) ([]string, error) {
	if len(cfg.Seeds) == 0 {
		return nil, nil
	}
	norm := &urls.Normalizer{SortQuery: cfg.SortQuery, DropParams: cfg.DropParams}
	mine := map[string]bool{}
	for _, s := range cfg.Seeds {
		if u, err := norm.Parse(s); err == nil {
			mine[u.String()] = true
		}
	}
	f, err := os.Open(filepath.Join(cfg.Data, store.RecordsFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the crawl records: %w", err)
	}
	defer f.Close()
	var old []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(f, priorSeedScan))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r struct {
			URL   string `json:"url"`
			Depth int    `json:"depth"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Depth != 0 || r.URL == "" || seen[r.URL] {
			continue // a torn or corrupt line is fsck's business
		}
		if mine[r.URL] {
			return nil, nil
		}
		seen[r.URL] = true
		old = append(old, r.URL)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("cannot read the crawl records: %w", err)
	}
	return old, nil
}
