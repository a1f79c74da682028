package main

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/spider-crawler/spider/internal/revisit"
	"github.com/spider-crawler/spider/internal/websim"
)

// page is one page of the simulated web: its true rate and change instants (days).
type page struct {
	rate    float64 // changes a day (truth)
	changes []float64
}

// versionAt is the page's version at day t.
func (p *page) versionAt(t float64) int {
	return sort.SearchFloat64s(p.changes, math.Nextafter(t, math.Inf(1)))
}

// firstChangeAfter is the first change instant > t (+Inf for none).
func (p *page) firstChangeAfter(t float64) float64 {
	i := sort.SearchFloat64s(p.changes, math.Nextafter(t, math.Inf(1)))
	if i == len(p.changes) {
		return math.Inf(1)
	}
	return p.changes[i]
}

// world is the simulation's input: the pages, the horizon and the uniform budget.
type world struct {
	pages   []page
	days    float64 // horizon: the run covers [0, days]
	warmup  float64 // freshness and age are measured over [warmup, days]
	uniform float64 // the uniform policy's interval (days): the budget is N·days/uniform
}

// newWorld reads every page's change truth from a websim web of hosts × pagesPerHost.
func newWorld(seed int64, hosts, pagesPerHost int, days, warmup, uniform float64) (*world, *websim.Web, error) {
	w, err := websim.New(websim.Config{Seed: seed, Hosts: hosts, PagesPerHost: pagesPerHost, DisappearShare: -1})
	if err != nil {
		return nil, nil, err
	}
	wd := &world{days: days, warmup: warmup, uniform: uniform}
	for hi := range hosts {
		for _, u := range w.PageURLs(hi) {
			h, ok := w.ChangeHistory(u, days)
			if !ok {
				return nil, nil, fmt.Errorf("cannot read the change history of %s", u)
			}
			p := page{changes: h.Changes}
			if h.MeanDays > 0 {
				p.rate = 1 / h.MeanDays
			}
			wd.pages = append(wd.pages, p)
		}
	}
	return wd, w, nil
}

// budget is the number of revisits every policy may make over the run.
func (wd *world) budget() float64 { return float64(len(wd.pages)) * wd.days / wd.uniform }

// initial is when page i's copy was first fetched: the first crawl, spread over the
// uniform interval before day 0 (the same for every policy, not counted in the budget).
func (wd *world) initial(i int) float64 {
	return -wd.uniform + wd.uniform*float64(i)/float64(len(wd.pages))
}

// result is one policy's figures.
type result struct {
	name      string
	fetches   int
	peak      float64 // the busiest day's revisits / the budget per day
	freshness float64 // time-average share of pages whose copy is current
	age       float64 // time-average age of a page's copy, days
	unchanged float64 // share of revisits that found the page unchanged
}

// measure computes a policy's figures from each page's fetch instants (ascending, the
// initial fetch first).
func (wd *world) measure(name string, fetches [][]float64) result {
	r := result{name: name}
	perDay := map[int]int{}
	var fresh, age float64
	unchanged := 0
	for i := range wd.pages {
		p := &wd.pages[i]
		f := fetches[i]
		for k, at := range f {
			if k > 0 {
				r.fetches++
				perDay[int(math.Floor(at))]++
				if p.versionAt(at) == p.versionAt(f[k-1]) {
					unchanged++
				}
			}
			end := wd.days
			if k+1 < len(f) {
				end = f[k+1]
			}
			a, b := math.Max(at, wd.warmup), math.Min(end, wd.days)
			if b <= a {
				continue
			}
			c := p.firstChangeAfter(at)
			fresh += math.Max(0, math.Min(c, b)-a)
			if c < b {
				lo := math.Max(c, a)
				age += ((b-c)*(b-c) - (lo-c)*(lo-c)) / 2
			}
		}
	}
	span := (wd.days - wd.warmup) * float64(len(wd.pages))
	r.freshness, r.age = fresh/span, age/span
	if r.fetches > 0 {
		r.unchanged = float64(unchanged) / float64(r.fetches)
	}
	busiest := 0
	for d, n := range perDay {
		if d >= 0 && float64(d) < wd.days {
			busiest = max(busiest, n)
		}
	}
	r.peak = float64(busiest) / (wd.budget() / wd.days)
	return r
}

// uniformPolicy revisits every page every wd.uniform days.
func (wd *world) uniformPolicy() result {
	fetches := make([][]float64, len(wd.pages))
	for i := range wd.pages {
		for t := wd.initial(i); t <= wd.days; t += wd.uniform {
			fetches[i] = append(fetches[i], t)
		}
	}
	return wd.measure("uniform", fetches)
}

// proportionalPolicy revisits each page at an interval proportional to its true mean
// change interval (pages that never change: never), scaled to the budget: Cho and
// Garcia-Molina's "proportional" policy, given the true rates.
func (wd *world) proportionalPolicy() result {
	sum := 0.0
	for _, p := range wd.pages {
		sum += p.rate
	}
	c := sum * wd.days / wd.budget() // interval_i = c / rate_i
	fetches := make([][]float64, len(wd.pages))
	for i, p := range wd.pages {
		fetches[i] = []float64{wd.initial(i)}
		if p.rate <= 0 {
			continue
		}
		for t := wd.initial(i) + c/p.rate; t <= wd.days; t += c / p.rate {
			fetches[i] = append(fetches[i], t)
		}
	}
	return wd.measure("proportional (true rates)", fetches)
}

const dayDur = 24 * time.Hour

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(days float64) time.Time { return epoch.Add(time.Duration(days * float64(dayDur))) }

func daysOf(t time.Time) float64 { return float64(t.Sub(epoch)) / float64(dayDur) }

// due is a heap of pages by next fetch.
type due struct {
	next []float64
	idx  []int
}

func (d *due) Len() int           { return len(d.idx) }
func (d *due) Less(i, j int) bool { return d.next[d.idx[i]] < d.next[d.idx[j]] }
func (d *due) Swap(i, j int)      { d.idx[i], d.idx[j] = d.idx[j], d.idx[i] }
func (d *due) Push(x any)         { d.idx = append(d.idx, x.(int)) }
func (d *due) Pop() any {
	x := d.idx[len(d.idx)-1]
	d.idx = d.idx[:len(d.idx)-1]
	return x
}

// adaptiveRun runs revisit.Policy p (its Target given) on every page: each fetch is
// observed (fingerprint = the version), and the page is fetched again at Entry.Next.
// With oracle, the interval is OptimalInterval of the true rate instead of the policy's.
func (wd *world) adaptiveRun(p revisit.Policy, oracle bool) [][]float64 {
	if err := p.Validate(); err != nil {
		panic(err)
	}
	n := len(wd.pages)
	entries := make([]revisit.Entry, n)
	fetches := make([][]float64, n)
	d := &due{next: make([]float64, n)}
	observe := func(i int, t float64) {
		pg := &wd.pages[i]
		e := &entries[i]
		fetches[i] = append(fetches[i], t)
		if oracle {
			iv := revisit.OptimalInterval(pg.rate/86400, p.Target, p.Min, p.Max)
			d.next[i] = t + float64(iv)/float64(dayDur)
			return
		}
		p.Observe(e, revisit.Observation{At: at(t), Outcome: revisit.Fetched, Fingerprint: uint64(pg.versionAt(t)) + 1}, "", "")
		d.next[i] = daysOf(e.Next)
	}
	for i := range n {
		observe(i, wd.initial(i))
		d.idx = append(d.idx, i)
	}
	heap.Init(d)
	for d.Len() > 0 {
		i := d.idx[0]
		t := d.next[i]
		if t > wd.days {
			break
		}
		observe(i, t)
		heap.Fix(d, 0)
	}
	return fetches
}

// calibrated finds the Target whose run spends the budget (within 1%) and returns its
// figures and the Target. With p.Initial zero, a page's first interval is the Target
// too, as in the crawler (crawl.Config.RevisitInitial is both).
func (wd *world) calibrated(name string, p revisit.Policy, oracle bool) (result, time.Duration) {
	tied := p.Initial == 0
	lo, hi := math.Log(float64(time.Hour)), math.Log(float64(120*dayDur))
	var best result
	var bestT time.Duration
	for range 24 {
		mid := (lo + hi) / 2
		p.Target = time.Duration(math.Exp(mid))
		if tied {
			p.Initial = p.Target
		}
		r := wd.measure(name, wd.adaptiveRun(p, oracle))
		best, bestT = r, p.Target
		ratio := float64(r.fetches) / wd.budget()
		if math.Abs(ratio-1) < 0.01 {
			break
		}
		if ratio > 1 {
			lo = mid // too many fetches: a longer target
		} else {
			hi = mid
		}
	}
	return best, bestT
}

// fixedRun revisits page i every intervals[i] days (+Inf: never).
func (wd *world) fixedRun(name string, intervals []float64) result {
	fetches := make([][]float64, len(wd.pages))
	for i := range wd.pages {
		fetches[i] = []float64{wd.initial(i)}
		if math.IsInf(intervals[i], 1) {
			continue
		}
		for t := wd.initial(i) + intervals[i]; t <= wd.days; t += intervals[i] {
			fetches[i] = append(fetches[i], t)
		}
	}
	return wd.measure(name, fetches)
}

// freshnessOptimal is Cho and Garcia-Molina's freshness-optimal policy given the true
// rates ("Effective page refresh policies", 2003): page i's interval r/λᵢ with r solving
// 1 − (1 + r)e^{−r} = μλᵢ, never revisited when μλᵢ ≥ 1 (it changes too often to be
// worth it) or λᵢ = 0, with μ chosen so that the revisits spend the budget. It bounds
// the freshness any schedule of this budget reaches.
func (wd *world) freshnessOptimal(maxDays float64) result {
	g := func(r float64) float64 { return 1 - (1+r)*math.Exp(-r) }
	intervals := make([]float64, len(wd.pages))
	run := func(mu float64) result {
		for i, p := range wd.pages {
			x := mu * p.rate
			if p.rate <= 0 || x >= 1 {
				intervals[i] = maxDays
				continue
			}
			lo, hi := 0.0, 50.0
			for range 60 {
				if mid := (lo + hi) / 2; g(mid) < x {
					lo = mid
				} else {
					hi = mid
				}
			}
			intervals[i] = math.Min((lo+hi)/2/p.rate, maxDays)
		}
		return wd.fixedRun("freshness-optimal (true rates)", intervals)
	}
	lo, hi := math.Log(1e-6), math.Log(1e3)
	var r result
	for range 40 {
		mid := (lo + hi) / 2
		r = run(math.Exp(mid))
		ratio := float64(r.fetches) / wd.budget()
		if math.Abs(ratio-1) < 0.005 {
			break
		}
		if ratio > 1 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return r
}
