package revisit

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func policy(t *testing.T, p Policy) *Policy {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestObserveSteps(t *testing.T) {
	type step struct {
		after   time.Duration // since the previous fetch
		o       Observation   // At is filled in
		changed bool          // want
		iv      time.Duration // want interval (0: Next zero)
	}
	fetched := func(fp uint64) Observation { return Observation{Outcome: Fetched, Fingerprint: fp} }
	cases := []struct {
		name  string
		p     Policy
		host  string
		steps []step
	}{
		{"off never revisits", Policy{Mode: ModeOff}, "", []step{{0, fetched(1), false, 0}}},
		{"fixed keeps the initial", Policy{Mode: ModeFixed, Initial: 2 * day}, "", []step{
			{0, fetched(1), false, 2 * day}, {2 * day, fetched(2), true, 2 * day}, {2 * day, fetched(2), false, 2 * day}}},
		{"adaptive: unchanged grows, changed shrinks", Policy{Mode: ModeAdaptive}, "", []step{
			{0, fetched(1), false, day},
			{day, fetched(1), false, 36 * time.Hour},
			{36 * time.Hour, fetched(2), true, 18 * time.Hour}}},
		{"adaptive: bounded by min and max", Policy{Mode: ModeAdaptive, Initial: 2 * time.Hour, Min: time.Hour, Max: 3 * time.Hour}, "", []step{
			{0, fetched(1), false, 2 * time.Hour},
			{2 * time.Hour, fetched(2), true, time.Hour},
			{time.Hour, fetched(3), true, time.Hour}}},
		{"per-host bounds win", Policy{Mode: ModeAdaptive, Hosts: map[string]Bounds{"h": {Max: 12 * time.Hour}}, Topics: map[string]Bounds{"t": {Max: 6 * day}}}, "h", []step{
			{0, fetched(1), false, 12 * time.Hour}, {12 * time.Hour, fetched(1), false, 12 * time.Hour}}},
		{"per-topic bounds", Policy{Mode: ModeAdaptive, Topics: map[string]Bounds{"t": {Min: 2 * day}}}, "", []step{
			{0, fetched(1), false, 2 * day}, {2 * day, fetched(2), true, 2 * day}}},
		{"ETag changed, same content: unchanged", Policy{Mode: ModeAdaptive}, "", []step{
			{0, Observation{Outcome: Fetched, Fingerprint: 7, ETag: `"a"`}, false, day},
			{day, Observation{Outcome: Fetched, Fingerprint: 7, ETag: `"b"`}, false, 36 * time.Hour}}},
		{"304 to a conditional request: unchanged", Policy{Mode: ModeAdaptive}, "", []step{
			{0, Observation{Outcome: Fetched, Fingerprint: 7, ETag: `"a"`}, false, day},
			{day, Observation{Outcome: NotModified, Conditional: true}, false, 36 * time.Hour}}},
		{"304 without a conditional request: a failure", Policy{Mode: ModeAdaptive}, "", []step{
			{0, fetched(7), false, day},
			{day, Observation{Outcome: NotModified}, false, 10 * time.Minute}}},
		{"410 is final", Policy{Mode: ModeAdaptive}, "", []step{
			{0, fetched(7), false, day},
			{day, Observation{Outcome: Failed, Class: ClassGone}, false, 0}}},
		{"DNS failure is retried", Policy{Mode: ModeAdaptive}, "", []step{
			{0, Observation{Outcome: Failed, Class: ClassDNS}, false, time.Minute},
			{time.Minute, Observation{Outcome: Failed, Class: ClassDNS}, false, 4 * time.Minute},
			{4 * time.Minute, fetched(3), false, day}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := policy(t, c.p)
			var e Entry
			at := t0
			for i, s := range c.steps {
				at = at.Add(s.after)
				s.o.At = at
				if got := p.Observe(&e, s.o, c.host, "t"); got != s.changed {
					t.Errorf("step %d: changed = %v, want %v", i, got, s.changed)
				}
				var iv time.Duration
				if !e.Next.IsZero() {
					iv = e.Next.Sub(at)
				}
				if iv != s.iv {
					t.Errorf("step %d: next in %s, want %s", i, iv, s.iv)
				}
			}
		})
	}
}

func TestObserveValidators(t *testing.T) {
	p := policy(t, Policy{Mode: ModeAdaptive})
	var e Entry
	p.Observe(&e, Observation{At: t0, Outcome: Fetched, Fingerprint: 1, ETag: `"x"`, LastModified: t0.Add(-time.Hour)}, "", "")
	if et, lm := e.Validators(); et != `"x"` || !lm.Equal(t0.Add(-time.Hour)) {
		t.Errorf("validators %q %s", et, lm)
	}
	// A Last-Modified in the future is not kept; a 304 keeps the old ETag.
	p.Observe(&e, Observation{At: t0.Add(day), Outcome: Fetched, Fingerprint: 1, LastModified: t0.Add(400 * day)}, "", "")
	if _, lm := e.Validators(); !lm.IsZero() {
		t.Errorf("future Last-Modified kept: %s", lm)
	}
	e.ETag = `"y"`
	p.Observe(&e, Observation{At: t0.Add(2 * day), Outcome: NotModified, Conditional: true}, "", "")
	if e.ETag != `"y"` {
		t.Errorf("a 304 dropped the ETag: %q", e.ETag)
	}
}

// poisson returns change instants (seconds) of a Poisson process at rate per second.
func poisson(r *rand.Rand, rate, until float64) []float64 {
	var out []float64
	for t := r.ExpFloat64() / rate; t < until; t += r.ExpFloat64() / rate {
		out = append(out, t)
	}
	return out
}

// observe builds the history of visits at the given instants to a page changing at the
// given instants.
func observe(visits, changes []float64) History {
	var h History
	j := 0
	for i := 1; i < len(visits); i++ {
		changed := false
		for j < len(changes) && changes[j] <= visits[i] {
			if changes[j] > visits[i-1] {
				changed = true
			}
			j++
		}
		h.Add(time.Duration((visits[i]-visits[i-1])*float64(time.Second)), changed)
	}
	return h
}

func TestEstimateRate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name      string
		perDay    float64 // true rate
		visitDays float64 // mean visit interval
		regular   bool
		tol       float64 // relative error of the mean over trials
	}{
		{"regular, rate ≈ visits", 1, 1, true, 0.15},
		{"regular, slow page", 0.1, 1, true, 0.2},
		{"irregular, rate ≈ visits", 1, 1, false, 0.15},
		{"irregular, fast page", 3, 1, false, 0.25},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum := 0.0
			const trials = 300
			for range trials {
				var visits []float64
				at := 0.0
				for range MaxObservations + 1 {
					visits = append(visits, at)
					iv := c.visitDays * 86400
					if !c.regular {
						iv *= 0.3 + 1.4*r.Float64()
					}
					at += iv
				}
				h := observe(visits, poisson(r, c.perDay/86400, at))
				sum += EstimateRate(&h) * 86400
			}
			got := sum / trials
			if math.Abs(got-c.perDay)/c.perDay > c.tol {
				t.Errorf("mean estimate %.3f a day, true %.3f", got, c.perDay)
			}
		})
	}
	// Very irregular visits (alternately 0.1 and 3 days apart) to a daily page: the
	// maximum-likelihood estimate for irregular intervals is needed; the regular-interval
	// formula with the mean interval is far off.
	t.Run("alternating intervals", func(t *testing.T) {
		sum := 0.0
		const trials = 300
		for range trials {
			var visits []float64
			at := 0.0
			for i := range MaxObservations + 1 {
				visits = append(visits, at)
				at += []float64{0.1, 3}[i%2] * 86400
			}
			h := observe(visits, poisson(r, 1.0/86400, at))
			sum += EstimateRate(&h) * 86400
		}
		if got := sum / trials; math.Abs(got-1) > 0.25 { // the MLE of 32 revisits: about +17%; the mean-interval formula: 0.47
			t.Errorf("mean estimate %.3f a day, true 1", got)
		}
	})
	// Nothing changed: 0; everything changed: finite.
	var h History
	for range 5 {
		h.Add(day, false)
	}
	if EstimateRate(&h) != 0 {
		t.Error("no change estimated as a change rate")
	}
	h = History{}
	for range 5 {
		h.Add(day, true)
	}
	if got := EstimateRate(&h) * 86400; math.IsInf(got, 0) || math.Abs(got-math.Log(11)) > 1e-9 {
		t.Errorf("all changed: %v a day, want ln(11)", got)
	}
	if EstimateRate(&History{}) != 0 {
		t.Error("empty history")
	}
}

func TestOptimalInterval(t *testing.T) {
	lo, hi := time.Hour, 365*day
	// A page changing all the time gets the target; slower pages longer intervals.
	if got := OptimalInterval(1.0, day, lo, hi); math.Abs(got.Hours()-24) > 0.5 {
		t.Errorf("constantly changing page: %s, want about 24h", got)
	}
	prev := time.Duration(0)
	for _, perDay := range []float64{10, 1, 0.1, 0.01, 0.001} {
		got := OptimalInterval(perDay/86400, day, lo, hi)
		if got < prev {
			t.Errorf("%v/day: %s shorter than a faster page's %s", perDay, got, prev)
		}
		prev = got
	}
	// Slow pages: about (3μ/λ)^(1/3).
	rate := 0.01 / 86400
	want := math.Cbrt(3 * 86400 * 86400 / 2 / rate)
	if got := OptimalInterval(rate, day, lo, hi).Seconds(); math.Abs(got-want)/want > 0.1 {
		t.Errorf("slow page: %.0fs, want about %.0fs", got, want)
	}
	if got := OptimalInterval(0, day, lo, hi); got != hi {
		t.Errorf("never changes: %s", got)
	}
	if got := OptimalInterval(1, day, 2*day, 3*day); got != 2*day {
		t.Errorf("bounds: %s", got)
	}
	// ExpectedAge and ExpectedFreshness at the limits.
	if a := ExpectedAge(100, day); math.Abs(a.Hours()-12) > 0.01 {
		t.Errorf("age of a constantly changing page: %s", a)
	}
	if f := ExpectedFreshness(1.0/86400, day); math.Abs(f-(1-math.Exp(-1))) > 1e-9 {
		t.Errorf("freshness %v", f)
	}
}

func TestRetryAfter(t *testing.T) {
	for _, c := range []struct {
		class   Class
		attempt int
		server  time.Duration
		delay   time.Duration
		final   bool
	}{
		{ClassDNS, 1, 0, time.Minute, false},
		{ClassDNS, 3, 0, 16 * time.Minute, false},
		{ClassDNS, 11, 0, 24 * time.Hour, false},
		{ClassDNS, 12, 0, 0, true},
		{ClassConnect, 1, 0, 30 * time.Second, false},
		{ClassTimeout, 8, 0, 0, true},
		{ClassThrottled, 1, 5 * time.Minute, 5 * time.Minute, false},
		{ClassThrottled, 1, 48 * time.Hour, time.Hour, false},
		{ClassServer, 2, 0, 3 * time.Minute, false},
		{ClassNotFound, 1, 0, 24 * time.Hour, false},
		{ClassNotFound, 2, 0, 0, true},
		{ClassGone, 1, 0, 0, true},
		{Class(200), 1, 0, time.Minute, false},
	} {
		d, f := RetryAfter(c.class, c.attempt, c.server)
		if d != c.delay || f != c.final {
			t.Errorf("%s attempt %d (server %s): %s final %v, want %s %v", c.class, c.attempt, c.server, d, f, c.delay, c.final)
		}
	}
	for c := ClassNone + 1; c < numClasses; c++ {
		if ParseClass(c.String()) != c {
			t.Errorf("class %d does not read back", c)
		}
	}
}

func TestHint(t *testing.T) {
	p := policy(t, Policy{Mode: ModeAdaptive})
	var e Entry
	p.Hint(&e, time.Time{}, FreqWeekly, t0, "", "")
	p.Observe(&e, Observation{At: t0, Outcome: Fetched, Fingerprint: 1}, "", "")
	if e.Interval != 7*day {
		t.Fatalf("changefreq weekly: first interval %s", e.Interval)
	}
	now := t0.Add(day)
	// lastmod before our fetch, or in the future: nothing.
	if p.Hint(&e, t0.Add(-time.Hour), 0, now, "", "") || p.Hint(&e, now.Add(time.Hour), 0, now, "", "") {
		t.Error("a stale or future lastmod moved the fetch")
	}
	// A lastmod after our fetch brings it forward; two misses and hints are ignored.
	for i := range 3 {
		moved := p.Hint(&e, now.Add(-time.Minute), 0, now, "", "")
		if moved != (i < 2) {
			t.Fatalf("hint %d moved %v", i, moved)
		}
		if !moved {
			break
		}
		if !e.Next.Equal(now) {
			t.Fatalf("hint %d: next %s, want %s", i, e.Next, now)
		}
		p.Observe(&e, Observation{At: now, Outcome: Fetched, Fingerprint: 1}, "", "")
		now = now.Add(day)
	}
	if e.HintMisses != 2 {
		t.Errorf("hint misses %d", e.HintMisses)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []Policy{
		{Min: 2 * time.Hour, Max: time.Hour},
		{Grow: 0.5},
		{Shrink: 2},
		{MinSamples: 100},
		{Mode: 9},
		{Hosts: map[string]Bounds{"h": {Min: 2 * time.Hour, Max: time.Hour}}},
	} {
		if err := p.Validate(); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	for _, s := range []string{"off", "Fixed", "adaptive"} {
		if _, err := ParseMode(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseMode("sometimes"); !errors.Is(err, ErrBadPolicy) {
		t.Error("bad mode accepted")
	}
}

func fullEntry() Entry {
	e := Entry{
		Next: t0.Add(day), Interval: 36 * time.Hour, LastFetch: t0, LastChange: t0.Add(-day),
		ETag: `W/"abc"`, LastModified: t0.Add(-2 * day), Fingerprint: 0xdeadbeef12345678,
		Failures: 2, FailClass: ClassDNS, ChangeFreq: FreqDaily, HintMisses: 1, HintPending: true,
	}
	for i := range 40 {
		e.History.Add(time.Duration(i+1)*time.Hour, i%3 == 0)
	}
	return e
}

func TestEntryEncoding(t *testing.T) {
	for _, e := range []Entry{{}, fullEntry()} {
		b, _ := e.MarshalBinary()
		got, err := UnmarshalEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		b2, _ := got.MarshalBinary()
		if !bytes.Equal(b, b2) {
			t.Errorf("re-encoding differs")
		}
		if !got.Next.Equal(e.Next) || got.Interval != e.Interval || got.ETag != e.ETag || got.Fingerprint != e.Fingerprint ||
			got.History.Revisits != e.History.Revisits || len(got.History.Recent) != len(e.History.Recent) || got.HintPending != e.HintPending {
			t.Errorf("round trip: %+v\nwant %+v", got, e)
		}
		t.Logf("%d bytes", len(b))
	}
	full, _ := (&Entry{LastFetch: t0, Next: t0.Add(day), Interval: day, Fingerprint: 1, ETag: `"0123456789"`}).MarshalBinary()
	if len(full) > 48 {
		t.Errorf("a once-fetched entry takes %d bytes", len(full))
	}
	good, _ := (&Entry{Next: t0, Fingerprint: 5}).MarshalBinary()
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), 0),
		"flags":     {EncodingVersion, 0xff},
	} {
		if _, err := UnmarshalEntry(b); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Version 2 only for an entry with a hinted lastmod, the field version 1
	// lacks: a spider reading version 1 reads every other entry, and says
	// "a newer spider wrote it?" for these.
	hinted, _ := (&Entry{Next: t0, Fingerprint: 5, HintLastMod: t0}).MarshalBinary()
	if good[0] != 1 || hinted[0] != 2 {
		t.Errorf("versions written: %d without a hinted lastmod, %d with one; want 1 and 2", good[0], hinted[0])
	}
	if e, err := UnmarshalEntry(hinted); err != nil || !e.HintLastMod.Equal(t0) {
		t.Errorf("version 2 entry: %v, %v", e.HintLastMod, err)
	}
	if _, err := UnmarshalEntry(append([]byte{1}, hinted[1:]...)); !errors.Is(err, ErrBadEntry) {
		t.Errorf("version 1 with the hinted-lastmod flag: %v, want ErrBadEntry", err)
	}
	if _, err := UnmarshalEntry(append([]byte{3}, good[1:]...)); err == nil || !strings.Contains(err.Error(), "newer spider") {
		t.Errorf("version 3: %v, want a newer spider named", err)
	}
}

func FuzzUnmarshalEntry(f *testing.F) {
	e := fullEntry()
	b, _ := e.MarshalBinary()
	f.Add(b)
	b, _ = (&Entry{}).MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := UnmarshalEntry(data)
		if err != nil {
			return
		}
		b1, _ := e.MarshalBinary()
		e2, err := UnmarshalEntry(b1)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		b2, _ := e2.MarshalBinary()
		if !bytes.Equal(b1, b2) {
			t.Fatalf("not stable: %x vs %x", b1, b2)
		}
	})
}

// TestAdaptiveLearns checks the adaptive policy on single pages: one that never changes
// gets ever longer intervals (but not the bound at once), one that changes about daily
// settles near the interval its true rate calls for.
func TestAdaptiveLearns(t *testing.T) {
	p := policy(t, Policy{Mode: ModeAdaptive, Max: 365 * day})
	var e Entry
	at := t0
	prev := time.Duration(0)
	for i := range 12 {
		p.Observe(&e, Observation{At: at, Outcome: Fetched, Fingerprint: 1}, "", "")
		if e.Interval < prev || e.Interval >= p.Max {
			t.Fatalf("revisit %d of an unchanged page: interval %s after %s", i, e.Interval, prev)
		}
		prev = e.Interval
		at = e.Next
	}
	if prev < 4*day {
		t.Errorf("after 12 unchanged revisits the interval is only %s", prev)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const rate = 1.0 / 86400
	changes := poisson(r, rate, 400*86400)
	e, at = Entry{}, t0
	var ivs []time.Duration
	for at.Sub(t0) < 300*day {
		s := at.Sub(t0).Seconds()
		v := sort.SearchFloat64s(changes, s)
		p.Observe(&e, Observation{At: at, Outcome: Fetched, Fingerprint: uint64(v) + 1}, "", "")
		ivs = append(ivs, e.Interval)
		at = e.Next
	}
	want := OptimalInterval(rate, p.Target, p.Min, p.Max)
	late := ivs[len(ivs)/2:]
	sum := time.Duration(0)
	for _, iv := range late {
		sum += iv
	}
	if mean := sum / time.Duration(len(late)); mean < want/2 || mean > want*2 {
		t.Errorf("a daily page settles at %s on average, its true rate calls for %s", mean, want)
	}
}

// BenchmarkObserve is the cost of one revisit's bookkeeping with a full history (the
// estimator and the interval search included).
func BenchmarkObserve(b *testing.B) {
	p := &Policy{Mode: ModeAdaptive}
	if err := p.Validate(); err != nil {
		b.Fatal(err)
	}
	var e Entry
	at := t0
	for i := range MaxObservations + 1 {
		p.Observe(&e, Observation{At: at, Outcome: Fetched, Fingerprint: uint64(i / 2)}, "", "")
		at = e.Next
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Observe(&e, Observation{At: at, Outcome: Fetched, Fingerprint: uint64(i / 2)}, "", "")
		at = e.Next
	}
}

// TestHintRules: a sitemap lastmod moves a fetch forward once per new lastmod, bounded
// by the lower bound after the last fetch, and never for a URL that is not scheduled,
// failed last, or under ModeOff.
func TestHintRules(t *testing.T) {
	p := policy(t, Policy{Mode: ModeAdaptive, Min: time.Hour})
	fetched := func() Entry {
		var e Entry
		p.Observe(&e, Observation{At: t0, Outcome: Fetched, Fingerprint: 1}, "", "")
		return e
	}
	lm := t0.Add(30 * time.Minute)
	for _, tc := range []struct {
		name    string
		entry   func() Entry
		lastmod time.Time
		now     time.Time
		moved   bool
		next    time.Time
	}{
		{"after our fetch, within the lower bound", fetched, lm, t0.Add(40 * time.Minute), true, t0.Add(time.Hour)},
		{"after our fetch, past the lower bound", fetched, lm, t0.Add(2 * time.Hour), true, t0.Add(2 * time.Hour)},
		{"equal to our fetch", fetched, t0, t0.Add(2 * time.Hour), false, time.Time{}},
		{"in the future", fetched, t0.Add(3 * time.Hour), t0.Add(2 * time.Hour), false, time.Time{}},
		{"heard already", func() Entry { e := fetched(); e.HintLastMod = lm; return e }, lm, t0.Add(2 * time.Hour), false, time.Time{}},
		{"newer than heard", func() Entry { e := fetched(); e.HintLastMod = lm; return e }, lm.Add(time.Second), t0.Add(2 * time.Hour), true, t0.Add(2 * time.Hour)},
		{"not scheduled (revisit off, final)", func() Entry { e := fetched(); e.Next = time.Time{}; return e }, lm, t0.Add(2 * time.Hour), false, time.Time{}},
		{"failed last", func() Entry { e := fetched(); e.Failures = 1; return e }, lm, t0.Add(2 * time.Hour), false, time.Time{}},
		{"never fetched", func() Entry { return Entry{Next: t0} }, lm, t0.Add(2 * time.Hour), false, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.entry()
			before := e.Next
			moved := p.Hint(&e, tc.lastmod, 0, tc.now, "", "")
			if moved != tc.moved {
				t.Fatalf("moved %v, want %v", moved, tc.moved)
			}
			if !moved {
				if !e.Next.Equal(before) {
					t.Errorf("next changed to %s without a move", e.Next)
				}
				return
			}
			if !e.Next.Equal(tc.next) || !e.HintPending || !e.HintLastMod.Equal(tc.lastmod) {
				t.Errorf("next %s pending %v lastmod %s; want %s true %s", e.Next, e.HintPending, e.HintLastMod, tc.next, tc.lastmod)
			}
			// The same lastmod again is no news.
			if p.Hint(&e, tc.lastmod, 0, tc.now.Add(time.Hour), "", "") {
				t.Error("the same lastmod moved the fetch twice")
			}
		})
	}
	off := policy(t, Policy{Mode: ModeOff})
	e := fetched()
	e.Next = t0.Add(day)
	if off.Hint(&e, lm, 0, t0.Add(2*time.Hour), "", "") {
		t.Error("ModeOff: a hint moved the fetch")
	}
	// The hinted lastmod survives the encoding.
	e = fetched()
	p.Hint(&e, lm, 0, t0.Add(2*time.Hour), "", "")
	b, _ := e.MarshalBinary()
	got, err := UnmarshalEntry(b)
	if err != nil || !got.HintLastMod.Equal(lm) {
		t.Fatalf("hint lastmod round trip: %v %v", got.HintLastMod, err)
	}
}
