package masterworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/slots"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/rstate"
)

// Shards is the number of parts the master's crawl state is split into on
// Redis, by host: each part is an rstate store with a hash tag of its own
// (ShardTag), so on a Redis Cluster the state's keys and memory spread
// over the masters instead of filling one. 12 parts land evenly on
// clusters of 1, 2, 3, 4, 6 or 12 masters with the default, evenly split
// slot ranges.
//
// A host's URLs all live in one part (so a page's duplicate on the same
// host is found, as in a p2p crawl's bucket). Which part a host gets is
// decided when its first URL is discovered: the part with the fewest state
// calls that accepted URLs in this master run (each leaves a reply key for
// rstate.ReplyTTL: the bulk of a busy part's keys; then: the
// one with the fewest hosts; the other new hosts of the same call count as
// bringing the average calls of a host so far), and kept
// in the directory {spider:C}:mw:hosts (host → part), which the master
// reads back when it starts again. A hash of the host would need no
// directory, but with dozens of hosts its luck decides the spread (one
// master of 3 held 45% of a crawl of 40 hosts in the first measurement).
const Shards = 12

// layoutVersion is written to {spider:C}:mw:layout by the first master of
// a crawl. A crawl without it, whose state sits in the single store of
// earlier versions (spider:C:{mw}:*), is refused (OpenState).
const layoutVersion = "2 shards=12"

// ShardTag returns the hash tag of state part i of n: "mw-<i>-<k>" with the
// smallest k ≥ 0 whose Redis Cluster hash slot lies in the i-th of n equal
// slot ranges. The tags name no crawl (the key's "spider:<crawl>:" prefix
// does), so part i of every crawl shares a slot; what matters is that the
// parts of one crawl lie in n evenly spaced slot ranges, hence on
// different masters of a cluster whose masters hold equal ranges.
func ShardTag(i, n int) string { return slots.SpreadTag("mw-", i, n) }

var shardTags = cluster.SpreadTags("mw-", Shards) // ShardTag(i, Shards)

// hostOf is the host name of a URL ("" for one that does not parse).
func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// robotsShard is the part whose tag a shared robots.txt answer takes: a
// hash of the host (partition.Bucket), so that workers need no directory.
func robotsShard(robotsURL string) int { return partition.Bucket(hostOf(robotsURL), Shards) }

// StateOptions are the settings of the master's state (see rstate.Options).
type StateOptions struct {
	SeenMode     string // crawlstate.SeenExact or SeenBloom
	ExpectedURLs uint64 // for the whole crawl; each part is sized for its share
	FPRate       float64
	Relink       bool // rstate.Options.Relink (crawl.Config.DepthOverlaps)
	MaxDepth     int
	Logger       *slog.Logger
}

// ErrOldLayout is wrapped by OpenState's error for a crawl whose keys an
// earlier version wrote (all in one hash slot).
var ErrOldLayout = errors.New("crawl uses the old single-slot key layout")

// OpenState opens the master's crawl state on rdb: Shards rstate stores,
// one per hash tag (ShardTag), with the host's part deciding where a URL
// lives. Redis outages are waited out (cluster.Retry) with each call's
// reply kept (rstate.Store.OneCall), as RetryState does. It refuses, with
// an error wrapping ErrOldLayout, a crawl started by an earlier version
// (its state in spider:<crawl>:{mw}:*): running on it would ignore every
// URL it knows.
func OpenState(ctx context.Context, rdb redis.UniversalClient, crawlName string, opt StateOptions) (crawl.State, error) {
	if _, err := cluster.NewKeys(crawlName); err != nil { // before any key is written
		return nil, err
	}
	if err := checkLayout(ctx, rdb, crawlName); err != nil {
		return nil, err
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	s := &shards{rdb: rdb, crawl: crawlName, dirKey: newKeys(crawlName).hosts(), relink: opt.Relink, maxDepth: opt.MaxDepth,
		dir: map[string]int{}, calls: make([]int64, Shards), hosts: make([]int, Shards)}
	all, err := rdb.HGetAll(ctx, s.dirKey).Result()
	if err != nil {
		return nil, fmt.Errorf("cannot read the crawl's host directory %s: %w", s.dirKey, err)
	}
	for h, v := range all {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= Shards {
			return nil, fmt.Errorf("cannot resume the crawl: its host directory %s gives host %q the part %q, not 0 to %d; the key was changed by hand: spider drop the crawl and start it again", s.dirKey, h, v, Shards-1)
		}
		s.dir[h] = n
		s.hosts[n]++
	}
	expected := opt.ExpectedURLs
	if expected == 0 {
		expected = rstate.DefaultExpectedURLs
	}
	per := max(expected/Shards, 10_000)
	// The parts are opened at once: each open is a few round trips and,
	// in Bloom mode, a filter of a few MB that Redis allocates; one after
	// another they were a third of a second of the master's start-up on a
	// loaded machine (issue 23), before any task could go out.
	s.parts = make([]*rstate.Store, len(shardTags))
	var g errgroup.Group
	for i, tag := range shardTags {
		g.Go(func() (err error) {
			s.parts[i], err = rstate.Open(ctx, rdb, rstate.Options{
				Crawl: crawlName, Bucket: tag, SeenMode: opt.SeenMode, ExpectedURLs: per, FPRate: opt.FPRate,
				Logger: opt.Logger, Relink: opt.Relink, MaxDepth: opt.MaxDepth,
				DupTags: shardTags, // duplicates across the parts' hosts too
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkLayout refuses a crawl of the old layout and records the new one.
func checkLayout(ctx context.Context, rdb redis.UniversalClient, crawlName string) error {
	k := newKeys(crawlName)
	old := rstate.KeyPrefix(crawlName, "mw") + "meta"
	n, err := rdb.Exists(ctx, old).Result()
	if err != nil {
		return fmt.Errorf("cannot reach Redis to open the crawl's state (is redis-server running and the URL right?): %w", err)
	}
	if n > 0 {
		return fmt.Errorf("cannot resume crawl %q: %w (its state is in %s*, written by an earlier spider); finish it with that version, or remove it with spider drop --redis URL --crawl %s and start it again",
			crawlName, ErrOldLayout, rstate.KeyPrefix(crawlName, "mw"), crawlName)
	}
	if err := rdb.SetNX(ctx, k.layout(), layoutVersion, 0).Err(); err != nil {
		return fmt.Errorf("cannot record the crawl's key layout: %w", err)
	}
	v, err := rdb.Get(ctx, k.layout()).Result()
	if err != nil {
		return fmt.Errorf("cannot read the crawl's key layout: %w", err)
	}
	if v != layoutVersion {
		return fmt.Errorf("cannot resume crawl %q: its key layout is %q, this spider writes %q; use the spider that started it, or spider drop it and start again", crawlName, v, layoutVersion)
	}
	return nil
}

// shards is the master's crawl.State over the parts. Links of other parts
// are discovered before the URL's own part completes it (as a p2p node
// does with other buckets), so a master that dies between the two has
// lost nothing: the URL is still pending and fetched again, its links
// found again as seen.
type shards struct {
	parts    []*rstate.Store
	rdb      redis.UniversalClient
	crawl    string
	dirKey   string
	relink   bool
	maxDepth int

	mu    sync.Mutex
	dir   map[string]int // host → part
	calls []int64        // state calls that accepted URLs, per part, in this run

	hosts []int // hosts each part holds
}

var _ crawl.State = (*shards)(nil)

// partOf returns the part of a URL whose host is in the directory.
func (s *shards) partOf(rawURL string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.dir[hostOf(rawURL)]
	return n, ok
}

// part returns the store of a URL, giving its host a part if it has none
// (a URL is discovered before it is completed, so this is rare).
func (s *shards) part(ctx context.Context, rawURL string) (*rstate.Store, error) {
	if n, ok := s.partOf(rawURL); ok {
		return s.parts[n], nil
	}
	m, err := s.split(ctx, []frontier.Request{{URL: rawURL}})
	if err != nil {
		return nil, err
	}
	for n := range m {
		return s.parts[n], nil
	}
	return s.parts[0], nil
}

// split groups requests by part, giving new hosts a part first: the one
// that accepted the fewest URLs in this run, then the one with the fewest
// hosts. The choice is recorded with HSETNX before any URL of the host is
// accepted, and a host some other call recorded first keeps that part.
func (s *shards) split(ctx context.Context, reqs []frontier.Request) (map[int][]frontier.Request, error) {
	out := map[int][]frontier.Request{}
	var fresh []string
	s.mu.Lock()
	seen := map[string]bool{}
	for _, r := range reqs {
		h := hostOf(r.URL)
		if _, ok := s.dir[h]; !ok && !seen[h] {
			seen[h] = true
			fresh = append(fresh, h)
		}
	}
	s.mu.Unlock()
	if len(fresh) > 0 {
		if err := s.assign(ctx, fresh); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	for _, r := range reqs {
		n := s.dir[hostOf(r.URL)]
		out[n] = append(out[n], r)
	}
	s.mu.Unlock()
	return out, nil
}

func (s *shards) assign(ctx context.Context, hosts []string) error {
	s.mu.Lock()
	// A new host is expected to bring as many calls as the hosts so far
	// did on average (at least 1): counted at once, so that the hosts of
	// one batch spread instead of all going to the part that is lowest
	// now.
	var calls, nhosts int64
	for n := range Shards {
		calls += s.calls[n]
		nhosts += int64(s.hosts[n])
	}
	avg := max(calls/max(nhosts, 1), 1)
	load := slices.Clone(s.calls)
	want := make([]int, len(hosts))
	for i := range hosts {
		best := 0
		for n := 1; n < Shards; n++ {
			if load[n] < load[best] || load[n] == load[best] && s.hosts[n] < s.hosts[best] {
				best = n
			}
		}
		want[i] = best
		load[best] += avg
		s.hosts[best]++ // counted now (undone below once the directory answers)
	}
	s.mu.Unlock()
	var got []*redis.StringCmd
	err := cluster.Retry(ctx, func() error {
		pipe := s.rdb.Pipeline()
		got = got[:0]
		for i, h := range hosts {
			pipe.HSetNX(ctx, s.dirKey, h, want[i])
			got = append(got, pipe.HGet(ctx, s.dirKey, h))
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range hosts {
		s.hosts[want[i]]--
	}
	if err != nil {
		return fmt.Errorf("cannot record the hosts' parts in %s: %w", s.dirKey, err)
	}
	for i, h := range hosts {
		n, err := strconv.Atoi(got[i].Val())
		if err != nil || n < 0 || n >= Shards {
			return fmt.Errorf("the crawl's host directory %s gives host %q the part %q, not 0 to %d", s.dirKey, h, got[i].Val(), Shards-1)
		}
		if _, ok := s.dir[h]; !ok {
			s.dir[h] = n
			s.hosts[n]++
		}
	}
	return nil
}

// accepting counts a state call that accepted something: each leaves a
// reply key for rstate.ReplyTTL, the bulk of a busy part's keys.
func accepting(n int) int64 {
	if n > 0 {
		return 1
	}
	return 0
}

func (s *shards) within(r frontier.Request) bool { return s.maxDepth < 0 || r.Depth <= s.maxDepth }

// Relinks reports whether the parts keep links for relinking (so that
// crawl.Scheduler passes crawl.Visit.Beyond to Complete).
func (s *shards) Relinks() bool { return s.relink }

// Discover implements crawl.State: each part accepts its requests; the
// kept links that lowered URLs relink are routed the same way, round after
// round (each round lowers some URL's depth, so the rounds end).
func (s *shards) Discover(ctx context.Context, reqs []frontier.Request) ([]frontier.Request, error) {
	var news []frontier.Request
	for len(reqs) > 0 {
		var relink []frontier.Request
		byPart, err := s.split(ctx, reqs)
		if err != nil {
			return nil, err
		}
		for n, rs := range byPart {
			st := s.parts[n]
			var got, more []frontier.Request
			cctx := st.OneCall(ctx) // a retry after a lost reply gets the first run's reply
			err := cluster.Retry(ctx, func() (err error) { got, more, err = st.DiscoverRelink(cctx, rs); return err })
			if err != nil {
				return nil, err
			}
			news = append(news, got...)
			relink = append(relink, more...)
			s.mu.Lock()
			s.calls[n] += accepting(len(got) + len(more))
			s.mu.Unlock()
		}
		reqs = relink
	}
	return news, nil
}

// Complete implements crawl.State: the links of other parts first, then
// r's part in one script (r no longer pending, its outcome counted, its
// same-part links accepted), then whatever that relinks.
func (s *shards) Complete(ctx context.Context, r frontier.Request, o crawlstate.Outcome, discovered []frontier.Request) (crawlstate.Result, error) {
	var within []frontier.Request
	for _, d := range discovered {
		if s.within(d) { // else crawl.Visit.Beyond: kept only
			within = append(within, d)
		}
	}
	byPart, err := s.split(ctx, append(within, r))
	if err != nil {
		return crawlstate.Result{}, err
	}
	n, _ := s.partOf(r.URL)
	same := byPart[n][:len(byPart[n])-1] // r is last of its part
	var other []frontier.Request
	for m, rs := range byPart {
		if m != n {
			other = append(other, rs...)
		}
	}
	news, err := s.Discover(ctx, other)
	if err != nil {
		return crawlstate.Result{}, err
	}
	st := s.parts[n]
	var (
		res    crawlstate.Result
		relink []frontier.Request
	)
	cctx := st.OneCall(ctx)
	err = cluster.Retry(ctx, func() (err error) {
		res, relink, err = st.CompleteRelink(cctx, r, o, discovered, same)
		return err
	})
	if err != nil {
		return crawlstate.Result{}, err
	}
	s.mu.Lock()
	s.calls[n] += accepting(len(res.New) + len(relink))
	s.mu.Unlock()
	res.New = append(res.New, news...)
	if len(relink) > 0 {
		more, err := s.Discover(ctx, relink)
		if err != nil {
			return crawlstate.Result{}, err
		}
		res.New = append(res.New, more...)
	}
	return res, nil
}

// UpdatePending implements crawl.State.
func (s *shards) UpdatePending(ctx context.Context, r frontier.Request) error {
	st, err := s.part(ctx, r.URL)
	if err != nil {
		return err
	}
	return cluster.Retry(ctx, func() error { return st.UpdatePending(ctx, r) })
}

// Current implements crawl.State.
func (s *shards) Current(ctx context.Context, r frontier.Request) (cur bool, err error) {
	st, err := s.part(ctx, r.URL)
	if err != nil {
		return false, err
	}
	err = cluster.Retry(ctx, func() (err error) { cur, err = st.Current(ctx, r); return err })
	return cur, err
}

// LoadPending implements crawl.State: part by part, each in Seq order.
func (s *shards) LoadPending(ctx context.Context, fn func(frontier.Request) error) error {
	for _, st := range s.parts {
		if err := st.LoadPending(ctx, fn); err != nil {
			return err
		}
	}
	return nil
}

// Counters implements crawl.State: the sum over the parts.
func (s *shards) Counters(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, st := range s.parts {
		var c map[string]int64
		if err := cluster.Retry(ctx, func() (err error) { c, err = st.Counters(ctx); return err }); err != nil {
			return nil, err
		}
		for k, v := range c {
			out[k] += v
		}
	}
	return out, nil
}

// Sync implements crawl.State: Redis persistence is the server's.
func (s *shards) Sync() error { return nil }

// Close implements crawl.State.
func (s *shards) Close() error {
	var first error
	for _, st := range s.parts {
		if st == nil {
			continue // not opened (OpenState failed)
		}
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
