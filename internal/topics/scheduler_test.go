package topics

import (
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/exthash"
	"github.com/spider-crawler/spider/internal/frontier"
)

const testYAML = `
period: 10s
tick: 1s
base_slice: 100ms
topics:
  - name: news
    priority: 2
    seeds: [http://news.example/]
    terms: [election, vote]
    min_pages: 3
    recrawl: 5s
  - name: tax
    priority: 0
    patterns: ["http://(org,tax,"]
    terms: [tax, refund]
    min_pages: 3
  - name: food
    priority: 0
    patterns: ["http://(org,food,", "http://(org,tax,www,)/food/"]
    terms: [recipe]
    urls: [{url: "http://food.org/today.html", priority: 5}]
`

// fakeClock is a manual clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestScheduler(t *testing.T, yml string) (*Scheduler, *fakeClock) {
	t.Helper()
	cfg, err := Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := New(cfg, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func cand(topic string) frontier.Candidate {
	return frontier.Candidate{URL: "http://" + topic + ".example/p", Key: topic, Topic: topic}
}

// queuedAll reports 100 queued URLs for every topic, none for URLs of no
// topic.
func queuedAll(topic string) int {
	if topic == "" {
		return 0
	}
	return 100
}

func task(s *Scheduler, name string) Task {
	for _, t := range s.Tasks() {
		if t.Name == name {
			return t
		}
	}
	panic("no task " + name)
}

// step offers cands, charges the chosen URL cost, and returns its topic.
func step(s *Scheduler, clk *fakeClock, cost time.Duration, queued func(string) int, cands ...frontier.Candidate) string {
	i := s.Select(clk.Now(), cands, queued)
	c := cands[i]
	clk.Advance(cost)
	s.Finished(frontier.Request{URL: c.URL, Topic: c.Topic}, cost, "")
	return c.Topic
}

func TestPreemptionSavesContext(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	// Only tax is ready: it runs.
	if got := step(s, clk, 10*time.Millisecond, queuedAll, cand("tax")); got != "tax" {
		t.Fatalf("ran %s, want tax", got)
	}
	before := task(s, "tax").SliceRemain
	// news (priority 2) becomes ready: it pre-empts tax.
	at := clk.Now()
	if got := step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"), cand("news")); got != "news" {
		t.Fatalf("ran %s, want the higher-priority news", got)
	}
	tx := task(s, "tax")
	if tx.Preemptions != 1 || !tx.LastPreempted.Equal(at) || tx.PreemptedBy != "news" {
		t.Fatalf("tax: %d pre-emptions, last %v by %q; want 1 at %v by news", tx.Preemptions, tx.LastPreempted, tx.PreemptedBy, at)
	}
	if tx.Context.SliceRemain != before || tx.Context.LastURL != cand("tax").URL {
		t.Fatalf("tax context = %+v, want SR %v and its last URL", tx.Context, before)
	}
	if tx.State != StateReady {
		t.Fatalf("pre-empted tax is %s, want ready", tx.State)
	}
	// news keeps the crawl while it has slice left and a ready URL.
	for range 5 {
		if got := step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"), cand("news")); got != "news" {
			t.Fatalf("ran %s while news had slice left", got)
		}
	}
	// Equal priorities do not pre-empt each other.
	s2, clk2 := newTestScheduler(t, testYAML)
	step(s2, clk2, time.Millisecond, queuedAll, cand("tax"))
	step(s2, clk2, time.Millisecond, queuedAll, cand("food"), cand("tax"))
	if n := task(s2, "tax").Preemptions; n != 0 {
		t.Fatalf("equal priority pre-empted tax %d times", n)
	}
}

// TestRoundRobinSlices: two equal-priority topics take turns, each for its
// slice (ST = 100ms at priority 0, 10ms per fetch = 10 fetches).
func TestRoundRobinSlices(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	queued := func(topic string) int {
		if topic == "food" || topic == "tax" {
			return 100
		}
		return 0
	}
	var runs []string
	for range 60 {
		runs = append(runs, step(s, clk, 10*time.Millisecond, queued, cand("food"), cand("tax")))
	}
	// Collapse into runs of the same topic.
	var turns []string
	var lens []int
	for _, r := range runs {
		if len(turns) > 0 && turns[len(turns)-1] == r {
			lens[len(lens)-1]++
			continue
		}
		turns = append(turns, r)
		lens = append(lens, 1)
	}
	if len(turns) < 5 {
		t.Fatalf("turns %v: want alternation", turns)
	}
	for i := 1; i < len(turns); i++ {
		if turns[i] == turns[i-1] {
			t.Fatalf("turns %v do not alternate", turns)
		}
	}
	for i, n := range lens[:len(lens)-1] {
		if n != 10 {
			t.Fatalf("turn %d (%s) lasted %d fetches, want the 10 of a 100ms slice: %v", i, turns[i], n, lens)
		}
	}
}

// TestNoStarvation: news (priority 2, slice 300ms) always has a ready URL;
// the priority-0 topics still get their slices every epoch, in order after
// news.
func TestNoStarvation(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	count := map[string]int{}
	var order []string
	for range 1000 {
		got := step(s, clk, 10*time.Millisecond, queuedAll, cand("news"), cand("tax"), cand("food"))
		count[got]++
		if len(order) == 0 || order[len(order)-1] != got {
			order = append(order, got)
		}
	}
	// Per epoch: news 300ms, tax 100ms, food 100ms (+ nothing for other).
	if count["tax"] < 150 || count["food"] < 150 || count["news"] < 500 {
		t.Fatalf("fetches per topic %v: want about 600/200/200", count)
	}
	if order[0] != "news" {
		t.Fatalf("first turn went to %s, want the highest priority", order[0])
	}
	if s.Status(clk.Now()).Epoch < 10 {
		t.Fatalf("only %d epochs in 10s of 500ms epochs", s.Status(clk.Now()).Epoch)
	}
}

// TestWorkConservingWhenHigherIsPolite: while news has slice left but its
// hosts wait for politeness (no news candidate), the others run, and news
// has not lost its place.
func TestWorkConservingWhenHigherIsPolite(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	for i := range 100 {
		cands := []frontier.Candidate{cand("tax")}
		if i%10 == 0 {
			cands = append(cands, cand("news"))
		}
		got := step(s, clk, 10*time.Millisecond, queuedAll, cands...)
		if i%10 == 0 && got != "news" {
			t.Fatalf("fetch %d: news was ready but %s ran", i, got)
		}
		if i%10 != 0 && got != "tax" {
			t.Fatalf("fetch %d: %s ran with only tax ready", i, got)
		}
	}
}

// TestSliceAdaptation: the daemon shrinks the slice of a topic that
// reached its minimum and grows one that did not.
func TestSliceAdaptation(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	step(s, clk, time.Millisecond, queuedAll, cand("tax"), cand("food"))
	for range 3 {
		s.Finished(frontier.Request{URL: "http://tax.org/x", Topic: "tax"}, time.Millisecond, "tax refund tax refund")
	}
	s.Finished(frontier.Request{URL: "http://food.org/x", Topic: "food"}, time.Millisecond, "nothing about cooking here")
	clk.Advance(time.Second)
	s.Tick(clk.Now())
	if tx := task(s, "tax"); tx.SliceTotal != 75*time.Millisecond || tx.Shrinks != 1 {
		t.Fatalf("tax reached its minimum: ST %v (%d shrinks), want 75ms", tx.SliceTotal, tx.Shrinks)
	}
	s.Tick(clk.Now()) // at most one cut per period
	if tx := task(s, "tax"); tx.SliceTotal != 75*time.Millisecond {
		t.Fatalf("second tick in the period cut again: %v", tx.SliceTotal)
	}
	clk.Advance(10 * time.Second)
	s.Tick(clk.Now())
	if fd := task(s, "food"); fd.SliceTotal != 125*time.Millisecond || fd.Grows != 1 {
		t.Fatalf("food missed its minimum: ST %v (%d grows), want 125ms", fd.SliceTotal, fd.Grows)
	}
	if tx := task(s, "tax"); tx.PeriodRelevant != 0 || tx.Relevant != 3 || tx.Pages != 4 {
		t.Fatalf("tax counters after the period: %+v", tx)
	}
	// Shrinking stops at MinSlice (100ms/8).
	for range 20 {
		for range 3 {
			s.Finished(frontier.Request{URL: "http://tax.org/x", Topic: "tax"}, 0, "tax")
		}
		s.Tick(clk.Now())
		clk.Advance(10 * time.Second)
		s.Tick(clk.Now())
	}
	if tx := task(s, "tax"); tx.SliceTotal != 12500*time.Microsecond {
		t.Fatalf("tax ST after many shrinks = %v, want the 12.5ms floor", tx.SliceTotal)
	}
}

func TestClassifyAndURLTasks(t *testing.T) {
	s, _ := newTestScheduler(t, testYAML)
	for _, tc := range []struct{ url, want string }{
		{"http://news.example/a/b", "news"},      // seed host
		{"http://news.example:8080/a", "news"},   // any port
		{"http://www.tax.org/refund", "tax"},     // pattern
		{"http://www.tax.org/food/soup", "food"}, // longer pattern wins
		{"http://food.org/today.html", "food"},   // URL task's theme
		{"http://elsewhere.example/", ""},
		{"::bad", ""},
	} {
		if got := s.Classify(tc.url); got != tc.want {
			t.Errorf("Classify(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
	// The URL task (priority 5) beats news (priority 2).
	clk := &fakeClock{t: time.Now()}
	ut := frontier.Candidate{URL: "http://food.org/today.html", Topic: "food"}
	i := s.Select(clk.Now(), []frontier.Candidate{cand("news"), ut}, queuedAll)
	if i != 1 {
		t.Fatalf("chose %d, want the priority-5 URL task", i)
	}
	s.Finished(frontier.Request{URL: ut.URL, Topic: "food"}, time.Millisecond, "recipe")
	if fd := task(s, "food"); fd.Pages != 1 || fd.Relevant != 1 {
		t.Fatalf("URL task's page not counted for its topic: %+v", fd)
	}
	if u := task(s, ut.URL); u.Granularity != GranularityURL || len(u.SURTs) != 1 || !strings.HasPrefix(u.SURTs[0], "http://(org,food,)") {
		t.Fatalf("URL task = %+v", u)
	}
}

func TestRecrawlSchedule(t *testing.T) {
	s, clk := newTestScheduler(t, testYAML)
	if r := s.DueRecrawls(clk.Now()); len(r) != 0 {
		t.Fatalf("recrawl due at start: %v", r)
	}
	clk.Advance(4 * time.Second)
	if r := s.DueRecrawls(clk.Now()); len(r) != 0 {
		t.Fatalf("recrawl due before its 5s: %v", r)
	}
	clk.Advance(time.Second)
	r := s.DueRecrawls(clk.Now())
	if len(r) != 1 || r[0].URL != "http://news.example/" || r[0].Topic != "news" {
		t.Fatalf("due recrawls = %v, want the news hub", r)
	}
	if r := s.DueRecrawls(clk.Now()); len(r) != 0 {
		t.Fatalf("recrawl due twice: %v", r)
	}
}

// TestSaveLoadResumes: the task records survive a restart through the
// extendible hash table.
func TestSaveLoadResumes(t *testing.T) {
	dir := t.TempDir()
	s, clk := newTestScheduler(t, testYAML)
	step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"))
	step(s, clk, 10*time.Millisecond, queuedAll, cand("tax"), cand("news"))
	s.Finished(frontier.Request{URL: "http://tax.org/", Topic: "tax"}, 5*time.Millisecond, "tax tax")
	tb, err := exthash.Open(dir, exthash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(tb); err != nil {
		t.Fatal(err)
	}
	tb.Close()
	want := task(s, "tax")

	s2, _ := newTestScheduler(t, testYAML)
	tb, err = exthash.Open(dir, exthash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	n, err := s2.Load(tb)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(s2.Tasks()) {
		t.Fatalf("restored %d tasks, want %d", n, len(s2.Tasks()))
	}
	got := task(s2, "tax")
	if got.SliceRemain != want.SliceRemain || got.Pages != want.Pages || got.Relevant != want.Relevant ||
		got.Preemptions != 1 || !got.LastPreempted.Equal(want.LastPreempted) || got.Context.LastURL != want.Context.LastURL {
		t.Fatalf("restored tax = %+v\nwant %+v", got, want)
	}
	if s2.Status(time.Now()).Preemptions != 1 {
		t.Fatal("scheduler pre-emption count not restored")
	}
}
