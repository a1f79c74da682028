// Command bleve is the Bleve v2 peer of the index benchmarks: it indexes the
// same corpus file `go run ./bench/index export` writes (one JSON object per
// line: url, title, text — the page text spider's parser extracted) and
// runs the same query file single-threaded, so that both engines do the
// same job from the same input:
//
//	bleve build --corpus corpus.jsonl --index DIR [--batch 1000]
//	bleve query --index DIR --queries queries.txt [--limit 10]
//
// Analysis is Bleve's "en" analyzer (Unicode tokeniser, possessive filter,
// lower case, English stop words, Porter stemmer) — the closest to spider's
// (Snowball English stemmer, Lucene's stop set); Bleve has no gse/jieba
// segmenter, so Chinese text is tokenised by its Unicode word rules.
// Scoring is BM25 (IndexMapping.ScoringModel "bm25", Bleve ≥ 2.5). Title and
// text are stored and indexed with term vectors so that Bleve can
// highlight, as spider stores a compressed text for snippets. Each command
// prints one JSON line of figures.
//
// This module is separate from spider's so that Bleve never enters spider's
// go.mod.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bleve:", err)
		}
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: bleve build|query [flags]")
	}
	switch args[0] {
	case "build":
		return build(args[1:], stdout)
	case "query":
		return query(args[1:], stdout)
	}
	return fmt.Errorf("unknown command %q: use build or query", args[0])
}

// page is one corpus line.
type page struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

func newMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.ScoringModel = "bm25"
	im.DefaultAnalyzer = en.AnalyzerName
	doc := bleve.NewDocumentMapping()
	for _, f := range []string{"title", "text"} {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = en.AnalyzerName
		fm.Store = true
		fm.IncludeTermVectors = true
		doc.AddFieldMappingsAt(f, fm)
	}
	im.DefaultMapping = doc
	return im
}

func build(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	corpus := fs.String("corpus", "", "corpus JSON lines file")
	dir := fs.String("index", "", "index directory to create")
	batchSize := fs.Int("batch", 1000, "documents per batch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *corpus == "" || *dir == "" {
		return errors.New("build needs --corpus and --index")
	}
	f, err := os.Open(*corpus)
	if err != nil {
		return err
	}
	defer f.Close()
	os.RemoveAll(*dir)
	start := time.Now()
	ix, err := bleve.New(*dir, newMapping())
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	b := ix.NewBatch()
	var pages, bytesIn int64
	for sc.Scan() {
		var p page
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return fmt.Errorf("corpus line %d: %w", pages+1, err)
		}
		if err := b.Index(p.URL, map[string]any{"title": p.Title, "text": p.Text}); err != nil {
			return err
		}
		pages++
		bytesIn += int64(len(p.Title) + len(p.Text))
		if b.Size() >= *batchSize {
			if err := ix.Batch(b); err != nil {
				return err
			}
			b = ix.NewBatch()
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if b.Size() > 0 {
		if err := ix.Batch(b); err != nil {
			return err
		}
	}
	if err := ix.Close(); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	size, err := dirSize(*dir)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"engine": "bleve", "pages": pages, "text_mb": float64(bytesIn) / 1e6,
		"build_ms": 1000 * secs, "pages_per_s": float64(pages) / secs, "text_mb_per_s": float64(bytesIn) / 1e6 / secs, "index_bytes": size})
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

func query(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	dir := fs.String("index", "", "index directory")
	qfile := fs.String("queries", "", "file of queries, one per line")
	limit := fs.Int("limit", 10, "hits per query")
	snippets := fs.Bool("snippets", true, "highlight the text field (as spider makes snippets)")
	rounds := fs.Int("rounds", 1, "timed rounds after the warm-up round (latencies pooled)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw, err := os.ReadFile(*qfile)
	if err != nil {
		return err
	}
	queries := strings.Split(strings.TrimSpace(string(raw)), "\n")
	ix, err := bleve.Open(*dir)
	if err != nil {
		return err
	}
	defer ix.Close()
	var lat, cpus []time.Duration
	var hits int64
	for round := range 1 + max(*rounds, 1) { // the first round warms the caches and is not counted
		for _, q := range queries {
			start, cpu0 := time.Now(), processCPU()
			req := bleve.NewSearchRequestOptions(bleve.NewQueryStringQuery(toBleve(q)), *limit, 0, false)
			if *snippets {
				req.Highlight = bleve.NewHighlight()
				req.Highlight.AddField("text")
				req.Fields = []string{"title"}
			}
			res, err := ix.Search(req)
			if err != nil {
				return fmt.Errorf("query %q: %w", q, err)
			}
			if round > 0 {
				lat = append(lat, time.Since(start))
				cpus = append(cpus, processCPU()-cpu0)
			}
			if round == 1 {
				hits += int64(res.Total)
			}
		}
	}
	slices.Sort(lat)
	slices.Sort(cpus)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	cpct := func(p float64) float64 { return float64(cpus[int(p*float64(len(cpus)-1))].Microseconds()) / 1000 }
	return json.NewEncoder(stdout).Encode(map[string]any{"engine": "bleve", "queries": len(lat), "p50_ms": pct(0.5),
		"cpu_p50_ms": cpct(0.5), "cpu_p99_ms": cpct(0.99), "cpu_max_ms": float64(cpus[len(cpus)-1].Microseconds()) / 1000,
		"p99_ms": pct(0.99), "max_ms": float64(lat[len(lat)-1].Microseconds()) / 1000, "total_hits": hits})
}

// toBleve rewrites spider's query syntax (implicit AND, OR, -word,
// "phrase") into Bleve's query-string syntax (+must, -must-not, "phrase").
func toBleve(q string) string {
	var out []string
	fields := splitKeepQuotes(q)
	orMode := slices.Contains(fields, "OR")
	for _, f := range fields {
		switch {
		case f == "OR" || f == "AND":
		case strings.HasPrefix(f, "-"):
			out = append(out, f)
		case orMode:
			out = append(out, f)
		default:
			out = append(out, "+"+f)
		}
	}
	return strings.Join(out, " ")
}

func splitKeepQuotes(q string) []string {
	var out []string
	for q = strings.TrimSpace(q); q != ""; q = strings.TrimSpace(q) {
		if q[0] == '"' || strings.HasPrefix(q, `-"`) {
			start := strings.IndexByte(q, '"')
			end := strings.IndexByte(q[start+1:], '"')
			if end >= 0 {
				out = append(out, q[:start+end+2])
				q = q[start+end+2:]
				continue
			}
		}
		i := strings.IndexByte(q, ' ')
		if i < 0 {
			out = append(out, q)
			break
		}
		out = append(out, q[:i])
		q = q[i:]
	}
	return out
}

// processCPU is the CPU time (user + system) the process has used so far,
// all goroutines included: on the loaded benchmark machine a query's CPU
// time is far steadier than its wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
