// Package revisit is the revisit policy of a continuous crawl, as pure functions over a
// per-URL schedule entry: when to fetch a page again, learned from what its past
// fetches saw.
//
// An Entry holds a URL's schedule (next fetch, interval), its validators (ETag,
// Last-Modified) for a conditional GET, its content fingerprint, a summary of its change
// history (the last MaxObservations revisits: the time since the previous fetch and
// whether a change was seen), its failures, and the sitemap hints. Entry.MarshalBinary
// and UnmarshalEntry give its compact, versioned encoding (both crawl states store it).
//
// Policy.Observe records a fetch's outcome and sets the next fetch:
//
//   - ModeOff: no revisit (Next is zero) — a one-shot crawl.
//   - ModeFixed: every Policy.Initial (within the bounds).
//   - ModeAdaptive: while a page has fewer than Policy.MinSamples revisits, an unchanged
//     page's interval grows (× Grow) and a changed page's shrinks (× Shrink); from then on
//     its change rate λ is estimated from the history (EstimateRate: Cho and
//     Garcia-Molina's estimators for histories that only tell whether a page changed
//     between two visits, "Estimating frequency of change", ACM TOIT 2003) and the
//     interval is the one that minimises the page's expected age plus the cost of the
//     fetches (OptimalInterval; Policy.Target is the interval of a page that changes all
//     the time). A page never seen to change is taken to change at most once in twice
//     the time observed (UnchangedRate), so its interval grows slowly. Every interval is held
//     within the bounds: Policy.Min/Max, overridden per host (Policy.Hosts) or, failing
//     that, per topic (Policy.Topics).
//
// Change is judged by the content fingerprint, never by validators: an ETag that changes
// on every answer with the same content is no change, and a 304 answers "unchanged" only
// to a conditional request (a 304 to an unconditional one is a failure, ClassProtocol). A
// Last-Modified later than the fetch is not kept as a validator. Sitemap hints
// (Policy.Hint: lastmod, changefreq) set the first interval of a page without history
// and may bring a fetch forward when lastmod says the page changed after our copy; a hint
// that proved wrong twice is ignored from then on, and changefreq never overrides an
// estimate from observed changes.
//
// Failed fetches follow their own back-off (RetryAfter) by failure class: a DNS failure,
// a refused connection or a time-out is retried over days before it is final.
package revisit

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Mode selects the revisit policy.
type Mode uint8

// The modes.
const (
	ModeOff Mode = iota
	ModeFixed
	ModeAdaptive
)

var modeNames = [...]string{"off", "fixed", "adaptive"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", m)
}

// ErrBadPolicy reports a policy setting out of range.
var ErrBadPolicy = errors.New("bad revisit policy")

// ParseMode reads "off", "fixed" or "adaptive".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("cannot use revisit mode %q: %w: want off, fixed or adaptive", s, ErrBadPolicy)
}

// Bounds bound a revisit interval; a zero field leaves the policy's bound.
type Bounds struct{ Min, Max time.Duration }

// Policy is a revisit policy. The zero value is ModeOff; Validate fills defaults.
type Policy struct {
	Mode Mode
	// Initial is the first revisit interval of a page (and ModeFixed's only one).
	// Default 24h.
	Initial time.Duration
	// Min and Max bound every interval. Defaults 1h and 30 days.
	Min, Max time.Duration
	// Hosts and Topics override Min/Max for a host name or a topic (a host's bounds
	// win over its topic's).
	Hosts  map[string]Bounds
	Topics map[string]Bounds
	// Grow and Shrink are the interval factors while a page has fewer than MinSamples
	// revisits (unchanged × Grow, changed × Shrink). Defaults 1.5 and 0.5.
	Grow, Shrink float64
	// MinSamples is the number of revisits before the estimator is used. Default 3.
	MinSamples int
	// Target is the revisit interval of a page that changes all the time; slower pages
	// get longer intervals (OptimalInterval). Default 24h.
	Target time.Duration
}

// Validate applies the defaults and checks the ranges.
func (p *Policy) Validate() error {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&p.Initial, 24*time.Hour)
	def(&p.Min, time.Hour)
	def(&p.Max, 30*24*time.Hour)
	def(&p.Target, 24*time.Hour)
	if p.Grow == 0 {
		p.Grow = 1.5
	}
	if p.Shrink == 0 {
		p.Shrink = 0.5
	}
	if p.MinSamples == 0 {
		p.MinSamples = 3
	}
	switch {
	case p.Mode > ModeAdaptive:
		return fmt.Errorf("cannot use revisit mode %d: %w: want off, fixed or adaptive", p.Mode, ErrBadPolicy)
	case p.Min <= 0 || p.Max < p.Min:
		return fmt.Errorf("cannot bound revisits to [%s, %s]: %w: want 0 < min ≤ max", p.Min, p.Max, ErrBadPolicy)
	case p.Initial < 0 || p.Target < 0:
		return fmt.Errorf("cannot use a negative initial or target interval: %w", ErrBadPolicy)
	case p.Grow < 1 || p.Shrink <= 0 || p.Shrink > 1:
		return fmt.Errorf("cannot use grow %v and shrink %v: %w: want grow ≥ 1 and 0 < shrink ≤ 1", p.Grow, p.Shrink, ErrBadPolicy)
	case p.MinSamples < 1 || p.MinSamples > MaxObservations:
		return fmt.Errorf("cannot use %d samples: %w: want 1–%d", p.MinSamples, ErrBadPolicy, MaxObservations)
	}
	for name, b := range p.Hosts {
		if b.Min < 0 || b.Max < 0 || (b.Max > 0 && b.Max < b.Min) {
			return fmt.Errorf("cannot bound revisits of host %q to [%s, %s]: %w", name, b.Min, b.Max, ErrBadPolicy)
		}
	}
	for name, b := range p.Topics {
		if b.Min < 0 || b.Max < 0 || (b.Max > 0 && b.Max < b.Min) {
			return fmt.Errorf("cannot bound revisits of topic %q to [%s, %s]: %w", name, b.Min, b.Max, ErrBadPolicy)
		}
	}
	return nil
}

// Bounds returns the interval bounds of a URL of host in topic ("" for none): the host's
// bound, else the topic's, else the policy's, field by field.
func (p *Policy) Bounds(host, topic string) (lo, hi time.Duration) {
	lo, hi = p.Min, p.Max
	if b, ok := p.Topics[topic]; ok && topic != "" {
		lo, hi = orDefault(b.Min, lo), orDefault(b.Max, hi)
	}
	if b, ok := p.Hosts[host]; ok {
		lo, hi = orDefault(b.Min, lo), orDefault(b.Max, hi)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func orDefault(v, d time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return d
}

func clamp(v, lo, hi time.Duration) time.Duration { return max(lo, min(v, hi)) }

// Outcome is how a fetch ended.
type Outcome uint8

// The outcomes.
const (
	// Fetched: a 2xx answer with a body (Observation.Fingerprint).
	Fetched Outcome = iota
	// NotModified: a 304 answer.
	NotModified
	// Failed: no usable answer (Observation.Class).
	Failed
)

// Observation is one fetch's outcome.
type Observation struct {
	At      time.Time
	Outcome Outcome
	// Conditional: the request carried If-None-Match or If-Modified-Since.
	Conditional bool
	// Fingerprint of the content (Fetched).
	Fingerprint uint64
	// ETag and LastModified of the answer (zero: none).
	ETag         string
	LastModified time.Time
	// Class and RetryAfter (the server's Retry-After, 0: none) of a failure.
	Class      Class
	RetryAfter time.Duration
}

// Observe records o in e and sets e.Next (zero: no more fetches: ModeOff, or a final
// failure) for a URL of host in topic. It reports whether the fetch saw a change (a new
// fingerprint; the first fetch is no change).
func (p *Policy) Observe(e *Entry, o Observation, host, topic string) (changed bool) {
	lo, hi := p.Bounds(host, topic)
	if o.Outcome == NotModified && !o.Conditional {
		o.Outcome, o.Class = Failed, ClassProtocol
	}
	if o.Outcome == Failed {
		e.Failures++
		e.FailClass = o.Class
		delay, final := RetryAfter(o.Class, int(e.Failures), o.RetryAfter)
		if final {
			e.Next = time.Time{}
		} else {
			e.Next = o.At.Add(delay)
		}
		return false
	}
	e.Failures, e.FailClass = 0, 0
	first := e.LastFetch.IsZero()
	if o.Outcome == Fetched {
		changed = !first && o.Fingerprint != e.Fingerprint
		e.Fingerprint = o.Fingerprint
	}
	if o.Outcome == Fetched || o.ETag != "" {
		e.ETag = o.ETag
	}
	if !o.LastModified.IsZero() || o.Outcome == Fetched {
		e.LastModified = o.LastModified
		if e.LastModified.After(o.At.Add(time.Minute)) {
			e.LastModified = time.Time{} // in the future: never sent back
		}
	}
	if !first {
		since := o.At.Sub(e.LastFetch)
		e.History.Add(since, changed)
		if e.HintPending {
			if !changed {
				e.HintMisses++
			}
			e.HintPending = false
		}
	}
	if changed || first {
		e.LastChange = o.At
	}
	e.LastFetch = o.At
	switch p.Mode {
	case ModeOff:
		e.Next = time.Time{}
		return changed
	case ModeFixed:
		e.Interval = clamp(p.Initial, lo, hi)
	default:
		e.Interval = p.adapt(e, first, changed, lo, hi)
	}
	e.Next = o.At.Add(e.Interval)
	return changed
}

// adapt returns the next interval of ModeAdaptive.
func (p *Policy) adapt(e *Entry, first, changed bool, lo, hi time.Duration) time.Duration {
	cur := e.Interval
	if cur <= 0 || first {
		cur = p.Initial
		if f, ok := freqDurations[e.ChangeFreq]; ok && e.ChangeFreq != FreqUnknown && first {
			cur = f
		}
		return clamp(cur, lo, hi)
	}
	if e.History.Len() < p.MinSamples {
		if changed {
			return clamp(scale(cur, p.Shrink), lo, hi)
		}
		return clamp(scale(cur, p.Grow), lo, hi)
	}
	rate := EstimateRate(&e.History)
	if rate <= 0 {
		// No change seen in the kept revisits: not "never changes" but "rarely": the
		// estimate with half a change, at most one change in twice the time observed.
		rate = UnchangedRate(&e.History)
	}
	return OptimalInterval(rate, p.Target, lo, hi)
}

func scale(d time.Duration, f float64) time.Duration {
	v := float64(d) * f
	if v > float64(math.MaxInt64/2) {
		return math.MaxInt64 / 2
	}
	return time.Duration(v)
}

// ChangeFreq is a sitemap <changefreq> value.
type ChangeFreq uint8

// The changefreq values of the sitemap protocol.
const (
	FreqUnknown ChangeFreq = iota
	FreqAlways
	FreqHourly
	FreqDaily
	FreqWeekly
	FreqMonthly
	FreqYearly
	FreqNever
)

var freqNames = [...]string{"", "always", "hourly", "daily", "weekly", "monthly", "yearly", "never"}

// ParseChangeFreq reads a changefreq value (case-insensitive); unknown values are
// FreqUnknown.
func ParseChangeFreq(s string) ChangeFreq {
	s = strings.ToLower(strings.TrimSpace(s))
	for i, n := range freqNames {
		if i > 0 && n == s {
			return ChangeFreq(i)
		}
	}
	return FreqUnknown
}

func (f ChangeFreq) String() string {
	if int(f) < len(freqNames) {
		return freqNames[f]
	}
	return ""
}

// freqDurations is the first interval a changefreq suggests (clamped to the bounds).
var freqDurations = map[ChangeFreq]time.Duration{
	FreqAlways: 0, FreqHourly: time.Hour, FreqDaily: 24 * time.Hour, FreqWeekly: 7 * 24 * time.Hour,
	FreqMonthly: 30 * 24 * time.Hour, FreqYearly: 365 * 24 * time.Hour, FreqNever: math.MaxInt64 / 2,
}

// Hint applies a sitemap entry's hints at now: changefreq is kept for the first
// interval of a page not fetched yet; a lastmod after our copy's fetch brings the next
// fetch forward to the later of now and the last fetch + the lower bound (so at most one
// hinted fetch per lower bound), once per lastmod (HintLastMod: a lastmod not after the
// one that last moved the fetch is no news), unless the URL's hints already proved wrong
// twice (HintMisses). A lastmod in the future, a URL not fetched yet, one whose fetch
// failed last (its retry back-off rules), one not scheduled (Next zero: revisits off, a
// final failure) and ModeOff are left alone. It reports whether Next moved. Hints never
// change an interval learned from observed changes.
func (p *Policy) Hint(e *Entry, lastmod time.Time, freq ChangeFreq, now time.Time, host, topic string) bool {
	if freq != FreqUnknown {
		e.ChangeFreq = freq
	}
	if lastmod.IsZero() || e.LastFetch.IsZero() || e.Next.IsZero() || e.Failures > 0 || p.Mode == ModeOff || e.HintMisses >= 2 {
		return false
	}
	lastmod = lastmod.Truncate(time.Second)
	if lastmod.After(now.Add(time.Minute)) || !lastmod.After(e.LastFetch) || !lastmod.After(e.HintLastMod) {
		return false // in the future, our copy is newer, or this lastmod was heard already
	}
	lo, _ := p.Bounds(host, topic)
	at := maxTime(now, e.LastFetch.Add(lo))
	if !at.Before(e.Next) {
		return false
	}
	e.Next, e.HintPending, e.HintLastMod = at, true, lastmod.UTC()
	return true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Due reports whether e should be fetched at now.
func (e *Entry) Due(now time.Time) bool { return !e.Next.IsZero() && !e.Next.After(now) }

// Validators returns the request headers of a conditional GET ("" and zero time for
// none): If-None-Match and If-Modified-Since.
func (e *Entry) Validators() (etag string, modifiedSince time.Time) {
	return e.ETag, e.LastModified
}
