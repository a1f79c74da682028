package topics

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/urls"
)

// Granularity is a task's G field (SPEC §4): a whole topic, or one URL.
type Granularity uint8

// Task granularities.
const (
	GranularityTopic Granularity = iota
	GranularityURL
)

func (g Granularity) String() string {
	if g == GranularityURL {
		return "url"
	}
	return "topic"
}

// State is a task's SI field.
type State uint8

// Task states. A task is ready while it has slice left, running while it
// holds the crawl (it got the last lease), expired when its slice is spent
// in this epoch, and idle when none of its URLs is queued.
const (
	StateReady State = iota
	StateRunning
	StateExpired
	StateIdle
)

func (s State) String() string {
	return [...]string{"ready", "running", "expired", "idle"}[s]
}

// OtherTopic names the background task of URLs that match no topic.
const OtherTopic = "(other)"

// Context is a task's saved context (CP): what it was doing when it was
// pre-empted, restored when it runs again.
type Context struct {
	SliceRemain time.Duration `json:"slice_remain"`
	LastURL     string        `json:"last_url,omitempty"`
	SavedAt     time.Time     `json:"saved_at"`
}

// Task is one priority-queue entry with its task control block
// (QUEUE_MCB of SPEC §4): IDtask, IDtheme, P, G, TN, UMAP (URL tasks), and
// ST, SR, SI, CP, TD, plus the daemon's counters.
type Task struct {
	ID          uint32        // IDtask
	Theme       uint32        // IDtheme: the topic task this task belongs to
	Name        string        // topic name, or the URL of a URL task
	Description string        // TD of the paper's tuple (free text)
	Priority    int           // P
	Granularity Granularity   // G
	Queued      int           // TN: URLs queued in the frontier (last seen)
	SURTs       []string      // UMAP[ID]: the SURT form of a URL task's URL
	SliceTotal  time.Duration // ST
	SliceRemain time.Duration // SR
	State       State         // SI
	Context     Context       // CP
	Delay       time.Duration // TD: recrawl period of a time-critical topic

	topic       *Topic
	scorer      *Scorer
	hubs        []string
	minPages    int
	patterns    []string // SURT prefixes (topic tasks)
	levelSlice  time.Duration
	satisfied   bool // reached MinPages in this period
	nextRecrawl time.Time

	Pages          int64     // pages fetched (for a topic: its URL tasks' too)
	Relevant       int64     // of which relevant
	PeriodPages    int64     // in the current period
	PeriodRelevant int64     //
	Preemptions    int64     // times pre-empted by a higher priority
	LastPreempted  time.Time // zero if never
	PreemptedBy    string
	Recrawls       int64     // hub revisits scheduled
	Blocked        int64     // URLs robots.txt disallowed (no page; Refused)
	FirstPage      time.Time // first page fetched
	Shrinks, Grows int64     // daemon slice changes
}

// Options configure a Scheduler.
type Options struct {
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Normalize turns a configured URL into the crawl's canonical form
	// (what the frontier will carry). Default: the URL as written.
	Normalize func(string) (string, error)
}

// Scheduler is the PQ-MCSA multi-topic scheduler (SPEC §4). As the
// frontier's Selector it chooses, among the URLs politeness allows now,
// which one is crawled: higher priorities pre-empt lower ones, equal
// priorities share round-robin time slices, each task spends at most its
// slice per epoch (a new epoch starts when no task with slice left has URLs
// queued), and a daemon (Tick) shrinks the slices of topics that reached
// their minimum of relevant pages in the period and grows the others'. It
// is safe for concurrent use.
type Scheduler struct {
	mu     sync.Mutex
	cfg    *Config
	now    func() time.Time
	tasks  []*Task // by ID
	topics map[string]*Task
	byURL  map[string]*Task
	levels []*level // highest priority first
	other  *Task

	running     *Task
	epoch       int64
	periodStart time.Time
	switches    int64
	preemptions int64

	candTask []*Task // scratch: task of each candidate
}

type level struct {
	prio  int
	tasks []*Task
	cur   int // round-robin position
}

var _ frontier.Selector = (*Scheduler)(nil)

// New builds the scheduler of cfg (as returned by Load or Parse): one task
// per topic (IDs 1…n in file order), one per single URL (after the
// topics), and the background task OtherTopic (ID 0).
func New(cfg *Config, opts Options) (*Scheduler, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Normalize == nil {
		opts.Normalize = func(s string) (string, error) { return s, nil }
	}
	s := &Scheduler{cfg: cfg, now: opts.Now, topics: map[string]*Task{}, byURL: map[string]*Task{}}
	s.periodStart = s.now()
	add := func(t *Task) {
		t.ID = uint32(len(s.tasks))
		if t.Granularity == GranularityTopic {
			t.Theme = t.ID
		}
		t.levelSlice = cfg.LevelSlice(t.Priority)
		t.SliceTotal, t.SliceRemain = t.levelSlice, t.levelSlice
		t.State = StateIdle
		s.tasks = append(s.tasks, t)
	}
	s.other = &Task{Name: OtherTopic, Description: "URLs matching no topic", Priority: cfg.OtherPriority, scorer: NewScorer(nil)}
	add(s.other)
	s.topics[""] = s.other
	for i := range cfg.Topics {
		tp := &cfg.Topics[i]
		t := &Task{Name: tp.Name, Description: tp.Description, Priority: tp.Priority, topic: tp,
			scorer: NewScorer(tp.Terms), minPages: tp.MinPages, Delay: time.Duration(tp.Recrawl),
			patterns: topicPatterns(tp)}
		for _, h := range tp.Hubs {
			n, err := opts.Normalize(h)
			if err != nil {
				return nil, fmt.Errorf("cannot use hub %q of topic %s: %w", h, tp.Name, err)
			}
			t.hubs = append(t.hubs, n)
		}
		add(t)
		s.topics[tp.Name] = t
	}
	for i := range cfg.Topics {
		tp := &cfg.Topics[i]
		theme := s.topics[tp.Name]
		for _, ut := range tp.URLs {
			n, err := opts.Normalize(ut.URL)
			if err != nil {
				return nil, fmt.Errorf("cannot use url %q of topic %s: %w", ut.URL, tp.Name, err)
			}
			t := &Task{Name: n, Description: "single URL of " + tp.Name, Priority: ut.Priority,
				Granularity: GranularityURL, topic: tp, scorer: theme.scorer}
			if u, err := url.Parse(n); err == nil {
				t.SURTs = []string{urls.SURT(u)}
			}
			add(t)
			t.Theme = theme.ID
			s.byURL[n] = t
		}
	}
	byPrio := map[int]*level{}
	for _, t := range s.tasks {
		lv := byPrio[t.Priority]
		if lv == nil {
			lv = &level{prio: t.Priority}
			byPrio[t.Priority] = lv
			s.levels = append(s.levels, lv)
		}
		lv.tasks = append(lv.tasks, t)
	}
	sort.Slice(s.levels, func(i, j int) bool { return s.levels[i].prio > s.levels[j].prio })
	return s, nil
}

// taskOf maps a frontier URL to its task: a URL task by exact URL, else the
// topic named by its Topic tag, else the background task.
func (s *Scheduler) taskOf(rawURL, topic string) *Task {
	if t, ok := s.byURL[rawURL]; ok {
		return t
	}
	if t, ok := s.topics[topic]; ok {
		return t
	}
	return s.other
}

func (s *Scheduler) theme(t *Task) *Task { return s.tasks[t.Theme] }

// Select implements frontier.Selector (SPEC §4 algorithms 2 and 3):
//
//  1. Among tasks with slice left (SR > 0) and a candidate, the highest
//     priority wins; within a level, round robin from the level's current
//     task. If the winner outranks the running task, that task is
//     pre-empted: it goes back to ready with its context saved.
//  2. If no task with slice left has URLs queued at all, a new epoch
//     starts: every task's SR is refilled to ST (minus any overdraft), so
//     every topic with work gets its slice each epoch — none starves.
//  3. Otherwise (tasks with slice left exist but politeness holds their
//     hosts), the crawl does not idle: the expired task with the most slice
//     left (the least overdrawn) takes the worker, and is charged for it.
func (s *Scheduler) Select(now time.Time, cands []frontier.Candidate, queued func(string) int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshQueued(cands, queued)
	s.candTask = s.candTask[:0]
	for _, c := range cands {
		s.candTask = append(s.candTask, s.taskOf(c.URL, c.Topic))
	}
	if s.cfg.Mode == ModeFIFO {
		s.run(now, s.candTask[0], cands[0].URL)
		clear(s.candTask)
		return 0
	}
	i := s.pickActive()
	if i < 0 && !s.activeHasWork() {
		s.newEpoch()
		i = s.pickActive()
	}
	if i < 0 {
		i = s.pickOverdraft()
	}
	t := s.candTask[i]
	s.run(now, t, cands[i].URL)
	clear(s.candTask)
	return i
}

// refreshQueued updates TN and the idle state of every task.
func (s *Scheduler) refreshQueued(cands []frontier.Candidate, queued func(string) int) {
	for _, t := range s.tasks {
		if t.Granularity == GranularityURL {
			t.Queued = 0
			continue
		}
		name := t.Name
		if t == s.other {
			name = ""
		}
		t.Queued = queued(name)
	}
	for _, c := range cands {
		if t, ok := s.byURL[c.URL]; ok {
			t.Queued++
		}
	}
	for _, t := range s.tasks {
		switch {
		case t.Queued == 0 && t.State != StateRunning:
			t.State = StateIdle
		case t.State == StateIdle && t.SliceRemain > 0:
			t.State = StateReady
		case t.State == StateIdle:
			t.State = StateExpired
		}
	}
}

// pickActive returns the candidate of the best task with slice left, or -1.
func (s *Scheduler) pickActive() int {
	for _, lv := range s.levels {
		n := len(lv.tasks)
		for k := 0; k < n; k++ {
			t := lv.tasks[(lv.cur+k)%n]
			if t.SliceRemain <= 0 {
				continue
			}
			if i := s.candidateOf(t); i >= 0 {
				return i
			}
		}
	}
	return -1
}

func (s *Scheduler) candidateOf(t *Task) int {
	for i, ct := range s.candTask {
		if ct == t {
			return i
		}
	}
	return -1
}

// activeHasWork reports whether a task with slice left has URLs queued.
func (s *Scheduler) activeHasWork() bool {
	for _, t := range s.tasks {
		if t.SliceRemain > 0 && t.Queued > 0 {
			return true
		}
	}
	return false
}

// newEpoch refills every slice; an overdraft (negative SR, at most one ST)
// is carried into the new slice.
func (s *Scheduler) newEpoch() {
	s.epoch++
	for _, t := range s.tasks {
		debt := max(min(t.SliceRemain, 0), -t.SliceTotal)
		t.SliceRemain = max(t.SliceTotal+debt, 1)
		if t.State == StateExpired {
			t.State = StateReady
		}
	}
	for _, lv := range s.levels {
		lv.cur = 0
	}
}

// pickOverdraft returns the candidate of the expired task with the most
// slice left (ties: higher priority, then lower ID).
func (s *Scheduler) pickOverdraft() int {
	best := 0
	for i, t := range s.candTask {
		b := s.candTask[best]
		if t.SliceRemain > b.SliceRemain || t.SliceRemain == b.SliceRemain && (t.Priority > b.Priority || t.Priority == b.Priority && t.ID < b.ID) {
			best = i
		}
	}
	return best
}

// run makes t the running task, pre-empting a lower-priority one.
func (s *Scheduler) run(now time.Time, t *Task, u string) {
	r := s.running
	if r != nil && r != t {
		s.switches++
		if t.Priority > r.Priority && r.SliceRemain > 0 && r.Queued > 0 {
			r.Preemptions++
			s.preemptions++
			r.LastPreempted = now
			r.PreemptedBy = t.Name
			r.Context = Context{SliceRemain: r.SliceRemain, LastURL: r.Context.LastURL, SavedAt: now}
		}
		if r.State == StateRunning {
			r.State = StateReady
			if r.SliceRemain <= 0 {
				r.State = StateExpired
			}
		}
	}
	s.running = t
	t.State = StateRunning
	t.Context.LastURL = u
}

// Finished charges a fetch to its task: elapsed crawl time against the
// task's slice (an expired slice moves its level's round robin on), and the
// page's relevance (text scored against the topic's terms) to the topic's
// counters. Call it once per completed lease, recrawls included.
func (s *Scheduler) Finished(r frontier.Request, elapsed time.Duration, text string) {
	s.FinishedScore(r, elapsed, s.Score(r, text))
}

// FinishedScore is Finished with the page's relevance already scored
// (Score, on the crawl node that has the text).
func (s *Scheduler) FinishedScore(r frontier.Request, elapsed time.Duration, score float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.charge(r, elapsed)
	th := s.theme(t)
	now := s.now()
	relevant := score >= s.cfg.Relevance
	count := func(x *Task) {
		x.Pages++
		x.PeriodPages++
		if x.FirstPage.IsZero() {
			x.FirstPage = now
		}
		if relevant {
			x.Relevant++
			x.PeriodRelevant++
		}
	}
	count(t)
	if th != t {
		count(th)
	}
}

// charge takes elapsed crawl time from r's task's slice and returns the
// task; s.mu is held.
func (s *Scheduler) charge(r frontier.Request, elapsed time.Duration) *Task {
	t := s.taskOf(r.URL, r.Topic)
	t.SliceRemain -= elapsed
	if t.SliceRemain <= 0 {
		if t.State != StateIdle {
			t.State = StateExpired
		}
		for _, lv := range s.levels {
			if lv.prio == t.Priority && len(lv.tasks) > 0 && lv.tasks[lv.cur] == t {
				lv.cur = (lv.cur + 1) % len(lv.tasks)
			}
		}
	}
	return t
}

// Tick is the daemon's step (SPEC §4 "Demon thread"): a topic that reached
// its minimum of relevant pages in the current period gets its slice cut
// by one quantum (once per period, down to MinSlice), so that the others
// get more of the crawl; at the end of a period every topic that missed its
// minimum gets one quantum more (up to 4× its level's threshold), and the
// period counters restart.
func (s *Scheduler) Tick(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := time.Duration(s.cfg.Quantum)
	minSlice := time.Duration(s.cfg.MinSlice)
	for _, t := range s.tasks {
		if t.Granularity != GranularityTopic || t == s.other || t.satisfied {
			continue
		}
		if t.PeriodRelevant >= int64(t.minPages) {
			t.satisfied = true
			if t.SliceTotal > minSlice {
				t.SliceTotal = max(minSlice, t.SliceTotal-q)
				t.SliceRemain = min(t.SliceRemain, t.SliceTotal)
				t.Shrinks++
			}
		}
	}
	if now.Sub(s.periodStart) < time.Duration(s.cfg.Period) {
		return
	}
	for _, t := range s.tasks {
		if t.Granularity == GranularityTopic && t != s.other && !t.satisfied && t.Queued > 0 && t.SliceTotal < 4*t.levelSlice {
			t.SliceTotal = min(4*t.levelSlice, t.SliceTotal+q)
			t.Grows++
		}
		t.satisfied = false
		t.PeriodPages, t.PeriodRelevant = 0, 0
	}
	s.periodStart = now
}

// Recrawl is a hub page due for a revisit.
type Recrawl struct {
	Topic string
	URL   string
}

// DueRecrawls returns the hubs of time-critical topics whose recrawl time
// has come, and schedules their next revisit (now + the topic's Recrawl).
func (s *Scheduler) DueRecrawls(now time.Time) []Recrawl {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Recrawl
	for _, t := range s.tasks {
		if t.Delay <= 0 {
			continue
		}
		if t.nextRecrawl.IsZero() {
			t.nextRecrawl = now.Add(t.Delay)
			continue
		}
		if now.Before(t.nextRecrawl) {
			continue
		}
		t.nextRecrawl = now.Add(t.Delay)
		t.Recrawls++
		for _, h := range t.hubs {
			out = append(out, Recrawl{Topic: t.Name, URL: h})
		}
	}
	return out
}

// Classify returns the topic of rawURL: the topic whose pattern is the
// longest prefix of the URL's SURT form ("" when none matches). A topic
// without patterns matches its seeds' hosts.
func (s *Scheduler) Classify(rawURL string) string {
	if t, ok := s.byURL[rawURL]; ok {
		return s.tasks[t.Theme].Name
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	surt := urls.SURT(u)
	best, bestLen := "", -1
	for _, t := range s.tasks {
		for _, p := range t.patterns {
			if len(p) > bestLen && strings.HasPrefix(surt, p) {
				best, bestLen = t.Name, len(p)
			}
		}
	}
	return best
}

// topicPatterns returns a topic's normalised SURT prefixes, or its seeds'
// hosts when it has none.
func topicPatterns(tp *Topic) []string {
	var ps []string
	for _, p := range tp.Patterns {
		if n, err := NormalizePattern(p); err == nil {
			ps = append(ps, n)
		}
	}
	if len(tp.Patterns) == 0 {
		for _, seed := range tp.Seeds {
			if u, err := url.Parse(seed); err == nil {
				ps = append(ps, hostPattern(u))
			}
		}
	}
	return ps
}

// Tasks returns a copy of every task's state, by ID.
func (s *Scheduler) Tasks() []Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Task, len(s.tasks))
	for i, t := range s.tasks {
		out[i] = *t
		out[i].SURTs = append([]string(nil), t.SURTs...)
	}
	return out
}
