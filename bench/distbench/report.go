package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// table is a Markdown table: a header, an alignment per column ("l" or
// "r") and rows of cells.
type table struct {
	head  []string
	align []byte
	rows  [][]string
}

func newTable(align string, head ...string) *table {
	a := []byte(align)
	for len(a) < len(head) {
		a = append(a, 'r')
	}
	return &table{head: head, align: a}
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table; "|" in cells is escaped.
func (t *table) write(w io.Writer) {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	line := func(cells []string) {
		parts := make([]string, len(t.head))
		for i := range parts {
			if i < len(cells) {
				parts[i] = esc(cells[i])
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(parts, " | "))
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		if t.align[i] == 'l' {
			sep[i] = "---"
		} else {
			sep[i] = "--:"
		}
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(sep, "|"))
	for _, r := range t.rows {
		line(r)
	}
	fmt.Fprintln(w)
}

// pct formats a fraction as a percentage with one decimal.
func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// pct2 formats a fraction as a percentage with two decimals.
func pct2(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

// signedPct formats a relative deviation: "+3.1%", "−0.4%".
func signedPct(f float64) string {
	if math.Abs(f) < 0.0005 {
		return "0.0%"
	}
	if f < 0 {
		return fmt.Sprintf("−%.1f%%", -100*f)
	}
	return fmt.Sprintf("+%.1f%%", 100*f)
}

// secs formats a duration in seconds with two decimals.
func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

// itoa formats an integer with thousands separators.
func itoa[T ~int | ~int64](n T) string {
	s := fmt.Sprint(int64(n))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// mib formats bytes as MiB with two decimals.
func mib(b int64) string { return fmt.Sprintf("%.2f", float64(b)/(1<<20)) }

// distribution summarises counts: min, median, mean and max.
type distribution struct {
	N                int
	Min, Median, Max int
	Mean             float64
}

func distOf(vals []int) distribution {
	if len(vals) == 0 {
		return distribution{}
	}
	s := append([]int(nil), vals...)
	sort.Ints(s)
	sum := 0
	for _, v := range s {
		sum += v
	}
	return distribution{N: len(s), Min: s[0], Median: s[len(s)/2], Max: s[len(s)-1], Mean: float64(sum) / float64(len(s))}
}

func (d distribution) String() string {
	return fmt.Sprintf("%d / %d / %.2f / %d", d.Min, d.Median, d.Mean, d.Max)
}

// checksLine summarises a run's correctness checks in one sentence.
func checksLine(r *runResult) string {
	c := r.Log
	parts := []string{
		fmt.Sprintf("coverage %d/%d (%.4f)", c.Covered, c.MustFetch, c.Coverage()),
		fmt.Sprintf("outside truth %d", c.Outside),
		fmt.Sprintf("repeated requests %d (on %d URLs; retries after 5xx/reset %d)", c.Duplicates, c.DupURLs, c.Retries),
		fmt.Sprintf("URLs recorded by two nodes %d", r.CrossDup),
		fmt.Sprintf("records %d for %d URLs", r.Records, r.Fetched()),
		fmt.Sprintf("most requests in flight to one host %d (hosts above 1: %d)", c.MaxOpen, c.HostsOver),
	}
	if len(c.OpenExample) > 0 {
		parts = append(parts, "arrived while another request to the host was open, e.g. "+strings.Join(c.OpenExample, " "))
	}
	if c.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("access-log entries dropped %d", c.Dropped))
	}
	if len(c.Missing) > 0 {
		parts = append(parts, "missing e.g. "+strings.Join(c.Missing, " "))
	}
	if len(c.DupExample) > 0 {
		parts = append(parts, "repeated e.g. "+strings.Join(c.DupExample, " "))
	}
	if len(r.LogNotes) > 0 {
		parts = append(parts, "logged: "+strings.Join(r.LogNotes[:min(len(r.LogNotes), 8)], "; "))
	}
	if r.Err != nil {
		parts = append(parts, "**failure: "+oneLine(r.Err.Error())+"**")
	}
	return strings.Join(parts, "; ")
}

// oneLine squeezes a multi-line text into one line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// topCmds formats the busiest commands per fetched page.
func topCmds(top []cmdCount, pages int, n int) string {
	var parts []string
	for _, c := range top[:min(n, len(top))] {
		parts = append(parts, fmt.Sprintf("%s %.2f", c.name, float64(c.calls)/float64(max(pages, 1))))
	}
	return strings.Join(parts, ", ")
}
