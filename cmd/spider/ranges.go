package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/p2p"
)

// flagRange is the valid range of a numeric flag of one command, beyond the
// crawl settings (crawl.Config.Validate checks those, whether they come
// from flags or the --config file). min and max are inclusive; a
// duration's are in nanoseconds. noMin: only max is checked here, the
// command checks the lower bound with its own message. A value of special
// (when hasSpecial) is also valid: a flag's "use the default" value
// outside the range.
type flagRange struct {
	min, max   float64
	noMin      bool
	special    float64
	hasSpecial bool
	note       string // what special means, for the message
}

// flagRanges are the ranges checked by parseArgs after parsing, keyed by
// "command/flag". writeHelp adds "(range …)" to the help of a flag whose
// help text does not state one, and the parse error of a bad value names it.
var flagRanges = map[string]flagRange{
	"index/batch":        {noMin: true, max: 10_000_000},
	"index/max-segments": {noMin: true, max: 1000},
	"index/nodes":        {noMin: true, max: 10_000},
	"index/task-records": {noMin: true, max: 10_000_000},
	"index/workers":      {noMin: true, max: 10_000},
	"index/lease-ttl":    {min: float64(100 * time.Millisecond), max: float64(time.Hour)},

	"search/rank-weight":      {min: 0, max: 1000, special: -1, hasSpecial: true, note: "the default, 0.5"},
	"search/proximity-weight": {min: 0, max: index.MaxProximityWeight},

	"rank/tolerance": {noMin: true, max: 2},
	"rank/max-iter":  {noMin: true, max: 1_000_000},
	"rank/workers":   {noMin: true, max: 10_000},
	"rank/top":       {noMin: true, max: 1_000_000},
	"rank/parts":     {noMin: true, max: 4096},
	"rank/lease":     {noMin: true, max: float64(time.Hour)},

	"serve/page-size":    {min: 1, max: 1000},
	"serve/buckets":      {min: 1, max: p2p.MaxBuckets},
	"serve/cache-size":   {noMin: true, max: 100_000_000},
	"serve/cache-mb":     {noMin: true, max: 1 << 20},
	"serve/cache-ttl":    {noMin: true, max: float64(24 * time.Hour)},
	"serve/max-searches": {noMin: true, max: 100_000},
	"serve/doc-maps-mb":  {noMin: true, max: 1 << 20},

	"status/buckets": {min: 1, max: p2p.MaxBuckets},

	"crawl/rounds":     {min: 1, max: 1000},
	"crawl/groups":     {min: 1, max: 1 << 16},
	"crawl/workers":    {min: 0, max: 10_000},
	"crawl/cache-size": {min: 0, max: 1_000_000_000},
	"crawl/lease-ttl":  {min: float64(100 * time.Millisecond), max: float64(time.Hour)},
}

// rangeOf returns the range of flag f of fs's command, if it has one.
func rangeOf(fs *pflag.FlagSet, f *pflag.Flag) (flagRange, bool) {
	r, ok := flagRanges[fs.Name()+"/"+f.Name]
	return r, ok
}

// text is the range as messages state it: "1 to 1000" (help adds
// "range"), or "at most 1000".
func (r flagRange) text(f *pflag.Flag) string {
	if r.noMin {
		return "at most " + r.format(f, r.max)
	}
	s := fmt.Sprintf("%s to %s", r.format(f, r.min), r.format(f, r.max))
	if r.hasSpecial {
		s += fmt.Sprintf(", or %s: %s", r.format(f, r.special), r.note)
	}
	return s
}

// helpText is the range as help states it: "range 1 to 1000", "at most 1000".
func (r flagRange) helpText(f *pflag.Flag) string {
	if r.noMin {
		return r.text(f)
	}
	return "range " + r.text(f)
}

func (r flagRange) format(f *pflag.Flag, v float64) string {
	if f.Value.Type() == "duration" {
		return time.Duration(v).String()
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64) // 10000000, not 1e+07
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// checkRanges refuses, as a usage error naming the flag and its range, a
// value of fs outside its flagRanges entry (NaN included).
func checkRanges(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		r, ok := rangeOf(fs, f)
		if !ok || err != nil {
			return
		}
		var v float64
		if f.Value.Type() == "duration" {
			d, perr := time.ParseDuration(f.Value.String())
			if perr != nil {
				return // the flag's own Set refused it already
			}
			v = float64(d)
		} else if v, err = strconv.ParseFloat(f.Value.String(), 64); err != nil {
			err = nil
			return
		}
		if r.hasSpecial && v == r.special || (r.noMin || v >= r.min) && v <= r.max && !math.IsNaN(v) {
			return
		}
		err = fmt.Errorf("%w: --%s %s is out of range: use %s; see spider %s -h", errUsage, f.Name, f.Value.String(), r.text(f), fs.Name())
	})
	return err
}
