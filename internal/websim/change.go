package websim

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Pages that change (Config.ChangeDay > 0).
//
// Every page of a host's hierarchy (index, sections, articles) gets a mean change
// interval drawn from ChangeClasses, the distribution Cho and Garcia-Molina measured by
// visiting about 720,000 pages of 270 popular sites every day for four months in 1999
// ("The Evolution of the Web and Implications for an Incremental Crawler", VLDB 2000,
// Figure 2(a), all domains; shares rounded): 23% of pages had an average change
// interval of at most a day (they changed at every daily visit), 15% between a day and a
// week, 16% between a week and a month, 16% between a month and four months, and 30%
// more than four months (most of them never changed during the experiment). The paper
// also found the .com pages the most changing (over 40% of them changed every day) and
// half of .edu and .gov pages unchanged for four months; websim does not model domains.
// Within a class the mean interval is drawn log-uniformly between the class's bounds
// (ChangeClass); "at most a day" starts at 6 hours, "more than four months" ends at ten
// years. A page's changes are a Poisson process at its rate (exponential gaps, the model
// of both papers), drawn from (Config.Seed, host, page): the same web always changes at
// the same instants.
//
// Time is compressed: one day of the model lasts Config.ChangeDay of real time, counted
// from the web's start (New). Version 0 is the page as a static web serves it; version v
// (after the v-th change) keeps every link and rewrites the text of some paragraphs and
// an "Updated" line, so the link graph (and Truth) never changes while the content
// fingerprint does. ChangeHistory, VersionAt and ChangesBetween give the exact history.
// Truth describes the web at its start: a crawl that runs after articles disappeared
// finds them 404 or 410 where Truth.Final says 200 (ChangeHistory.Gone tells which).
//
// HTTP: a changing page carries ETag "vK-HASH" (strong, one per version) and
// Last-Modified (the version's change time, to the second as HTTP dates are: two changes
// within one second of real time are one date, so the ETag is the exact validator).
// If-None-Match (which wins over If-Modified-Since, RFC 9110 §13.2.2) and
// If-Modified-Since are answered 304 with no body when the version is current. A share
// of articles (Config.DisappearShare) disappear at their k-th change (k in 1–3): from then
// on they answer 404 or 410 (one of the two per page).
//
// Bad servers (Config.ValidatorFaults, on Config.FaultShare of the hosts, each such host
// one fault): FaultETagEveryAnswer sends a new ETag on every answer of an unchanged page
// (and so never matches If-None-Match); FaultFutureLastModified sends a Last-Modified a
// year in the future and no ETag (and answers If-Modified-Since with 200);
// FaultUnconditional304 answers 304 to every request of a URL after its first that has no
// conditional header.

// ChangeClass is one bucket of the change-interval distribution: Share of the pages have
// a mean change interval between MinDays and MaxDays (log-uniform within). MaxDays 0
// means the pages never change.
type ChangeClass struct {
	Name             string
	Share            float64
	MinDays, MaxDays float64
}

// ChangeClasses is the distribution of mean change intervals (see the package comment of
// change.go): Cho and Garcia-Molina, VLDB 2000, Figure 2(a). The shares sum to 1.
var ChangeClasses = []ChangeClass{
	{Name: "<=1 day", Share: 0.23, MinDays: 0.25, MaxDays: 1},
	{Name: "1 day-1 week", Share: 0.15, MinDays: 1, MaxDays: 7},
	{Name: "1 week-1 month", Share: 0.16, MinDays: 7, MaxDays: 30},
	{Name: "1-4 months", Share: 0.16, MinDays: 30, MaxDays: 120},
	{Name: ">4 months", Share: 0.30, MinDays: 120, MaxDays: 3650},
}

// ValidatorFault is a bad server's way with validators (Config.ValidatorFaults).
type ValidatorFault uint8

// The validator faults.
const (
	// FaultETagEveryAnswer: a new ETag on every answer, the content unchanged.
	FaultETagEveryAnswer ValidatorFault = 1 << iota
	// FaultFutureLastModified: Last-Modified a year after the answer, no ETag.
	FaultFutureLastModified
	// FaultUnconditional304: 304 to a request without conditional headers, after the
	// URL's first request.
	FaultUnconditional304

	numFaults = 3
)

// AllValidatorFaults is every fault.
const AllValidatorFaults = FaultETagEveryAnswer | FaultFutureLastModified | FaultUnconditional304

var faultNames = [numFaults]string{"etag-every-answer", "future-last-modified", "unconditional-304"}

// String names the faults of f, comma-separated.
func (f ValidatorFault) String() string {
	var parts []string
	for i := range numFaults {
		if f&(1<<i) != 0 {
			parts = append(parts, faultNames[i])
		}
	}
	return strings.Join(parts, ",")
}

// ParseValidatorFaults reads a comma-separated list of fault names ("all", "" or "none").
func ParseValidatorFaults(s string) (ValidatorFault, error) {
	var f ValidatorFault
	for part := range strings.SplitSeq(s, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		switch name {
		case "", "none":
			continue
		case "all":
			f |= AllValidatorFaults
			continue
		}
		i := indexOf(faultNames[:], name)
		if i < 0 {
			return 0, fmt.Errorf("cannot parse validator fault %q: %w (known: all, %s)", name, ErrBadConfig, AllValidatorFaults)
		}
		f |= 1 << i
	}
	return f, nil
}

// keyChange is the random-stream purpose of page changes (see rng.go: never renumber).
const keyChange uint64 = 6

// maxChangeDays bounds the history a page is asked about (about 27 years).
const maxChangeDays = 10_000

// pageChange is the change model of one page.
type pageChange struct {
	key      uint64
	class    int
	interval float64 // mean days between changes; 0: never changes
	origin   float64 // version 0's last change, in days (≤ 0)
	goneAt   int     // the version from which the page answers goneCode; 0: never
	goneCode int
}

// changeOf returns the change model of page id of host hi.
func (w *Web) changeOf(hi, id int) pageChange {
	k := hash3(uint64(w.cfg.Seed)^keyChange<<56, uint64(hi), uint64(id))
	r := newRNG(k)
	pc := pageChange{key: k}
	u := r.float()
	pc.class = len(ChangeClasses) - 1
	for i, c := range ChangeClasses {
		if u < c.Share {
			pc.class = i
			break
		}
		u -= c.Share
	}
	c := ChangeClasses[pc.class]
	v := r.float()
	if c.MaxDays > 0 {
		pc.interval = c.MinDays * math.Pow(c.MaxDays/c.MinDays, v)
	}
	pc.origin = -math.Min(r.float()*math.Max(pc.interval, 30), 3650)
	if id > w.shape.sections && pc.interval > 0 && r.float() < w.cfg.DisappearShare {
		pc.goneAt = r.between(1, 3)
		pc.goneCode = 404
		if r.chance(0.5) {
			pc.goneCode = 410
		}
	}
	return pc
}

// changeTimes appends to dst the change instants (days since the start) up to untilDays.
func (pc *pageChange) changeTimes(dst []float64, untilDays float64) []float64 {
	if pc.interval <= 0 {
		return dst
	}
	untilDays = math.Min(untilDays, maxChangeDays)
	r := newRNG(hash2(pc.key, 99))
	t := 0.0
	for {
		t += -math.Log(1-r.float()) * pc.interval
		if t > untilDays {
			return dst
		}
		dst = append(dst, t)
	}
}

// versionAt returns the version at day t and the day it began (origin for version 0).
func (pc *pageChange) versionAt(t float64) (int, float64) {
	if pc.interval <= 0 || t <= 0 {
		return 0, pc.origin
	}
	t = math.Min(t, maxChangeDays)
	r := newRNG(hash2(pc.key, 99))
	v, at, next := 0, pc.origin, 0.0
	for {
		next += -math.Log(1-r.float()) * pc.interval
		if next > t {
			return v, at
		}
		v, at = v+1, next
	}
}

// days converts a real instant to days of the model since the web's start.
func (w *Web) days(t time.Time) float64 {
	return float64(t.Sub(w.start)) / float64(w.cfg.ChangeDay)
}

// instant converts days of the model to a real instant.
func (w *Web) instant(days float64) time.Time {
	return w.start.Add(time.Duration(days * float64(w.cfg.ChangeDay)))
}

// ChangeHistory is the truth about one page's changes.
type ChangeHistory struct {
	URL string
	// Class indexes ChangeClasses.
	Class int
	// MeanDays is the mean interval between changes in days (0: never changes); the
	// rate is 1/MeanDays changes a day.
	MeanDays float64
	// OriginDays is when version 0 was last changed, in days before the start (≤ 0).
	OriginDays float64
	// Changes are the change instants in days since the start, ascending: version v
	// begins at Changes[v-1].
	Changes []float64
	// GoneVersion, when positive, is the version from which the page answers GoneStatus
	// (404 or 410) instead of a page.
	GoneVersion int
	GoneStatus  int
}

// VersionAt returns the version at day t (days since the start).
func (h *ChangeHistory) VersionAt(t float64) int {
	n := 0
	for n < len(h.Changes) && h.Changes[n] <= t {
		n++
	}
	return n
}

// Gone reports whether the page answers GoneStatus at day t.
func (h *ChangeHistory) Gone(t float64) bool {
	return h.GoneVersion > 0 && h.VersionAt(t) >= h.GoneVersion
}

// pageOf finds the host and page id of a page URL of this web.
func (w *Web) pageOf(rawURL string) (hi, id int, ok bool) {
	rest, found := strings.CutPrefix(rawURL, "http://")
	if !found {
		return 0, 0, false
	}
	hostport, path, _ := strings.Cut(rest, "/")
	hi, ok = w.lookup(hostport)
	if !ok {
		return 0, 0, false
	}
	path, _, _ = strings.Cut("/"+path, "?")
	rt, ok := parsePath(path, w.shape)
	if !ok {
		return 0, 0, false
	}
	id = w.shape.pageID(rt)
	return hi, id, id >= 0
}

// ChangeHistory returns the change truth of a page URL (index, section or article of a
// host) up to day untilDays since the start. It works whether or not ChangeDay is set
// (the model is the same; a web without ChangeDay serves version 0 forever). ok is false
// for a URL that is not such a page.
func (w *Web) ChangeHistory(rawURL string, untilDays float64) (h ChangeHistory, ok bool) {
	hi, id, ok := w.pageOf(rawURL)
	if !ok {
		return h, false
	}
	return w.changeHistory(hi, id, untilDays), true
}

func (w *Web) changeHistory(hi, id int, untilDays float64) ChangeHistory {
	pc := w.changeOf(hi, id)
	return ChangeHistory{
		URL:   w.hosts[hi].origin + string(appendPath(nil, w.shape.pageRoute(id))),
		Class: pc.class, MeanDays: pc.interval, OriginDays: pc.origin,
		Changes:     pc.changeTimes(nil, untilDays),
		GoneVersion: pc.goneAt, GoneStatus: pc.goneCode,
	}
}

// PageURLs returns the URLs of the pages of host hi (index, sections, articles in page
// id order): the pages that change.
func (w *Web) PageURLs(hi int) []string {
	out := make([]string, w.shape.pages)
	for id := range out {
		out[id] = w.hosts[hi].origin + string(appendPath(nil, w.shape.pageRoute(id)))
	}
	return out
}

// Start returns when the web was built: day 0 of its changes and of PublishEvery.
func (w *Web) Start() time.Time { return w.start }

// VersionAt returns the version a page URL serves at real instant t (0 before the start
// or without ChangeDay). ok is false for a URL that is not a page.
func (w *Web) VersionAt(rawURL string, t time.Time) (version int, ok bool) {
	hi, id, ok := w.pageOf(rawURL)
	if !ok {
		return 0, false
	}
	if w.cfg.ChangeDay <= 0 {
		return 0, true
	}
	pc := w.changeOf(hi, id)
	v, _ := pc.versionAt(w.days(t))
	return v, true
}

// ChangesBetween returns the real instants in (from, to] at which a page URL changed
// (none without ChangeDay). ok is false for a URL that is not a page.
func (w *Web) ChangesBetween(rawURL string, from, to time.Time) (changes []time.Time, ok bool) {
	hi, id, ok := w.pageOf(rawURL)
	if !ok || w.cfg.ChangeDay <= 0 {
		return nil, ok
	}
	pc := w.changeOf(hi, id)
	lo := w.days(from)
	for _, d := range pc.changeTimes(nil, w.days(to)) {
		if d > lo {
			changes = append(changes, w.instant(d))
		}
	}
	return changes, true
}

// HostFault returns the validator fault of a host name (0 for a well-behaved host, or
// without ChangeDay).
func (w *Web) HostFault(hostname string) ValidatorFault {
	hi, ok := w.lookup(hostname)
	if !ok {
		return 0
	}
	return w.hostFault(hi)
}

func (w *Web) hostFault(hi int) ValidatorFault {
	f := w.cfg.ValidatorFaults & AllValidatorFaults
	if f == 0 || w.cfg.ChangeDay <= 0 {
		return 0
	}
	k := hash3(uint64(w.cfg.Seed)^keyChange<<56, uint64(hi), 1<<40)
	if unit(k) >= w.cfg.FaultShare {
		return 0
	}
	var menu []ValidatorFault
	for i := range numFaults {
		if f&(1<<i) != 0 {
			menu = append(menu, 1<<i)
		}
	}
	return menu[mix(k)%uint64(len(menu))]
}

// pageVersion is what the handler needs of a changing page's current version.
type pageVersion struct {
	on      bool
	version int
	key     uint64
	gone    int // status of a page that disappeared; 0 when it is there
}

// etag returns the strong ETag of a version.
func (pv pageVersion) etag() string {
	return `"v` + strconv.Itoa(pv.version) + "-" + strconv.FormatUint(hash2(pv.key, uint64(pv.version))&0xffffffffff, 16) + `"`
}

// versioned answers the validators and conditional requests of a changing page. It
// returns done when the answer (a 304) is written; otherwise the page's version, whose
// headers are set.
func (w *Web) versioned(rw http.ResponseWriter, r *http.Request, hi int, rt route, urlKey string) (pv pageVersion, done bool) {
	id := w.shape.pageID(rt)
	if id < 0 {
		return pv, false
	}
	pc := w.changeOf(hi, id)
	now := time.Now()
	v, at := pc.versionAt(w.days(now))
	pv = pageVersion{on: true, version: v, key: pc.key}
	if pc.goneAt > 0 && v >= pc.goneAt {
		pv.gone = pc.goneCode
		return pv, false
	}
	fault := w.hostFault(hi)
	h := rw.Header()
	etag := pv.etag()
	lastMod := w.instant(at).UTC().Truncate(time.Second)
	conditional := r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != ""
	switch fault {
	case FaultETagEveryAnswer:
		etag = `"a` + strconv.FormatInt(now.UnixNano(), 36) + "-" + strconv.FormatUint(w.answers.Add(1), 36) + `"`
	case FaultFutureLastModified:
		etag, lastMod = "", now.UTC().Add(365*24*time.Hour).Truncate(time.Second)
	case FaultUnconditional304:
		if !conditional && w.busy.hit("304 "+urlKey) > 0 {
			setValidators(h, etag, lastMod)
			rw.WriteHeader(http.StatusNotModified)
			return pv, true
		}
	}
	setValidators(h, etag, lastMod)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return pv, false
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if etag != "" && etagMatch(inm, etag) {
			rw.WriteHeader(http.StatusNotModified)
			return pv, true
		}
		return pv, false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		if t, err := http.ParseTime(ims); err == nil && !lastMod.After(t) {
			rw.WriteHeader(http.StatusNotModified)
			return pv, true
		}
	}
	return pv, false
}

func setValidators(h http.Header, etag string, lastMod time.Time) {
	if etag != "" {
		h.Set("ETag", etag)
	}
	h.Set("Last-Modified", lastMod.Format(http.TimeFormat))
}

// etagMatch implements the weak comparison of If-None-Match (RFC 9110 §13.1.2).
func etagMatch(header, etag string) bool {
	if strings.TrimSpace(header) == "*" {
		return true
	}
	want := strings.TrimPrefix(etag, "W/")
	for part := range strings.SplitSeq(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(part), "W/") == want {
			return true
		}
	}
	return false
}

// applyVersion rewrites a built page for version pv.version > 0: an "Updated" line and
// new words in about a third of its paragraphs (at least one); links are untouched.
func (w *Web) applyVersion(d *doc, pv pageVersion) {
	if pv.version <= 0 {
		return
	}
	vk := hash2(pv.key, uint64(pv.version))
	if d.dateLine.n == 0 {
		d.dateLine = d.add("Updated (version " + strconv.Itoa(pv.version) + ")")
	}
	changed := false
	for i := range d.paras {
		if mix(vk^uint64(i))%3 == 0 {
			d.paras[i].key = hash2(d.paras[i].key, vk)
			changed = true
		}
	}
	if !changed && len(d.paras) > 0 {
		d.paras[0].key = hash2(d.paras[0].key, vk)
	}
}

// ChangeSummary describes the change distribution: the expected share of pages whose
// change a daily visitor sees at every visit (P(change within a day) averaged), the share
// expected unchanged over 120 days (Cho and Garcia-Molina's four months), and, measured on
// this web's pages up to untilDays, the same shares counted from the truth.
type ChangeSummary struct {
	Pages                 int
	ClassShares           []float64 // drawn share of pages per ChangeClasses entry
	ChangedWithinDay      float64   // mean P(≥1 change in a day) over the pages
	UnchangedFourMonths   float64   // share of pages with no change in days (0, 120]
	MeanChangesPerPageDay float64   // mean changes a page makes a day, over 120 days
	DisappearedFourMonths float64   // share of pages gone by day 120
}

// SummarizeChanges computes ChangeSummary over every page of the first maxHosts hosts.
func (w *Web) SummarizeChanges(maxHosts int) ChangeSummary {
	s := ChangeSummary{ClassShares: make([]float64, len(ChangeClasses))}
	changes := 0
	for hi := range min(maxHosts, len(w.hosts)) {
		for id := range w.shape.pages {
			h := w.changeHistory(hi, id, 120)
			s.Pages++
			s.ClassShares[h.Class]++
			if h.MeanDays > 0 {
				s.ChangedWithinDay += 1 - math.Exp(-1/h.MeanDays)
			}
			if len(h.Changes) == 0 {
				s.UnchangedFourMonths++
			}
			if h.Gone(120) {
				s.DisappearedFourMonths++
			}
			changes += len(h.Changes)
		}
	}
	if s.Pages > 0 {
		n := float64(s.Pages)
		for i := range s.ClassShares {
			s.ClassShares[i] /= n
		}
		s.ChangedWithinDay /= n
		s.UnchangedFourMonths /= n
		s.DisappearedFourMonths /= n
		s.MeanChangesPerPageDay = float64(changes) / n / 120
	}
	return s
}
