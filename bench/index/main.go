// Command index is the search-engine benchmark driver. It feeds spider's
// index and the Bleve peer (bench/peers/bleve) the same input:
//
//	go run ./bench/index export  --data CRAWL --out corpus.jsonl
//	go run ./bench/index queries --out queries.txt [--n 200]
//	go run ./bench/index build   --corpus corpus.jsonl --index DIR [--workers N]
//	go run ./bench/index query   --index DIR --queries queries.txt [--proximity W]
//
// export writes the text spider's parser extracts from a crawl (one JSON
// object per line: url, title, text); build analyses and indexes that
// corpus exactly as `spider index` does (index.NewDoc, Writer.Commit,
// one segment); query runs every query twice single-threaded, timing the
// second round, with snippets, as `spider search` does. queries draws
// single words, AND pairs, OR pairs, exclusions and phrases from websim's
// topic vocabularies (English and Chinese). Each command prints one JSON line.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/index/analysis"
	"github.com/spider-crawler/spider/internal/websim"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "index bench:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: index export|queries|build|query [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	data := fs.String("data", "", "export: crawl data directory")
	outPath := fs.String("out", "", "export, queries: output file")
	corpus := fs.String("corpus", "", "build: corpus file")
	dir := fs.String("index", "", "build, query: index directory")
	qfile := fs.String("queries", "", "query: queries file")
	n := fs.Int("n", 200, "queries: how many")
	slow := fs.Int("slow", 0, "query: also list the N slowest queries of the timed round")
	exhaustive := fs.Bool("exhaustive", false, "query: score every posting (no pruning), for comparison")
	rounds := fs.Int("rounds", 1, "query: timed rounds after the warm-up round (latencies pooled)")
	proximity := fs.Float64("proximity", 0, "query: term-proximity weight (Request.ProximityWeight; 0: none)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "build: analysing goroutines")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the command to this file")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("cannot create the CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cannot start the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	switch args[0] {
	case "export":
		return export(ctx, *data, *outPath, out)
	case "queries":
		return makeQueries(*outPath, *n)
	case "build":
		return build(*corpus, *dir, *workers, out)
	case "query":
		return query(ctx, *dir, *qfile, *slow, *rounds, *exhaustive, *proximity, out)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

type page struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

func export(ctx context.Context, data, path string, out io.Writer) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var pages, bytesOut int64
	if err := index.ReadPages(ctx, data, func(p index.Page) error {
		pages++
		bytesOut += int64(len(p.Title) + len(p.Text))
		return enc.Encode(page{URL: p.URL, Title: p.Title, Text: p.Text})
	}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(map[string]any{"pages": pages, "text_mb": float64(bytesOut) / 1e6})
}

func makeQueries(path string, n int) error {
	r := rand.New(rand.NewPCG(1, 2))
	var qs []string
	topics := websim.Topics()
	for len(qs) < n {
		en, zh := websim.TopicWords(topics[r.IntN(len(topics))])
		words := en
		if r.IntN(4) == 0 {
			words = zh
		}
		a, b := words[r.IntN(len(words))], words[r.IntN(len(words))]
		switch len(qs) % 5 {
		case 0:
			qs = append(qs, a)
		case 1:
			qs = append(qs, a+" "+b)
		case 2:
			qs = append(qs, a+" OR "+b)
		case 3:
			qs = append(qs, a+" -"+b)
		case 4:
			qs = append(qs, `"`+a+" "+b+`"`)
		}
	}
	return os.WriteFile(path, []byte(strings.Join(qs, "\n")+"\n"), 0o644)
}

func build(corpus, dir string, workers int, out io.Writer) error {
	f, err := os.Open(corpus)
	if err != nil {
		return err
	}
	defer f.Close()
	os.RemoveAll(dir)
	a, err := analysis.Shared()
	if err != nil {
		return err
	}
	// The Chinese dictionaries load inside the timed build, when the first
	// Han text is analysed, as in `spider index`.
	start := time.Now()
	w, err := index.OpenWriter(dir, index.WriterOptions{})
	if err != nil {
		return err
	}
	defer w.Close()
	lines := make(chan []byte, 256)
	var (
		mu      sync.Mutex
		docs    []index.Doc
		bytesIn int64
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for line := range lines {
				var p page
				if json.Unmarshal(line, &p) != nil {
					continue
				}
				d := index.NewDoc(a, p.URL, p.Title, p.Text)
				mu.Lock()
				docs = append(docs, d)
				bytesIn += int64(len(p.Title) + len(p.Text))
				mu.Unlock()
			}
		}()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		lines <- slices.Clone(sc.Bytes())
	}
	close(lines)
	wg.Wait()
	if err := sc.Err(); err != nil {
		return err
	}
	analysed := time.Since(start)
	if err := a.DictErr(); err != nil {
		return err
	}
	if err := w.Commit(docs, nil, -1, "bench"); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	var size int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".seg") {
			size += info.Size()
		}
	}
	return json.NewEncoder(out).Encode(map[string]any{"engine": "spider", "pages": len(docs), "text_mb": float64(bytesIn) / 1e6,
		"build_ms": 1000 * secs, "analyse_ms": msOf(analysed), "pages_per_s": float64(len(docs)) / secs,
		"text_mb_per_s": float64(bytesIn) / 1e6 / secs, "index_bytes": size, "workers": workers,
		"dictionary_load_ms": msOf(a.LoadTime()), "dictionary_loaded": a.Loaded()})
}

func query(ctx context.Context, dir, qfile string, slow, rounds int, exhaustive bool, proximity float64, out io.Writer) error {
	raw, err := os.ReadFile(qfile)
	if err != nil {
		return err
	}
	queries := strings.Split(strings.TrimSpace(string(raw)), "\n")
	ix, err := index.Open(dir, index.Options{ReloadInterval: -1, RankFile: filepath.Join(dir, "no-ranks"), Exhaustive: exhaustive})
	if err != nil {
		return err
	}
	defer ix.Close()
	warmStart := time.Now()
	ix.WaitWarm()
	warm := time.Since(warmStart)
	type timed struct {
		Query string  `json:"q"`
		MS    float64 `json:"wall_ms"`
		CPU   float64 `json:"cpu_ms"`
		Hits  int     `json:"hits"`
	}
	var lat []timed
	var cpus []float64
	var hits int64
	for round := range 1 + max(rounds, 1) { // the first round warms the caches and is not counted
		for _, q := range queries {
			start, cpu0 := time.Now(), processCPU()
			res, err := ix.Search(ctx, index.Request{Query: q, Limit: 10, RankWeight: 0, ProximityWeight: proximity})
			if err != nil {
				return fmt.Errorf("query %q: %w", q, err)
			}
			if round > 0 {
				c := float64((processCPU() - cpu0).Microseconds()) / 1000
				cpus = append(cpus, c)
				lat = append(lat, timed{q, float64(time.Since(start).Microseconds()) / 1000, c, res.Total})
				if round == 1 {
					hits += int64(res.Total)
				}
			}
		}
	}
	slices.SortStableFunc(lat, func(a, b timed) int { return cmp.Compare(a.MS, b.MS) })
	pct := func(p float64) float64 { return lat[int(p*float64(len(lat)-1))].MS }
	slices.Sort(cpus)
	res := map[string]any{"engine": "spider", "queries": len(lat), "p50_ms": pct(0.5),
		"cpu_p50_ms": cpus[len(cpus)/2], "cpu_p99_ms": cpus[int(0.99*float64(len(cpus)-1))], "cpu_max_ms": cpus[len(cpus)-1],
		"p99_ms": pct(0.99), "max_ms": lat[len(lat)-1].MS, "total_hits": hits, "warm_ms": msOf(warm), "exhaustive": exhaustive, "proximity": proximity}
	if slow > 0 {
		res["slowest"] = lat[max(len(lat)-slow, 0):]
	}
	return json.NewEncoder(out).Encode(res)
}

// msOf is d in milliseconds, to the microsecond: every duration this tool
// prints is a number in a key ending _ms (the JSON style of issue 20).
func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// processCPU is the CPU time (user + system) the process has used so far:
// on the loaded benchmark machine a query's CPU time is far steadier than
// its wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
