package main

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestZipfSource(t *testing.T) {
	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = string(rune('a'+i%26)) + strings.Repeat("x", i/26)
	}
	z := newZipfSource(queries, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	const n = 200000
	for range n {
		q, _ := z.next(rng)
		counts[q]++
	}
	// P(rank i) = 1/(i·H) with H = H_1000 ≈ 7.485.
	h := 0.0
	for i := 1; i <= 1000; i++ {
		h += 1 / float64(i)
	}
	for _, rank := range []int{1, 2, 10} {
		want := n / (float64(rank) * h)
		got := float64(counts[queries[rank-1]])
		if math.Abs(got-want) > 5*math.Sqrt(want) {
			t.Errorf("rank %d drawn %.0f times, want about %.0f", rank, got, want)
		}
	}
	if len(counts) < 800 {
		t.Errorf("only %d of 1000 queries drawn: the tail is missing", len(counts))
	}
}

func TestUniqueSource(t *testing.T) {
	v := &vocabulary{words: []string{"alpha", "beta", "gamma", "delta"}, pairs: [][2]string{{"alpha", "beta"}, {"gamma", "delta"}}}
	u := newUniqueSource(v, []string{"alpha", "beta gamma"}, 1)
	seen := map[string]bool{}
	for i := range 40 {
		q, ok := u.next(nil)
		if !ok {
			t.Fatalf("used up after %d queries", i)
		}
		if seen[q] {
			t.Fatalf("query %q repeated", q)
		}
		seen[q] = true
	}
	if !seen["alpha beta"] || !seen["gamma delta"] {
		t.Error("title pairs not used first")
	}
	if seen["alpha"] || seen["beta gamma"] {
		t.Error("a query of the other mixes was given")
	}
	f := newUniqueSource(nil, []string{"one", "two"}, 1)
	a, _ := f.next(nil)
	b, _ := f.next(nil)
	if _, ok := f.next(nil); a != "one" || b != "two" || ok {
		t.Fatalf("query file source: %q %q, then not used up", a, b)
	}
}

func TestDistinctQueries(t *testing.T) {
	v := &vocabulary{words: []string{"crawler", "polite", "分布式", "爬虫"}, pairs: [][2]string{{"polite", "crawler"}, {"分布式", "爬虫"}}}
	qs := distinctQueries(v, 12, 7)
	if len(qs) != 12 {
		t.Fatalf("%d queries, want 12: %q", len(qs), qs)
	}
	seen := map[string]bool{}
	for _, q := range qs {
		if seen[q] {
			t.Fatalf("%q twice", q)
		}
		seen[q] = true
	}
	for _, w := range v.words {
		if !seen[w] {
			t.Errorf("single word %q missing", w)
		}
	}
	if again := distinctQueries(v, 12, 7); strings.Join(again, "|") != strings.Join(qs, "|") {
		t.Error("the same seed gave other queries")
	}
	if small := distinctQueries(&vocabulary{words: []string{"a", "b"}}, 1000, 1); len(small) > 4 {
		t.Errorf("a two-word vocabulary gave %d queries: %q", len(small), small)
	}
}

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{.5, 50 * time.Millisecond}, {.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {.001, time.Millisecond}} {
		if got := percentile(lat, tc.p); got != tc.want {
			t.Errorf("p%g = %s, want %s", tc.p*100, got, tc.want)
		}
	}
	if percentile(nil, .5) != 0 {
		t.Error("empty percentile")
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
spider_search_cache_requests_total{cache="page",result="hit"} 90
spider_search_cache_requests_total{cache="page",result="miss"} 10
spider_search_cache_requests_total{cache="result",result="hit"} 3
weird{a="x\"y\\z",b="line\nbreak"} 1e3 1712345678000
broken{a="unterminated} 5
novalue
`
	samples, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want map[string]string
		sum  float64
	}{
		{"process_cpu_seconds_total", nil, 12.5},
		{"spider_search_cache_requests_total", nil, 103},
		{"spider_search_cache_requests_total", map[string]string{"cache": "page"}, 100},
		{"spider_search_cache_requests_total", map[string]string{"cache": "page", "result": "hit"}, 90},
		{"weird", map[string]string{"a": `x"y\z`, "b": "line\nbreak"}, 1000},
		{"broken", nil, 0},
		{"novalue", nil, 0},
	} {
		if got := metricSum(samples, tc.name, tc.want); got != tc.sum {
			t.Errorf("%s %v = %g, want %g", tc.name, tc.want, got, tc.sum)
		}
	}
	after, _ := parseMetrics(strings.NewReader(strings.ReplaceAll(text, `result="hit"} 90`, `result="hit"} 130`)))
	if r := hitRate(samples, after, targetPage); r != 1 {
		t.Errorf("hit rate of 40 hits, 0 misses = %g", r)
	}
	if r := hitRate(samples, samples, targetAPI); r != -1 {
		t.Errorf("hit rate without look-ups = %g, want -1", r)
	}
}

func FuzzParseSample(f *testing.F) {
	for _, s := range []string{`a 1`, `a{b="c"} 2`, `a{b="c\"d",e="f"} 3 123`, `a{`, `{} 1`, `a{b="} 1`, `a NaN`, `a{b="\\"} +Inf`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, ok := parseSample(line)
		if ok && (s.name == "" || strings.ContainsAny(s.name, "{ \t")) {
			t.Fatalf("%q parsed to name %q", line, s.name)
		}
	})
}

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string // "" = accepted
	}{
		{[]string{"--data", dir}, ""},
		{[]string{"--data", dir, "--clients", "1,10,100", "--mix", "zipf,unique,uniform", "--rate", "500"}, ""},
		{nil, "give --data"},
		{[]string{"--data", dir + "/none"}, "not a directory"},
		{[]string{"--data", dir, "--clients", "0"}, "--clients"},
		{[]string{"--data", dir, "--clients", "1,x"}, "--clients"},
		{[]string{"--data", dir, "--mix", "pareto"}, "--mix"},
		{[]string{"--data", dir, "--target", "dashboard"}, "--target"},
		{[]string{"--data", dir, "--duration", "0s"}, "--duration"},
		{[]string{"--data", dir, "--rate", "-1"}, "--rate"},
		{[]string{"--data", dir, "--zipf-s", "0"}, "--zipf-s"},
		{[]string{"--data", dir, "--serve-env", "GOGC"}, "NAME=VALUE"},
		{[]string{"--data", dir, "extra"}, "unexpected argument"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

// TestOpenLoopCountsQueueing: against a server that takes 20 ms per
// request one at a time, a closed-loop client sees 20 ms, while an open
// loop at 100 requests/s (twice what the server can do) sees the queue
// grow, because latency runs from the scheduled send time.
func TestOpenLoopCountsQueueing(t *testing.T) {
	busy := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		busy <- struct{}{}
		time.Sleep(20 * time.Millisecond) // time is the subject: the server's service time
		<-busy
		if r.URL.Query().Get("q") == "bad" {
			http.Error(w, "bad query", 400)
		}
	}))
	defer srv.Close()
	l := &load{base: srv.URL, target: targetAPI, clients: 1, duration: time.Second, src: uniformSource{[]string{"a"}}, seed: 1, client: newClient(1)}
	closed := l.run(context.Background())
	if closed.Requests < 10 || closed.errors() != 0 || percentile(closed.Latencies, .99) > 500*time.Millisecond {
		t.Fatalf("closed loop: %d requests, %d errors, p99 %s", closed.Requests, closed.errors(), percentile(closed.Latencies, .99))
	}
	l.rate = 100
	open := l.run(context.Background())
	if open.Requests != 100 || open.NotSent != 0 {
		t.Fatalf("open loop: %d requests, %d not sent; want 100, 0", open.Requests, open.NotSent)
	}
	// The 100th request waits for the 99 before it: about 2 s.
	if p := percentile(open.Latencies, 1); p < time.Second {
		t.Fatalf("open loop max latency %s: queueing was not counted", p)
	}
	l.rate, l.src = 0, uniformSource{[]string{"bad"}}
	bad := l.run(context.Background())
	if bad.Status[400] != bad.Requests || bad.errors() != bad.Requests || len(bad.Samples) != 1 || !strings.Contains(bad.Samples[0], "bad query") {
		t.Fatalf("400s: %+v", bad.Status)
	}
}

// TestWritePaths: --paths writes the requested number of request paths of
// the first mix and target; a unique mix that runs out says how many exist.
func TestWritePaths(t *testing.T) {
	list := []string{"garden", "tax refund", "足球"}
	dir := t.TempDir()
	for _, tc := range []struct {
		mix, target, prefix string
	}{{mixZipf, targetPage, "/?q="}, {mixUniform, targetAPI, "/api/search?q="}} {
		c := &config{mixes: []string{tc.mix}, targets: []string{tc.target}, zipfS: 1, seed: 1,
			paths: filepath.Join(dir, tc.mix), pathsN: 500}
		if err := writePaths(c, nil, list); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(c.paths)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 500 {
			t.Fatalf("%s: %d paths, want 500", tc.mix, len(lines))
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, tc.prefix) {
				t.Fatalf("%s: path %q, want the prefix %q", tc.mix, l, tc.prefix)
			}
		}
	}
	c := &config{mixes: []string{mixUnique}, targets: []string{targetPage}, seed: 1, paths: filepath.Join(dir, "u"), pathsN: 10}
	if err := writePaths(c, nil, list); err == nil || !strings.Contains(err.Error(), "only 3 distinct") {
		t.Errorf("unique mix of 3 queries: %v, want an error naming 3", err)
	}
}
