package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/store"
)

func runIndex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("index", `index --data DIR [flags]                         (embedded, incremental)
       spider index --data OUT --redis URL --writer [--nodes N]   (distributed: the single writer)
       spider index --data NODE_DIR --redis URL --mapper          (distributed: a map worker)`, stderr)
	data := fs.String("data", "spider-data", "data directory of a crawl (the index goes to DIR/index)")
	rebuild := fs.Bool("rebuild", false, "discard the index and index every record again")
	batch := fs.Int("batch", 100_000, "record lines per new segment")
	workers := fs.Int("workers", 0, "goroutines analysing pages (default: all CPUs; mappers: 1)")
	merge := fs.Bool("merge", false, "merge all segments into one at the end")
	maxSegs := fs.Int("max-segments", 8, "segments allowed before the background merger merges some")
	writer := fs.Bool("writer", false, "distributed build: be the single writer (needs --redis)")
	mapper := fs.Bool("mapper", false, "distributed build: be a map worker over this node's --data (needs --redis)")
	nodes := fs.Int("nodes", 1, "writer: number of data nodes whose mappers must report before the build ends")
	node := fs.String("node", "", "mapper: name of this data node; mappers of one node share its tasks (default: host name and --data path)")
	taskRecords := fs.Int("task-records", 2000, "mapper: record lines per map task")
	lease := fs.Duration("lease-ttl", 5*time.Second, "writer: a mapper silent this long is dead and its task is redone")
	reset := fs.Bool("reset", false, "writer: clear what a previous, interrupted build left in Redis first")
	fieldsFlag := fs.String("fields", index.DefaultFieldWeights.String(), "BM25F field weights and k1 (title 0: the title is part of the main text; template=1: index the whole visible text; links=N: the page's own link labels count N less in its main text, 0 to body); other weights than the index's rebuild it")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	var rf redisFlags
	rf.register(fs)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: index takes no arguments, got %q", errUsage, fs.Args())
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	switch {
	case *writer && *mapper:
		return fmt.Errorf("%w: --writer and --mapper exclude each other; run one process of each", errUsage)
	case (*writer || *mapper) && rf.url == "":
		return fmt.Errorf("%w: --writer and --mapper need --redis redis://host:port (or SPIDER_REDIS)", errUsage)
	case !*writer && !*mapper && rf.url != "":
		return fmt.Errorf("%w: with --redis, say which role this process has: --writer or --mapper", errUsage)
	case *batch <= 0 || *taskRecords <= 0 || *maxSegs <= 0 || *nodes <= 0:
		return fmt.Errorf("%w: --batch, --task-records, --max-segments and --nodes must be positive", errUsage)
	case *workers < 0:
		return fmt.Errorf("%w: --workers must be 0 (automatic) or positive", errUsage)
	}
	fields, err := index.ParseFieldWeights(*fieldsFlag)
	if err != nil {
		return fmt.Errorf("%w: --fields: %v", errUsage, err)
	}
	if (*writer || *mapper) && fields != index.DefaultFieldWeights {
		return fmt.Errorf("%w: --fields: the distributed build uses the default field weights (%s); leave --fields out", errUsage, index.DefaultFieldWeights)
	}

	if !*writer {
		// Before index.Build or the mapper creates DIR/index.
		if err := crawl.CheckCrawlDir(*data); err != nil {
			return fmt.Errorf("cannot index: %w", err)
		}
	}
	if *mapper {
		rdb, err := rf.open(ctx)
		if err != nil {
			return err
		}
		defer rdb.Close()
		st, err := index.RunMapper(ctx, rdb, *data, index.MapperOptions{Crawl: rf.crawl, Node: *node,
			TaskRecords: *taskRecords, Workers: *workers, Logger: log})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "mapper done: %d tasks, %d pages, %.1f MB in %s (%.0f pages/s)\n", st.Tasks, st.Pages,
			float64(st.Bytes)/1e6, st.Took.Round(time.Millisecond), float64(st.Pages)/max(st.Took.Seconds(), 1e-9))
		return nil
	}
	if *writer {
		rdb, err := rf.open(ctx)
		if err != nil {
			return err
		}
		defer rdb.Close()
		if *reset {
			if err := index.ResetDist(ctx, rdb, rf.crawl); err != nil {
				return err
			}
		}
		st, err := index.RunDistWriter(ctx, rdb, store.DataDir(*data).Index(), index.DistWriterOptions{
			Crawl: rf.crawl, Nodes: *nodes, LeaseTTL: *lease, Logger: log,
			Progress: func(p index.WriterProgress) {
				fmt.Fprintf(stderr, "index: %d/%d tasks from %d node(s), %d mapper(s) alive, %d pages (%.0f pages/s, %.1f MB/s)\n",
					p.Done, p.Tasks, p.Nodes, p.Mappers, p.Pages, float64(p.Pages)/max(p.Elapsed.Seconds(), 1e-9),
					float64(p.Bytes)/1e6/max(p.Elapsed.Seconds(), 1e-9))
			}})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "index built: %d tasks, %d pages, %d deletions, %d task(s) redone, %.1f MB analysed in %s (%.0f pages/s); %d page(s) folded into duplicate clusters\n",
			st.Tasks, st.Docs, st.Deleted, st.Requeued, float64(st.Bytes)/1e6, st.Took.Round(time.Millisecond),
			float64(st.Docs)/max(st.Took.Seconds(), 1e-9), st.Folded)
		return nil
	}

	st, err := index.Build(ctx, *data, index.BuildOptions{Workers: *workers, BatchRecords: *batch, Rebuild: *rebuild,
		ForceMerge: *merge, MaxSegments: *maxSegs, Logger: log, Fields: fields,
		Progress: func(s index.BuildStats) {
			fmt.Fprintf(stderr, "index: %d pages (%.0f pages/s, %.1f MB/s), %d segment(s)\n", s.Docs,
				float64(s.Docs)/max(s.Took.Seconds(), 1e-9), float64(s.Bytes)/1e6/max(s.Took.Seconds(), 1e-9), s.Segments)
		}})
	if err != nil {
		if errors.Is(err, index.ErrRecordsShrank) {
			return fmt.Errorf("%w", err)
		}
		return err
	}
	for _, d := range st.Damaged {
		fmt.Fprintf(stdout, "damaged segment %s: %v\n", d.Name, d.Err)
	}
	if len(st.Damaged) > 0 {
		fmt.Fprintf(stdout, "%d damaged segment(s): the index was rebuilt from the records\n", len(st.Damaged))
	}
	if st.Records == 0 {
		fmt.Fprintf(stdout, "index is up to date (%d bytes of records indexed); %d segment(s)\n", st.ToOffset, st.Segments)
		return nil
	}
	secs := max(st.Took.Seconds(), 1e-9)
	fmt.Fprintf(stdout, "indexed %d records: %d pages added, %d deletions, %d skipped (noindex or unreadable); %.1f MB in %s "+
		"(%.0f pages/s, %.1f MB/s; %s); %d segment(s)\n",
		st.Records, st.Docs, st.Deleted, st.Skipped, float64(st.Bytes)/1e6, st.Took.Round(time.Millisecond),
		float64(st.Docs)/secs, float64(st.Bytes)/1e6/secs, dictNote(st.AnalyzerLoad), st.Segments)
	return nil
}

// dictNote says whether the build loaded the Chinese dictionaries.
func dictNote(load time.Duration) string {
	if load <= 0 {
		return "Chinese dictionary not loaded"
	}
	return "Chinese dictionary loaded in " + load.Round(time.Millisecond).String()
}

func runSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("search", `search --data DIR [--limit 10] [--page N] [--rank-weight W] [--proximity-weight P] [--explain] "query"

Query syntax: words (all must match), "a phrase", a OR b, -word or NOT word,
site:host, ( grouping ).`, stderr)
	data := fs.String("data", "spider-data", "data directory of a crawl with an index (spider index)")
	limit := fs.Int("limit", 10, "results per page (1–1000)")
	page := fs.Int("page", 1, "page of results, from 1")
	weight := fs.Float64("rank-weight", -1, fmt.Sprintf("weight of the PageRank boost (0: BM25F only; default %g)", index.DefaultRankWeight))
	proximity := fs.Float64("proximity-weight", 0, fmt.Sprintf("weight of the term-proximity bonus added to the best %d candidates of a query of several words (0: none)", index.ProximityWindow))
	explain := fs.Bool("explain", false, "show how each score was computed")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: give a query, e.g. spider search --data DIR \"tax refund\"", errUsage)
	}
	if *limit < 1 || *limit > 1000 {
		return fmt.Errorf("%w: --limit must be between 1 and 1000", errUsage)
	}
	if *page < 1 || (*page-1)*(*limit) > 10_000 {
		return fmt.Errorf("%w: --page must be at least 1 and reach no further than result 10000", errUsage)
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	query := strings.Join(fs.Args(), " ")
	if err := needCrawlOrIndex(*data); err != nil {
		return fmt.Errorf("cannot search: %w", err)
	}
	// One query: no background warm-up of the skip indexes.
	ix, err := index.Open(store.DataDir(*data).Index(), index.Options{Logger: log, ReloadInterval: -1, NoWarm: true})
	if err != nil {
		return err
	}
	defer ix.Close()
	req := index.Request{Query: query, Offset: (*page - 1) * *limit, Limit: *limit, RankWeight: *weight, ProximityWeight: *proximity, Explain: *explain}
	res, err := ix.Search(ctx, req)
	if err != nil {
		if errors.Is(err, index.ErrQuery) {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		return err
	}
	if *asJSON {
		// The answer of /api/search, so the two cannot drift.
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(server.NewSearchAnswer(server.SearchRequest{Query: req.Query, Offset: req.Offset, Limit: req.Limit,
			RankWeight: req.RankWeight, Explain: req.Explain}, searchResultOf(res)))
	}
	printResult(stdout, query, *page, *limit, res)
	return nil
}

// printResult writes a result page as text: title, URL, snippet with the
// query terms in [brackets], score.
func printResult(w io.Writer, query string, page, limit int, res *index.Result) {
	first := (page-1)*limit + 1
	switch {
	case res.Total == 0:
		fmt.Fprintf(w, "no results for %q (terms: %s; %s)\n", query, strings.Join(res.Terms, ", "), res.Took.Round(time.Microsecond))
		return
	case len(res.Hits) == 0:
		fmt.Fprintf(w, "%d results for %q; page %d is past the last one\n", res.Total, query, page)
		return
	}
	fmt.Fprintf(w, "results %d–%d of %d for %q (terms: %s; %s)\n", first, first+len(res.Hits)-1, res.Total, query,
		strings.Join(res.Terms, ", "), res.Took.Round(time.Microsecond))
	for i, h := range res.Hits {
		title := h.Title
		if title == "" {
			title = "(no title)"
		}
		fmt.Fprintf(w, "\n%d. %s\n   %s\n   ", first+i, title, h.URL)
		for _, f := range h.Snippet {
			if f.Match {
				fmt.Fprintf(w, "[%s]", f.Text)
			} else {
				io.WriteString(w, f.Text)
			}
		}
		switch {
		case h.Similar == 1:
			fmt.Fprintf(w, "\n   1 similar page")
		case h.Similar > 1:
			fmt.Fprintf(w, "\n   %d similar pages", h.Similar)
		}
		if !h.Fetched.IsZero() {
			fmt.Fprintf(w, "\n   fetched %s", h.Fetched.UTC().Format("2 Jan 2006 15:04 UTC"))
		}
		if h.Proximity != 0 {
			fmt.Fprintf(w, "\n   score %.4f (bm25 %.4f, pagerank %.3g, proximity %.4f)\n", h.Score, h.BM25, h.PageRank, h.Proximity)
		} else {
			fmt.Fprintf(w, "\n   score %.4f (bm25 %.4f, pagerank %.3g)\n", h.Score, h.BM25, h.PageRank)
		}
		if h.Explain != "" {
			for _, line := range strings.Split(h.Explain, "\n") {
				fmt.Fprintf(w, "   | %s\n", line)
			}
		}
	}
}
