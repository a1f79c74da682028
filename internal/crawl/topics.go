package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/exthash"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/topics"
)

// topicRun is the multi-topic scheduling of a crawl with Config.Topics: the
// PQ-MCSA scheduler (the frontier's Selector), its task records in an
// extendible hash table under DATA/topics/tcb, and the hub pages being
// revisited.
type topicRun struct {
	cfg   *topics.Config
	sched *topics.Scheduler
	gate  *topicGate // sched as the frontier's Selector, with AdmitTopics' test
	tcb   *exthash.Table
	data  string
	log   *slog.Logger

	mu        sync.Mutex
	recrawls  map[string]bool // hub URLs queued or in flight for a revisit
	revisited int64
}

// loadTopics reads cfg.Topics and adds the topics' seeds to cfg.Seeds.
func loadTopics(cfg *Config) (*topics.Config, error) {
	tc, err := topics.Load(cfg.Topics)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, s := range cfg.Seeds {
		have[s] = true
	}
	for _, t := range tc.Topics {
		for _, s := range t.Seeds {
			if !have[s] {
				cfg.Seeds = append(cfg.Seeds, s)
				have[s] = true
			}
		}
	}
	return tc, nil
}

// newTopicRun builds the scheduler (URLs normalised by f) and restores the
// task records a previous run saved.
func newTopicRun(cfg Config, tc *topics.Config, f *Fetcher, logger *slog.Logger) (*topicRun, error) {
	sched, err := topics.New(tc, topics.Options{Normalize: f.normalizeString})
	if err != nil {
		return nil, err
	}
	tcb, err := exthash.Open(filepath.Join(store.DataDir(cfg.Data).Topics(), "tcb"), exthash.Options{})
	if err != nil {
		return nil, fmt.Errorf("cannot open topic task records: %w", err)
	}
	n, err := sched.Load(tcb)
	if err != nil {
		tcb.Close()
		return nil, err
	}
	if n > 0 {
		logger.Info("resuming topic task records", "tasks", n)
	}
	return &topicRun{cfg: tc, sched: sched, gate: &topicGate{Selector: sched}, tcb: tcb, data: cfg.Data, log: logger, recrawls: map[string]bool{}}, nil
}

// topicGate is the topic scheduler as the frontier's Selector and
// frontier.Admitter: every ready host is admitted unless AdmitTopics set a
// test.
type topicGate struct {
	frontier.Selector
	admit atomic.Pointer[func(frontier.Candidate) bool]
}

func (g *topicGate) Admit(c frontier.Candidate) bool {
	f := g.admit.Load()
	return f == nil || (*f)(c)
}

// AdmitTopics makes the topic scheduler choose only among the ready URLs
// admit accepts (frontier.Admitter): a master–worker coordinator leases no
// URL whose crawl node has no room. When admit accepts none, Next waits
// (no spinning) until WakeTopics, a result, a push or the next host due.
// admit is called with the frontier's lock held: it must be quick and
// must not call the scheduler. Without topics it does nothing; nil admits
// everything again.
func (s *Scheduler) AdmitTopics(admit func(frontier.Candidate) bool) {
	if s.topics == nil {
		return
	}
	if admit == nil {
		s.topics.gate.admit.Store(nil)
	} else {
		s.topics.gate.admit.Store(&admit)
	}
	s.fr.Wake()
}

// WakeTopics makes a waiting Next ask AdmitTopics' test again: its answer
// changed (a crawl node's window got room, the nodes changed).
func (s *Scheduler) WakeTopics() { s.fr.Wake() }

// normalizeString is s in the crawl's canonical form.
func (f *Fetcher) normalizeString(s string) (string, error) {
	u, err := f.norm.Parse(s)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// revisits reports whether a topic revisits its hubs (Recrawl > 0).
func (tr *topicRun) revisits() bool {
	for _, t := range tr.cfg.Topics {
		if t.Recrawl > 0 {
			return true
		}
	}
	return false
}

// tag sets the Topic of each request from its URL.
func (tr *topicRun) tag(reqs []frontier.Request) {
	for i := range reqs {
		reqs[i].Topic = tr.sched.Classify(reqs[i].URL)
	}
}

// isRecrawl reports whether r is a hub revisit (not a pending URL of the
// State: those carry the Seq the State gave them).
func (tr *topicRun) isRecrawl(r frontier.Request) bool {
	if r.Seq != 0 {
		return false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.recrawls[r.URL]
}

func (tr *topicRun) endRecrawl(url string) {
	tr.mu.Lock()
	delete(tr.recrawls, url)
	tr.mu.Unlock()
}

// save writes the task records and the status file. The status is taken
// before the records are, so it never counts more than they hold: pages
// finished while the records are written (an fsync) are in the records but
// not in this status, and a coordinator killed after it and restarted from
// the records shows at least the figures of the last status it wrote (the
// fault suite's TestKillTopicsCoordinator checks that).
func (tr *topicRun) save(now time.Time) error {
	st := tr.sched.Status(now)
	err := tr.sched.Save(tr.tcb)
	return errors.Join(err, topics.WriteStatus(tr.data, st))
}

func (tr *topicRun) close() error {
	err := tr.save(time.Now())
	return errors.Join(err, tr.tcb.Close())
}

// topicDaemon runs the scheduler's daemon every tick until ctx ends: slice
// adjustment, hub revisits due (queued through the frontier, so politeness
// holds), task records and status saved.
func (s *Scheduler) topicDaemon(ctx context.Context, f *Fetcher) error {
	return s.RunTopicDaemon(ctx, f, nil)
}

// RunTopicDaemon runs the topic scheduler's daemon every tick of the topics
// file until ctx ends (then it returns nil): each tick it first calls each
// (if not nil; an error ends the daemon), then adjusts the slices (Tick),
// queues the hub revisits due at the head of their hosts' queues (f builds
// their requests: closed or not, only its normaliser is used), and saves
// the task records (DATA/topics/tcb) and the status file. A master–worker
// coordinator runs it beside its dispatch, with each applying priority
// overrides and publishing the status. Without topics it returns at once.
func (s *Scheduler) RunTopicDaemon(ctx context.Context, f *Fetcher, each func(ctx context.Context, now time.Time) error) error {
	tr := s.topics
	if tr == nil {
		return nil
	}
	t := time.NewTicker(time.Duration(tr.cfg.Tick))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if each != nil {
				if err := each(ctx, now); err != nil {
					return err
				}
			}
			tr.sched.Tick(now)
			var reqs []frontier.Request
			for _, rc := range tr.sched.DueRecrawls(now) {
				u, err := f.norm.Parse(rc.URL)
				if err != nil {
					continue
				}
				r := f.request(u, 0, 0)
				r.Topic = rc.Topic
				tr.mu.Lock()
				if !tr.recrawls[r.URL] {
					tr.recrawls[r.URL] = true
					reqs = append(reqs, r)
				}
				tr.mu.Unlock()
			}
			if len(reqs) > 0 {
				if err := s.fr.PushUrgent(reqs); err != nil {
					return fmt.Errorf("cannot queue hub revisits: %w", err)
				}
			}
			if err := tr.save(now); err != nil {
				return err
			}
		}
	}
}

// LoadTopics reads the topics file cfg.Topics and adds the topics' seeds
// to cfg.Seeds (each once), as the single-node engine does; a master–worker
// coordinator calls it before it builds its seed requests.
func LoadTopics(cfg *Config) (*topics.Config, error) { return loadTopics(cfg) }

// NewTopicScheduler is NewScheduler with the multi-topic scheduling of tc
// (as LoadTopics returned it): the PQ-MCSA scheduler (or the FIFO
// baseline, the file's mode) selects among the frontier's ready hosts,
// requests are tagged with their topic, and the task records are restored
// from cfg.Data/topics/tcb (an extendible hash table), so a scheduler
// started again on the same directory resumes every topic's slices and
// counters. f normalises the configured URLs (closed or not). Run the
// daemon with RunTopicDaemon; Close saves the records.
func NewTopicScheduler(cfg Config, tc *topics.Config, st State, f *Fetcher, logger *slog.Logger, reg prometheus.Registerer) (*Scheduler, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tr, err := newTopicRun(cfg, tc, f, logger)
	if err != nil {
		return nil, err
	}
	s, err := newScheduler(cfg, st, logger, reg, tr)
	if err != nil {
		tr.close()
		return nil, err
	}
	return s, nil
}

// Topics returns the crawl's topic scheduler (priorities, status); nil
// when the crawl runs without topics.
func (s *Scheduler) Topics() *topics.Scheduler {
	if s.topics == nil {
		return nil
	}
	return s.topics.sched
}

// TopicsRecrawl reports whether a topic revisits its hubs: such a crawl
// does not end when its frontier drains (hub revisits come due).
func (s *Scheduler) TopicsRecrawl() bool { return s.topics != nil && s.topics.revisits() }

// TopicScorer returns a topic scheduler of tc used only to score pages
// (topics.Scheduler.Score) on a master–worker crawl node; f normalises the
// configured URLs.
func TopicScorer(tc *topics.Config, f *Fetcher) (*topics.Scheduler, error) {
	return topics.New(tc, topics.Options{Normalize: f.normalizeString})
}

// unfiler is a State whose ContentFiler keeps a page's filing until its
// Complete (state.Store): a recrawl, which completes nothing, drops it.
type unfiler interface{ Unfile(url string) }

// finishRecrawl applies a hub revisit: the links found that are new are
// recorded and queued (the hub itself stays completed).
func (s *Scheduler) finishRecrawl(ctx context.Context, lease *frontier.Lease, v Visit) error {
	tr := s.topics
	tr.endRecrawl(lease.Request.URL)
	if u, ok := s.st.(unfiler); ok && v.Filed {
		u.Unfile(lease.Request.URL) // no Complete follows to make the filing durable
	}
	tr.tag(v.Discovered)
	news, err := s.st.Discover(ctx, v.Discovered)
	if err != nil {
		s.done(lease, frontier.DoneInfo{})
		return fmt.Errorf("cannot record links of revisited %s: %w", lease.Request.URL, err)
	}
	// What a revisit finds is what the revisit is for (new pages of a
	// time-critical topic): it goes ahead of its hosts' queues.
	if err := s.fr.PushUrgent(news); err != nil {
		s.done(lease, frontier.DoneInfo{})
		return fmt.Errorf("cannot queue discovered URLs: %w", err)
	}
	s.done(lease, frontier.DoneInfo{Delay: v.Delay})
	tr.mu.Lock()
	tr.revisited++
	tr.mu.Unlock()
	s.m.discovered.Add(float64(len(news)))
	return nil
}

// TopicStatus returns the topic scheduler's status; false when the crawl
// runs without topics.
func (s *Scheduler) TopicStatus() (topics.Status, bool) {
	if s.topics == nil {
		return topics.Status{}, false
	}
	return s.topics.sched.Status(time.Now()), true
}
