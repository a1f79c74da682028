package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/store/warc"
)

// Summary describes a data directory's crawl: URLs by SPEC §3 result row
// and by exact outcome, top hosts by pages, duplicate content.
type Summary struct {
	URLs     int64            `json:"urls"`      // distinct URLs completed
	Rows     map[string]int64 `json:"rows"`      // SPEC §3 table rows
	Outcomes map[string]int64 `json:"outcomes"`  // exact outcome classes
	Hosts    map[string]int64 `json:"-"`         // completed URLs per host
	TopHosts []HostCount      `json:"top_hosts"` // the 10 busiest hosts
	Bytes    int64            `json:"bytes"`     // body bytes stored
	// Duplicates are the pages whose text an earlier page had, and
	// NearDuplicates those whose text's SimHash is within the crawl's
	// --near-dup-distance of an earlier page's, the text not identical.
	// They are the crawl's own decisions, read from the records
	// (duplicate_of, near), when any record carries one; for crawls
	// recorded before the records carried them, they are recomputed from
	// the records' fingerprint and simhash (within 3 bits, dedup.Clusters
	// in records order).
	Duplicates     int64 `json:"duplicates"`
	NearDuplicates int64 `json:"near_duplicates"`
	Corrupt        int   `json:"corrupt"`    // record lines that could not be read
	Rerecorded     int64 `json:"rerecorded"` // URLs with more than one record (refetched after a kill)
	// Failures are the failed URLs (see Failed) by outcome class, the
	// largest class first, each with its first examples and a hint.
	Failures []FailureClass `json:"failures"`
}

// latestRecords reads a data directory's records, keeping the last record
// of each URL, in first-seen order. A 304 (not modified) record does not
// replace the URL's earlier one: the copy that record stored stands (a
// revisit confirmed it, or, to a request without validators, the server
// answered wrongly). It opens records.jsonl read-only (safe beside a
// running crawl, whose partial last line it leaves unread) and creates
// nothing: a directory without it is an error naming the path. The records
// are held until the end, so with links false their OutLinks are dropped
// as they are read (fn sees none): the summary at the end of a crawl held
// every page's links, 43 MB for 1,700 pages of 440 links each.
func latestRecords(dataDir string, links bool, fn func(store.Record) error) (corrupt int, dups int64, err error) {
	return latestBy(dataDir, links, func(prev, cur store.Record) bool {
		return cur.Status != NotModifiedStatus || prev.Status == NotModifiedStatus
	}, fn)
}

// latestStored is latestRecords for the pages kept: each URL's last record
// that stored a page (PageNo ≥ 0), or its last record when none did. A
// revisit that failed, answered 304 or found the page gone leaves the copy
// fetched before standing (the WARC export archives what was fetched).
func latestStored(dataDir string, fn func(store.Record) error) (corrupt int, dups int64, err error) {
	return latestBy(dataDir, true, func(prev, cur store.Record) bool { return cur.PageNo >= 0 || prev.PageNo < 0 }, fn)
}

// latestBy reads the records as latestRecords does, a later record of a
// URL replacing the kept one when replace(kept, later) says so; without
// links the records' OutLinks are dropped.
func latestBy(dataDir string, links bool, replace func(prev, cur store.Record) bool, fn func(store.Record) error) (corrupt int, dups int64, err error) {
	recs, err := store.OpenRecords(dataDir, store.Options{ReadOnly: true})
	if err != nil {
		return 0, 0, err
	}
	defer recs.Close()
	index := map[string]int{}
	var all []store.Record
	corrupt, err = recs.Iterate(func(r store.Record) error {
		if !links {
			r.OutLinks = nil
		}
		if i, ok := index[r.URL]; ok {
			if replace(all[i], r) {
				all[i] = r
			}
			dups++
			return nil
		}
		index[r.URL] = len(all)
		all = append(all, r)
		return nil
	})
	if err != nil {
		return corrupt, dups, err
	}
	for _, r := range all {
		if err := fn(r); err != nil {
			return corrupt, dups, err
		}
	}
	return corrupt, dups, nil
}

// statsNearDistance is the SimHash distance Stats counts near-duplicates
// within (the default of Config.NearDupDistance).
const statsNearDistance = 3

// Stats summarises the crawl stored in dataDir; a directory without a
// crawl is an error wrapping ErrNoCrawl (CheckCrawlDir).
func Stats(dataDir string) (*Summary, error) {
	if err := CheckCrawlDir(dataDir); err != nil {
		return nil, err
	}
	s := &Summary{Rows: map[string]int64{}, Outcomes: map[string]int64{}, Hosts: map[string]int64{}}
	fps := map[string]bool{}
	var fpList, simList []uint64 // pages with a fingerprint, in records order
	var failed failureCollector
	var judgedExact, judgedNear int64 // the crawl's own decisions (duplicate_of)
	corrupt, dups, err := latestRecords(dataDir, false, func(r store.Record) error {
		if r.DuplicateOf != "" {
			if r.Near {
				judgedNear++
			} else {
				judgedExact++
			}
		}
		failed.add(r.URL, r.Outcome, r.Error)
		s.URLs++
		s.Rows[Row(r.Outcome)]++
		s.Outcomes[r.Outcome]++
		s.Hosts[hostOf(r.URL)]++
		s.Bytes += int64(r.Size)
		if r.Fingerprint != "" {
			if fps[r.Fingerprint] {
				s.Duplicates++
			}
			fps[r.Fingerprint] = true
			fp, _ := strconv.ParseUint(r.Fingerprint, 16, 64)
			sim, _ := strconv.ParseUint(r.SimHash, 16, 64)
			fpList, simList = append(fpList, fp), append(simList, sim)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.Corrupt, s.Rerecorded = corrupt, dups
	if judgedExact+judgedNear > 0 {
		s.Duplicates, s.NearDuplicates = judgedExact, judgedNear
	} else if _, near, err := dedup.Clusters(fpList, simList, statsNearDistance); err == nil {
		for _, n := range near {
			if n {
				s.NearDuplicates++
			}
		}
	}
	s.TopHosts = TopHosts(s.Hosts, 10)
	s.Failures = failed.list()
	return s, nil
}

// Print writes the summary as the SPEC §3 result table, top hosts and
// the failed URLs by class (PrintFailures).
func (s *Summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "result\tURLs\t\n")
	for _, row := range TableRows {
		fmt.Fprintf(tw, "%s\t%d\t\n", row, s.Rows[row])
	}
	fmt.Fprintf(tw, "total\t%d\t\n", s.URLs)
	tw.Flush()
	var detail []string
	for o, n := range s.Outcomes {
		detail = append(detail, fmt.Sprintf("%s=%d", o, n))
	}
	sort.Strings(detail)
	fmt.Fprintf(w, "outcomes: %s\n", strings.Join(detail, " "))
	fmt.Fprintf(w, "stored: %d bytes; duplicate content: %d pages, near-duplicates: %d", s.Bytes, s.Duplicates, s.NearDuplicates)
	if s.Corrupt > 0 {
		fmt.Fprintf(w, "; %d unreadable record lines skipped", s.Corrupt)
	}
	fmt.Fprintln(w)
	if len(s.TopHosts) > 0 {
		fmt.Fprintln(w, "top hosts:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, h := range s.TopHosts {
			fmt.Fprintf(tw, "  %s\t%d\n", h.Host, h.Pages)
		}
		tw.Flush()
	}
	s.PrintFailures(w)
}

// ExportRecord is one line of `spider export --format jsonl`.
type ExportRecord struct {
	URL         string   `json:"url"`
	FinalURL    string   `json:"final_url"`
	Status      int      `json:"status"`
	Outcome     string   `json:"outcome"`
	Depth       int      `json:"depth"`
	FetchedAt   string   `json:"fetched_at"`
	ContentType string   `json:"content_type"`
	Title       string   `json:"title"`
	OutLinks    []string `json:"out_links"`
	// DuplicateOf and Near are the crawl's duplicate decision (the
	// record's duplicate_of and near): the earlier page this one copies,
	// near when found by SimHash; omitted for an original.
	DuplicateOf string `json:"duplicate_of,omitempty"`
	Near        bool   `json:"near,omitempty"`
}

// Export writes the crawl in dataDir to w as JSON lines ("jsonl") or as
// WARC 1.1 records ("warc": a response and a metadata record per stored
// page, rebuilt from the page files; use crawl --warc for the exact bytes
// and request records).
func Export(ctx context.Context, dataDir, format string, w io.Writer) error {
	switch format {
	case "jsonl":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_, _, err := latestRecords(dataDir, true, func(r store.Record) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.OutLinks == nil {
				r.OutLinks = []string{}
			}
			return enc.Encode(ExportRecord{
				URL: r.URL, FinalURL: r.FinalURL, Status: r.Status, Outcome: r.Outcome, Depth: r.Depth,
				FetchedAt: r.FetchedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), ContentType: r.ContentType,
				Title: r.Title, OutLinks: r.OutLinks, DuplicateOf: r.DuplicateOf, Near: r.Near,
			})
		})
		return err
	case "warc":
		return exportWARC(ctx, dataDir, w)
	}
	return fmt.Errorf("unknown export format %q: use jsonl or warc", format)
}

// exportWARC rebuilds WARC records (response + metadata) from the page
// files, each URL's last stored copy (latestStored: a later revisit that
// failed or answered 304 does not drop it): it writes one WARC file into a temporary directory and copies it
// to w (a .warc.gz is a series of gzip members, so it streams as is). The
// page files and records are opened read-only (safe beside a running
// crawl: the records are read to their end before the page files are
// opened, and a crawl appends a page before its record, so every page a
// record names is there). A record whose page is lost or belongs to
// another URL (store.ErrMismatch, store.ErrNotFound), or that cannot be
// written as WARC (a damaged URL: warc.ErrBadExchange), is left out, never
// exported with another page's body; after the export, the error names
// how many were left out and spider fsck.
func exportWARC(ctx context.Context, dataDir string, w io.Writer) error {
	var pages *store.PageFiles
	defer func() {
		if pages != nil {
			pages.Close()
		}
	}()
	var missing int
	var firstMissing error
	tmp, err := os.MkdirTemp("", "spider-export-")
	if err != nil {
		return fmt.Errorf("cannot create a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	ww, err := warc.NewWriter(tmp, "export", warc.Options{FileSize: 1 << 62})
	if err != nil {
		return err
	}
	_, _, err = latestStored(dataDir, func(r store.Record) error {
		if r.PageNo < 0 {
			return nil
		}
		if pages == nil { // latestRecords has read every record by now
			var err error
			if pages, err = store.OpenPageFiles(store.DataDir(dataDir).Pages(), store.Options{ReadOnly: true}); err != nil {
				return err
			}
		}
		p, err := pages.ReadRecord(r)
		if errors.Is(err, store.ErrMismatch) || errors.Is(err, store.ErrNotFound) {
			if missing++; firstMissing == nil {
				firstMissing = err
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot read page %d of %s: %w", r.PageNo, r.URL, err)
		}
		h := http.Header{}
		if ct := r.ContentType; ct != "" {
			if ct == "text/html" || ct == "application/xhtml+xml" {
				ct += "; charset=utf-8" // page files hold HTML converted to UTF-8
			}
			h.Set("Content-Type", ct)
		}
		ip := r.IP
		if host, _, err := net.SplitHostPort(ip); err == nil {
			ip = host
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			ip = "" // a damaged address is left out, not the page
		}
		err = ww.WriteExchange(ctx, warc.Exchange{
			URL: r.PageURL(), Method: "GET", Status: r.Status, Proto: "HTTP/1.1", ResponseHeader: h,
			Body: p.Body, IP: ip, Fetched: r.FetchedAt, OutLinks: r.OutLinks,
		})
		if errors.Is(err, warc.ErrBadExchange) {
			if missing++; firstMissing == nil {
				firstMissing = err
			}
			return nil
		}
		return err
	})
	if cerr := ww.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// The writer creates its file with the first record: none written (every
	// page damaged, or no page stored) is an empty export.
	f, err := os.Open(filepath.Join(tmp, warc.FileName("export", 0)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("cannot read the exported WARC: %w", err)
	default:
		defer f.Close()
		if _, err := io.Copy(w, f); err != nil {
			return fmt.Errorf("cannot write the WARC export: %w", err)
		}
	}
	if missing > 0 {
		return fmt.Errorf("the WARC export left out %d damaged records (a page missing from %s or not matching its record in %s, or a URL that is not absolute; first: %w); %s",
			missing, store.DataDir(dataDir).Pages(), store.RecordsFileName, firstMissing, store.FsckAdvice(dataDir))
	}
	return nil
}
