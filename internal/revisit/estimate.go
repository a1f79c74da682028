package revisit

import (
	"math"
	"time"
)

// MaxObservations is how many revisits a History keeps (the newest).
const MaxObservations = 32

// Observed is one revisit: the time since the previous fetch (to the second, at most
// about 68 years) and whether a change was seen.
type Observed struct {
	Seconds uint32
	Changed bool
}

// History summarises a page's change history: totals since its first fetch and the
// newest MaxObservations revisits, oldest first.
type History struct {
	Revisits uint32 // revisits since the first fetch
	Changes  uint32 // revisits that saw a change
	Recent   []Observed
}

// Add records a revisit after since with or without a change.
func (h *History) Add(since time.Duration, changed bool) {
	s := max(since.Round(time.Second)/time.Second, 1)
	if s > math.MaxUint32 {
		s = math.MaxUint32
	}
	h.Revisits++
	if changed {
		h.Changes++
	}
	if len(h.Recent) == MaxObservations {
		copy(h.Recent, h.Recent[1:])
		h.Recent = h.Recent[:MaxObservations-1]
	}
	h.Recent = append(h.Recent, Observed{Seconds: uint32(s), Changed: changed})
}

// Len is the number of kept revisits.
func (h *History) Len() int { return len(h.Recent) }

// EstimateRate returns the estimated change rate (changes per second) from the kept
// revisits, by Cho and Garcia-Molina's estimators for incomplete change histories ("we
// know whether the page changed between two visits, not how often"; "Estimating
// frequency of change", ACM TOIT 3(3), 2003):
//
//   - when the revisits saw both changes and no changes, the maximum-likelihood estimate
//     for irregular visit intervals (their section 5): the λ solving
//     Σ_changed tᵢ / (e^{λ·tᵢ} − 1) = Σ_unchanged tⱼ, found by bisection;
//   - otherwise (all changed, or none), their bias-reduced estimator for regular visits,
//     λ = −ln((n − X + 0.5) / (n + 0.5)) / Ī, with n revisits, X of them changed and Ī
//     the mean interval: 0 when nothing changed, ln(2n + 1)/Ī (finite) when everything
//     did — the naive X/T would call a page that changes every minute, visited daily,
//     a daily page, and −ln((n − X)/n) is infinite.
//
// It returns 0 for an empty history.
func EstimateRate(h *History) float64 {
	n := len(h.Recent)
	if n == 0 {
		return 0
	}
	var x int
	var sumC, sumU, total float64
	for _, o := range h.Recent {
		t := float64(o.Seconds)
		total += t
		if o.Changed {
			x++
			sumC += t
		} else {
			sumU += t
		}
	}
	mean := total / float64(n)
	if x == 0 || x == n {
		return -math.Log((float64(n-x)+0.5)/(float64(n)+0.5)) / mean
	}
	// f(λ) = Σ_changed t/(e^{λt}−1) − Σ_unchanged t decreases from +∞ to −sumU.
	f := func(l float64) float64 {
		s := 0.0
		for _, o := range h.Recent {
			if o.Changed {
				t := float64(o.Seconds)
				s += t / math.Expm1(l*t)
			}
		}
		return s - sumU
	}
	lo, hi := 1e-12, 1.0
	for f(hi) > 0 && hi < 1e6 {
		hi *= 10
	}
	for f(lo) < 0 && lo > 1e-300 {
		lo /= 10
	}
	for range 100 {
		mid := math.Sqrt(lo * hi)
		if f(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
		if hi/lo < 1+1e-6 {
			break
		}
	}
	return math.Sqrt(lo * hi)
}

// UnchangedRate is the rate EstimateRate's bias-reduced estimator gives a history of n
// revisits with half a change, ln((n + 0.5)/n)/Ī ≈ 1/(2T) for T the time observed: the
// rate the adaptive policy assumes for a page it never saw change, so that its interval
// grows with the time observed (about (3μ·2T)^{1/3}) instead of jumping to the bound.
func UnchangedRate(h *History) float64 {
	n := len(h.Recent)
	if n == 0 {
		return 0
	}
	total := 0.0
	for _, o := range h.Recent {
		total += float64(o.Seconds)
	}
	return math.Log((float64(n)+0.5)/float64(n)) / (total / float64(n))
}

// ExpectedAge is the time-average age of a copy of a page changing at rate λ (per
// second, a Poisson process) refreshed every interval: the time since the first change
// the copy missed, 0 while fresh (Cho and Garcia-Molina's age):
// I/2 − 1/λ + (1 − e^{−λI})/(λ²I).
func ExpectedAge(rate float64, interval time.Duration) time.Duration {
	i := interval.Seconds()
	if rate <= 0 || i <= 0 {
		return 0
	}
	x := rate * i
	var a float64
	if x < 1e-4 {
		a = x * i / 6 // the series λI²/6: the closed form loses every digit here
	} else {
		a = i/2 - 1/rate + -math.Expm1(-x)/(rate*x)
	}
	return time.Duration(a * float64(time.Second))
}

// ExpectedFreshness is the time-average probability that a copy refreshed every
// interval equals a page changing at rate λ: (1 − e^{−λI})/(λI).
func ExpectedFreshness(rate float64, interval time.Duration) float64 {
	x := rate * interval.Seconds()
	if x <= 1e-12 {
		return 1
	}
	return -math.Expm1(-x) / x
}

// OptimalInterval returns the interval in [lo, hi] that minimises a page's expected age
// plus the cost of refreshing it, ExpectedAge(λ, I) + μ/I with μ = target²/2: a page
// that changes all the time (age ≈ I/2) gets target, a slowly changing one (age ≈ λI²/6)
// about (3μ/λ)^{1/3}, longer the slower it changes. Cho and Garcia-Molina show that the
// same budget spent this way (the optimum of a sum of per-page ages under a fetch-rate
// budget, whose Lagrange multiplier is μ) beats both a uniform and a rate-proportional
// schedule ("Effective page refresh policies for Web crawlers", ACM TODS 2003); here μ is
// a setting, and a crawl's request budget chooses target.
func OptimalInterval(rate float64, target, lo, hi time.Duration) time.Duration {
	if rate <= 0 {
		return hi
	}
	mu := target.Seconds() * target.Seconds() / 2
	cost := func(i float64) float64 {
		return ExpectedAge(rate, time.Duration(i*float64(time.Second))).Seconds() + mu/i
	}
	a, b := math.Log(max(lo.Seconds(), 1)), math.Log(max(hi.Seconds(), 1))
	if b <= a {
		return lo
	}
	// Golden-section search on log I (the cost is unimodal in I).
	const g = 0.6180339887498949
	c, d := b-g*(b-a), a+g*(b-a)
	fc, fd := cost(math.Exp(c)), cost(math.Exp(d))
	for range 36 { // 0.618^36 ≈ 3e-8 of the log range
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - g*(b-a)
			fc = cost(math.Exp(c))
		} else {
			a, c, fc = c, d, fd
			d = a + g*(b-a)
			fd = cost(math.Exp(d))
		}
	}
	return clamp(time.Duration(math.Exp((a+b)/2)*float64(time.Second)).Round(time.Second), lo, hi)
}
