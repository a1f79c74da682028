package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// modeResult is one mode's figures, as the tables print them; the summary
// compares two of them.
type modeResult struct {
	Mode     string
	Names    []string  // topics, in column order
	PerInt   [][]int64 // pages per interval, per topic
	Totals   []int64
	CVs      []float64        // CV across topics, per interval
	MeanCV   float64          // mean of CVs
	TotalCV  float64          // CV of Totals
	Zero     map[string][]int // topic → intervals (1-based) in which it got no page
	ZeroLate int              // zero cells after the first interval
}

// report prints one mode's sampled table: the pages each topic got per
// interval, the CV across topics per interval and of the totals, and the
// intervals in which a topic got nothing. samples are cumulative counts per
// topic name at the end of each interval; a key NAME+"/relevant", when
// present, is the topic's relevant pages (printed with the totals). It is
// the one code path of the single-node and the cluster tables.
func report(w io.Writer, mode string, names []string, elapsed, sample time.Duration, samples []map[string]int64, note string) *modeResult {
	res := &modeResult{Mode: mode, Names: names, Zero: map[string][]int{}}
	fmt.Fprintf(w, "## mode %s (%s)\n\n", mode, elapsed.Round(time.Second))
	if len(samples) == 0 {
		fmt.Fprintf(w, "no sample taken\n\n")
		return res
	}
	fmt.Fprintf(w, "| interval end | %s | CV across topics |\n|---|%s---|\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	var prev map[string]int64
	for i, s := range samples {
		var d []float64
		row := make([]int64, 0, len(names))
		cells := make([]string, 0, len(names))
		for _, n := range names {
			v := s[n] - prev[n]
			d = append(d, float64(v))
			row = append(row, v)
			cells = append(cells, fmt.Sprint(v))
			if v == 0 {
				res.Zero[n] = append(res.Zero[n], i+1)
				if i > 0 {
					res.ZeroLate++
				}
			}
		}
		c := cv(d)
		res.CVs = append(res.CVs, c)
		res.PerInt = append(res.PerInt, row)
		fmt.Fprintf(w, "| %s | %s | %.2f |\n", time.Duration(i+1)*sample, strings.Join(cells, " | "), c)
		prev = s
	}
	last := samples[len(samples)-1]
	var tot []float64
	cells := []string{}
	for _, n := range names {
		tot = append(tot, float64(last[n]))
		res.Totals = append(res.Totals, last[n])
		if r, ok := last[n+"/relevant"]; ok {
			cells = append(cells, fmt.Sprintf("%d (%d relevant)", last[n], r))
		} else {
			cells = append(cells, fmt.Sprint(last[n]))
		}
	}
	res.TotalCV = cv(tot)
	res.MeanCV = mean(res.CVs)
	fmt.Fprintf(w, "| **total** | %s | %.2f |\n\n", strings.Join(cells, " | "), res.TotalCV)
	zero := "none"
	if len(res.Zero) > 0 {
		var parts []string
		for _, n := range names {
			if iv := res.Zero[n]; len(iv) > 0 {
				parts = append(parts, fmt.Sprintf("%s in %v", n, iv))
			}
		}
		zero = strings.Join(parts, "; ")
	}
	fmt.Fprintf(w, "mean per-interval CV %.2f; intervals with no page for a topic: %s", res.MeanCV, zero)
	if note != "" {
		fmt.Fprintf(w, "; %s", note)
	}
	fmt.Fprint(w, "\n\n")
	return res
}

// summary compares FIFO and PQ-MCSA against the goals of issue 25: the CV
// across topics of PQ-MCSA at most half FIFO's, and no topic without pages
// in an interval after the first.
func summary(w io.Writer, fifo, pq *modeResult) {
	if fifo == nil || pq == nil {
		return
	}
	ratio := func(a, b float64) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "## summary\n\n| | FIFO | PQ-MCSA | PQ/FIFO | goal | met? |\n|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| CV across topics, mean over intervals | %.2f | %.2f | %s | ≤ 0.5 | %s |\n",
		fifo.MeanCV, pq.MeanCV, ratio(pq.MeanCV, fifo.MeanCV), met(fifo.MeanCV > 0 && pq.MeanCV <= fifo.MeanCV/2))
	fmt.Fprintf(w, "| CV across topics, totals | %.2f | %.2f | %s | ≤ 0.5 | %s |\n",
		fifo.TotalCV, pq.TotalCV, ratio(pq.TotalCV, fifo.TotalCV), met(fifo.TotalCV > 0 && pq.TotalCV <= fifo.TotalCV/2))
	fmt.Fprintf(w, "| topic-intervals with no page, after the first interval | %d | %d | | PQ: 0 | %s |\n",
		fifo.ZeroLate, pq.ZeroLate, met(pq.ZeroLate == 0))
	var ft, pt int64
	for i := range fifo.Totals {
		ft += fifo.Totals[i]
	}
	for i := range pq.Totals {
		pt += pq.Totals[i]
	}
	fmt.Fprintf(w, "| pages, all topics | %d | %d | %s | | |\n\n", ft, pt, ratio(float64(pt), float64(ft)))
}

// cv is the coefficient of variation (population standard deviation over
// mean) of xs; 0 when the mean is 0.
func cv(xs []float64) float64 {
	m := mean(xs)
	if m == 0 {
		return 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(xs))) / m
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
