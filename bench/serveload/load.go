package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Targets: the server-rendered search page and the JSON API.
const (
	targetPage = "page"
	targetAPI  = "api"
)

// load is one measured run against one target.
type load struct {
	base     string // http://127.0.0.1:PORT
	target   string // targetPage or targetAPI
	clients  int    // closed loop: concurrent clients; open loop: connections
	duration time.Duration
	rate     float64 // > 0: open loop, this many arrivals per second
	src      source
	seed     uint64
	client   *http.Client
}

// outcome is what a run measured on the client side.
type outcome struct {
	Requests  int             // answered (any status)
	OK        int             // answered 200
	Status    map[int]int     // other status codes
	Transport int             // failed without an answer
	NotSent   int             // open loop: scheduled but not sent before the drain limit
	UsedUp    bool            // the unique queries ran out before the end
	Samples   []string        // a few failures: query and answer
	Elapsed   time.Duration   // first send to last answer
	Latencies []time.Duration // sorted; open loop: from the scheduled send time
}

// newClient is a keep-alive HTTP client for n concurrent requests to one
// host. Compression is off: the server sends none, and the client should
// not pay for asking.
func newClient(n int) *http.Client {
	return &http.Client{
		Timeout: time.Minute,
		Transport: &http.Transport{
			MaxIdleConns: n, MaxIdleConnsPerHost: n, MaxConnsPerHost: n,
			IdleConnTimeout: time.Minute, DisableCompression: true,
		},
	}
}

// target URL of query q.
func (l *load) url(q string) string {
	if l.target == targetAPI {
		return l.base + "/api/search?q=" + url.QueryEscape(q)
	}
	return l.base + "/?q=" + url.QueryEscape(q)
}

// get sends one request and reads the whole answer; for a status other
// than 200 it returns the start of the answer too.
func (l *load) get(ctx context.Context, q string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", l.url(q), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var head []byte
	if resp.StatusCode != http.StatusOK {
		head, _ = io.ReadAll(io.LimitReader(resp.Body, 300))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, string(head), err
}

// recorder collects one worker's measurements.
type recorder struct {
	lat       []time.Duration
	ok        int
	status    map[int]int
	transport int
	sample    string // the first failure: query and answer
}

func (r *recorder) add(q string, code int, body string, err error, d time.Duration) {
	switch {
	case err != nil:
		r.transport++
		if r.sample == "" {
			r.sample = fmt.Sprintf("q=%q: %v", q, err)
		}
	case code == http.StatusOK:
		r.ok++
	default:
		if r.status == nil {
			r.status = map[int]int{}
		}
		r.status[code]++
		if r.sample == "" {
			r.sample = fmt.Sprintf("q=%q: status %d: %s", q, code, body)
		}
	}
	if err == nil {
		r.lat = append(r.lat, d)
	}
}

// run measures: closed loop (each client sends its next request as soon
// as the previous answer is read) without a rate, open loop with one.
func (l *load) run(ctx context.Context) outcome {
	if l.rate > 0 {
		return l.open(ctx)
	}
	return l.closed(ctx)
}

func (l *load) closed(ctx context.Context) outcome {
	recs := make([]recorder, l.clients)
	var usedUp atomic.Bool
	start := time.Now()
	deadline := start.Add(l.duration)
	var wg sync.WaitGroup
	for c := range l.clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(l.seed, uint64(c)))
			rec := &recs[c]
			for time.Now().Before(deadline) && ctx.Err() == nil {
				q, ok := l.src.next(rng)
				if !ok {
					usedUp.Store(true)
					return
				}
				t0 := time.Now()
				code, body, err := l.get(ctx, q)
				rec.add(q, code, body, err, time.Since(t0))
			}
		})
	}
	wg.Wait()
	o := merge(recs, time.Since(start))
	o.UsedUp = usedUp.Load()
	return o
}

// maxDrain is how long an open-loop run keeps sending its backlog after
// the last scheduled arrival.
const maxDrain = 30 * time.Second

// open sends rate requests per second at fixed times, whatever the
// answers' latency, through at most clients connections; each latency is
// measured from the request's scheduled time, so time spent queued behind
// slow answers counts (no coordinated omission).
func (l *load) open(ctx context.Context) outcome {
	n := int(l.duration.Seconds() * l.rate)
	interval := time.Duration(float64(time.Second) / l.rate)
	arrivals := make(chan time.Time, n)
	recs := make([]recorder, l.clients)
	var usedUp atomic.Bool
	var notSent atomic.Int64
	start := time.Now()
	drainEnd := start.Add(l.duration + maxDrain)
	go func() {
		defer close(arrivals)
		for i := range n {
			at := start.Add(time.Duration(i) * interval)
			if d := time.Until(at); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					notSent.Add(int64(n - i))
					return
				}
			}
			arrivals <- at
		}
	}()
	var wg sync.WaitGroup
	for c := range l.clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(l.seed, uint64(c)))
			rec := &recs[c]
			for at := range arrivals {
				if ctx.Err() != nil || time.Now().After(drainEnd) || usedUp.Load() {
					notSent.Add(1)
					continue
				}
				q, ok := l.src.next(rng)
				if !ok {
					usedUp.Store(true)
					notSent.Add(1)
					continue
				}
				code, body, err := l.get(ctx, q)
				rec.add(q, code, body, err, time.Since(at))
			}
		})
	}
	wg.Wait()
	o := merge(recs, time.Since(start))
	o.NotSent, o.UsedUp = int(notSent.Load()), usedUp.Load()
	return o
}

func merge(recs []recorder, elapsed time.Duration) outcome {
	o := outcome{Status: map[int]int{}, Elapsed: elapsed}
	for _, r := range recs {
		o.Latencies = append(o.Latencies, r.lat...)
		o.OK += r.ok
		o.Transport += r.transport
		if r.sample != "" && len(o.Samples) < 3 {
			o.Samples = append(o.Samples, r.sample)
		}
		for c, k := range r.status {
			o.Status[c] += k
		}
	}
	o.Requests = len(o.Latencies)
	slices.Sort(o.Latencies)
	return o
}

// percentile is the nearest-rank p-quantile (0 < p ≤ 1) of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// errors is the number of requests that did not get a 200.
func (o outcome) errors() int {
	n := o.Transport + o.NotSent
	for _, k := range o.Status {
		n += k
	}
	return n
}

func (o outcome) statusText() string {
	if len(o.Status) == 0 && o.Transport == 0 && o.NotSent == 0 {
		return "none"
	}
	s := ""
	for _, c := range slices.Sorted(maps.Keys(o.Status)) {
		s += fmt.Sprintf("%d×%d ", o.Status[c], c)
	}
	if o.Transport > 0 {
		s += fmt.Sprintf("%d×transport ", o.Transport)
	}
	if o.NotSent > 0 {
		s += fmt.Sprintf("%d×not-sent ", o.NotSent)
	}
	return s[:len(s)-1]
}
