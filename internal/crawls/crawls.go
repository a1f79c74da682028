// Package crawls answers "which crawls are on this Redis" and "does crawl
// NAME exist" in one place for every topology, and removes a finished
// crawl's keys (`spider crawls`, `spider drop`, the unknown --crawl error).
//
// Each topology names its keys in its own package; this package knows
// their shapes (a crawl name is 1–128 characters from [A-Za-z0-9._-],
// cluster.NewKeys, so none of them can hold ':', braces or a glob
// character):
//
//	{spider:C}:mw:*        master–worker (§1): queues and bookkeeping
//	spider:C:{mw-I-K}:*    master–worker: state parts and robots.txt answers
//	{spider:C}:layered:*   layered crawl (§2): the crawl's coordination
//	spider:C:{ly-I-K}:*    layered crawl: task shards (layered.ShardTag)
//	{spider:C}:rank:*      PageRank map/reduce: its queue and state
//	spider:C:{rk-I-K}:*    PageRank map/reduce: graph parts, rank slices, results
//	{spider:C}:index:*     distributed index build: its queue and state
//	spider:C:{ix-I-K}:*    distributed index build: per-task keys
//	spider:C:{*            peer-to-peer (§3): membership {C.m}, buckets {bN}, dispatch {C.p2p}
//	spider:proto:C:*       the §0 protocol and its mixed hosts
//
// The §0 protocol also keeps membership lists (internal/cluster) under the
// crawl names "proto.C.centers" and "proto.C.NET.hosts"; their keys
// ("spider:proto.C.centers:{…") are counted and dropped with §0 crawl C.
// Since crawl and network names may hold '.', a hosts list goes to the
// longest §0 crawl name on the Redis that it starts with.
//
// A p2p crawl named "proto" has keys "spider:proto:{…", which no §0 crawl
// has (its next part is a crawl name, never a brace), so the patterns of
// two different crawls never match one key.
//
// The crawls are found by SCAN over every master (a Redis Cluster is
// scanned master by master): there is no separate registry to fall out of
// step with the keys, and crawls started by older versions are listed too.
// The price is one pass over the keyspace per listing.
package crawls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
)

// Kinds of keys, one per topology or job that writes them.
const (
	KindMasterWorker = "master-worker"
	KindLayered      = "layered"
	KindRank         = "rank"
	KindIndex        = "index"
	KindPeer         = "peer-to-peer"
	KindProtocol     = "protocol"
	// KindControl is the run control of `spider control` (cluster.Control:
	// spider:C:{C.m}:control and spider:C:{C.m}:ctl.*), written for every
	// topology; it never decides a crawl's topology.
	KindControl = "control"
	// KindReport is the crawl-wide report (cluster.ReadReports:
	// spider:C:{C.m}:report and spider:C:{C.m}:report.*), written by every
	// topology; like KindControl it never decides a crawl's topology.
	KindReport = "report"
)

// States of a crawl.
const (
	StateRunning = "running" // a live node: a fresh heartbeat
	StateDone    = "done"    // the topology marked it done
	StateStopped = "stopped" // known topology, not done, no live node
	StateUnknown = "unknown" // keys only of a kind without heartbeats spider reads (§0, rank, index)
)

// LiveWindow is how old a master–worker worker's heartbeat may be for the
// worker to count as live.
const LiveWindow = 30 * time.Second

// CheckName returns an error wrapping cluster.ErrBadName when name cannot
// name a crawl (so it could match another crawl's keys).
func CheckName(name string) error {
	_, err := cluster.NewKeys(name)
	return err
}

// Patterns returns the SCAN patterns of crawl name's keys, by kind. The
// name must pass CheckName. The control and report keys (KindControl,
// KindReport) have no pattern of their own: the peer-to-peer pattern
// matches them (PatternKind).
func Patterns(name string) map[string]string {
	return map[string]string{
		KindMasterWorker: "{spider:" + name + "}:mw:*",
		KindLayered:      "{spider:" + name + "}:layered:*",
		KindRank:         "{spider:" + name + "}:rank:*",
		KindIndex:        "{spider:" + name + "}:index:*",
		KindPeer:         "spider:" + name + ":{*",
		KindProtocol:     "spider:proto:" + name + ":*",
	}
}

// PatternKind is the kind whose pattern (Patterns) matches the keys of kind.
func PatternKind(kind string) string {
	if kind == KindControl || kind == KindReport {
		return KindPeer
	}
	return kind
}

// KeyPatternKind is the kind whose pattern (Patterns) matches key, a key
// that Parse gives kind: PatternKind(kind), except for the master–worker
// layered, rank and index keys under spider:C:{TAG} (their shard tags,
// slots.SpreadTag), which the peer-to-peer pattern matches.
func KeyPatternKind(key, kind string) string {
	if (kind == KindMasterWorker || kind == KindLayered || kind == KindRank || kind == KindIndex) && strings.HasPrefix(key, "spider:") {
		return KindPeer
	}
	return PatternKind(kind)
}

// Parse returns the crawl and kind of a key, ok false for a key of no crawl.
func Parse(key string) (crawl, kind string, ok bool) {
	if rest, found := strings.CutPrefix(key, "{spider:"); found {
		name, after, found := strings.Cut(rest, "}:")
		if !found || CheckName(name) != nil {
			return "", "", false
		}
		k, _, found := strings.Cut(after, ":")
		if !found { // "{spider:C}:mw" alone is no key of the crawl's
			return "", "", false
		}
		switch k {
		case "mw":
			return name, KindMasterWorker, true
		case "layered":
			return name, KindLayered, true
		case "rank":
			return name, KindRank, true
		case "index":
			return name, KindIndex, true
		}
		return "", "", false
	}
	rest, found := strings.CutPrefix(key, "spider:")
	if !found {
		return "", "", false
	}
	name, after, found := strings.Cut(rest, ":")
	if !found || CheckName(name) != nil {
		return "", "", false
	}
	if tail, found := strings.CutPrefix(after, "{"+name+".m}:"); found && (tail == "control" || strings.HasPrefix(tail, "ctl.")) {
		return name, KindControl, true
	}
	if tail, found := strings.CutPrefix(after, "{"+name+".m}:"); found && (tail == "report" || strings.HasPrefix(tail, "report.")) {
		return name, KindReport, true
	}
	if tag, found := strings.CutPrefix(after, "{"); found {
		if mwShardTag(tag) {
			return name, KindMasterWorker, true
		}
		if shardTag(tag, "ly-") {
			return name, KindLayered, true
		}
		if shardTag(tag, "rk-") {
			return name, KindRank, true
		}
		if shardTag(tag, "ix-") {
			return name, KindIndex, true
		}
		return name, KindPeer, true
	}
	if name == "proto" {
		pname, _, found := strings.Cut(after, ":")
		if found && CheckName(pname) == nil {
			return pname, KindProtocol, true
		}
	}
	return "", "", false
}

// mwShardTag reports whether the key's part after "spider:C:{" starts
// with a master–worker state tag, "mw-I-K}" (masterworker.ShardTag): digits
// only between the dashes, so no p2p tag ("bN", "C.m", "C.p2p") has the
// shape, whatever the crawl's name.
func mwShardTag(tail string) bool { return shardTag(tail, "mw-") }

// shardTag reports whether tail (a key's part after "spider:C:{") starts
// with the shard tag "PREFIXI-K}": the master–worker state's "mw-I-K"
// (masterworker.ShardTag), a layered crawl's task shards' "ly-I-K"
// (layered.ShardTag).
func shardTag(tail, prefix string) bool {
	tag, _, found := strings.Cut(tail, "}")
	rest, ok := strings.CutPrefix(tag, prefix)
	if !found || !ok {
		return false
	}
	i, k, found := strings.Cut(rest, "-")
	return found && digits(i) && digits(k)
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// protoOwner returns the §0 crawl whose membership list the p2p-shaped
// crawl name belongs to ("proto.C.centers", "proto.C.NET.hosts"), choosing
// the longest name of protos for a hosts list; ok false for any other name.
func protoOwner(name string, protos map[string]bool) (string, bool) {
	rest, found := strings.CutPrefix(name, "proto.")
	if !found {
		return "", false
	}
	if c, found := strings.CutSuffix(rest, ".centers"); found && CheckName(c) == nil {
		return c, true
	}
	mid, found := strings.CutSuffix(rest, ".hosts")
	if !found {
		return "", false
	}
	best := ""
	for c := range protos {
		if strings.HasPrefix(mid, c+".") && len(c) > len(best) {
			best = c
		}
	}
	if best == "" {
		best, _, _ = strings.Cut(mid, ".")
	}
	return best, CheckName(best) == nil && best != mid
}

// protoNames returns the §0 crawls on rdb (their "spider:proto:C:" keys).
func protoNames(ctx context.Context, rdb redis.UniversalClient) (map[string]bool, error) {
	names := map[string]bool{}
	err := scan(ctx, rdb, "spider:proto:*", func(_ *redis.Client, keys []string) error {
		for _, k := range keys {
			if name, kind, ok := Parse(k); ok && kind == KindProtocol {
				names[name] = true
			}
		}
		return nil
	})
	return names, err
}

// Crawl is one crawl found on a Redis.
type Crawl struct {
	Name string `json:"name"`
	// Topology is the kind that ran the crawl (master-worker, peer-to-peer,
	// layered, protocol); rank or index when only such jobs' keys remain.
	Topology string `json:"topology"`
	// State is running, done, stopped or unknown (see the State constants).
	State string `json:"state"`
	// Nodes is the number of live nodes (fresh heartbeats).
	Nodes int `json:"nodes"`
	// URLsDone is the crawl's completed URLs where the topology keeps the
	// count in Redis (master–worker: the master's published counter;
	// peer-to-peer: the live nodes' counts plus the final counts of the
	// runs that ended); -1 when not known.
	URLsDone int64 `json:"urls_done"`
	// Keys counts the crawl's keys by kind.
	Keys  map[string]int64 `json:"keys"`
	Total int64            `json:"keys_total"`
	// MemoryBytes is an estimate: MEMORY USAGE of up to SampleKeys keys per
	// kind, scaled to the kind's key count.
	MemoryBytes int64 `json:"memory_bytes_estimate"`
}

// SampleKeys bounds the keys per kind whose MEMORY USAGE is asked.
const SampleKeys = 64

// forEachMaster runs fn on every master of rdb (one for a plain client).
func forEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("cannot scan a Redis client of type %T: use a plain or cluster client", rdb)
}

// scan calls fn with each batch of keys matching pattern on every master;
// the masters are scanned at once, but fn is called by one at a time.
func scan(ctx context.Context, rdb redis.UniversalClient, pattern string, fn func(c *redis.Client, keys []string) error) error {
	var mu sync.Mutex
	return forEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return fmt.Errorf("cannot scan the keys of %s: %w", c.Options().Addr, err)
			}
			if len(keys) > 0 {
				mu.Lock()
				err := fn(c, keys)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
}

// List returns every crawl on rdb, sorted by name, with its key counts,
// state, live nodes, URLs done and memory estimate.
func List(ctx context.Context, rdb redis.UniversalClient) ([]Crawl, error) {
	found := map[string]*Crawl{}
	samples := map[string]map[string][]sample{}
	collect := func(c *redis.Client, keys []string) error {
		for _, key := range keys {
			name, kind, ok := Parse(key)
			if !ok {
				continue
			}
			cr := found[name]
			if cr == nil {
				cr = &Crawl{Name: name, Keys: map[string]int64{}, URLsDone: -1}
				found[name] = cr
				samples[name] = map[string][]sample{}
			}
			cr.Keys[kind]++
			cr.Total++
			if s := samples[name][kind]; len(s) < SampleKeys {
				samples[name][kind] = append(s, sample{c, key})
			}
		}
		return nil
	}
	// Two patterns cover every kind: "{spider:*" and "spider:*".
	for _, p := range []string{"{spider:*", "spider:*"} {
		if err := scan(ctx, rdb, p, collect); err != nil {
			return nil, err
		}
	}
	// The §0 crawls' membership lists join their crawl.
	protos := map[string]bool{}
	for name, cr := range found {
		if cr.Keys[KindProtocol] > 0 {
			protos[name] = true
		}
	}
	for name, cr := range found {
		owner, ok := protoOwner(name, protos)
		if !ok || cr.Keys[KindPeer] != cr.Total {
			continue
		}
		oc := found[owner]
		if oc == nil {
			oc = &Crawl{Name: owner, Keys: map[string]int64{}, URLsDone: -1}
			found[owner] = oc
			samples[owner] = map[string][]sample{}
		}
		oc.Keys[KindProtocol] += cr.Total
		oc.Total += cr.Total
		samples[owner][KindProtocol] = append(samples[owner][KindProtocol], samples[name][KindPeer]...)
		delete(found, name)
		delete(samples, name)
	}
	out := make([]Crawl, 0, len(found))
	for name, cr := range found {
		cr.MemoryBytes = estimate(ctx, cr.Keys, samples[name])
		if err := describe(ctx, rdb, cr); err != nil {
			return nil, err
		}
		out = append(out, *cr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

type sample struct {
	c   *redis.Client
	key string
}

// estimate scales the MEMORY USAGE of the sampled keys to each kind's count.
func estimate(ctx context.Context, counts map[string]int64, samples map[string][]sample) int64 {
	var total float64
	for kind, ss := range samples {
		var sum int64
		n := 0
		for _, s := range ss {
			if b, err := s.c.MemoryUsage(ctx, s.key).Result(); err == nil {
				sum += b
				n++
			}
		}
		if n > 0 {
			total += float64(sum) / float64(n) * float64(counts[kind])
		}
	}
	return int64(total)
}

// describe fills the topology, state, nodes and URLs done of cr from its
// keys' kinds and the topologies' own keys.
func describe(ctx context.Context, rdb redis.UniversalClient, cr *Crawl) error {
	for _, kind := range []string{KindMasterWorker, KindPeer, KindLayered, KindProtocol, KindIndex, KindRank} {
		if cr.Keys[kind] > 0 {
			cr.Topology = kind
			break
		}
	}
	cr.State = StateUnknown
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("cannot read the Redis server's time: %w", err)
	}
	switch cr.Topology {
	case KindProtocol:
		// internal/protocol: the hosts and centers publish the crawl-wide
		// report in the first network's center's Redis; on that Redis its
		// live rows are the crawl's live nodes, its totals the hosts' URLs,
		// and its state done once every node ended done. Elsewhere (another
		// center's or a host's Redis), or with a report that cannot be read,
		// the state stays unknown.
		rep, err := cluster.ReadReports(ctx, rdb, cr.Name)
		if err != nil || len(rep.Nodes) == 0 {
			break
		}
		for _, n := range rep.Nodes {
			if !n.Final && !n.Stale && (n.Role == cluster.RoleHost || n.Role == cluster.RoleCenter) {
				cr.Nodes++
			}
		}
		cr.URLsDone = rep.Totals.Pages
		cr.State = state(rep.State == cluster.ReportDone, cr.Nodes)
	case KindMasterWorker:
		p := "{spider:" + cr.Name + "}:mw:"
		pipe := rdb.Pipeline()
		done := pipe.Exists(ctx, p+"done")
		beats := pipe.HGetAll(ctx, p+"workers")
		fetched := pipe.HGet(ctx, p+"stats", "fetched")
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("cannot read crawl %q's master–worker keys: %w", cr.Name, err)
		}
		for _, ms := range beats.Val() {
			if last, err := strconv.ParseInt(ms, 10, 64); err == nil && now.Sub(time.UnixMilli(last)) < LiveWindow {
				cr.Nodes++
			}
		}
		if n, err := fetched.Int64(); err == nil {
			cr.URLsDone = n
		}
		cr.State = state(done.Val() > 0, cr.Nodes)
	case KindPeer:
		keys, _ := cluster.NewKeys(cr.Name)
		q := "spider:" + cr.Name + ":{" + cr.Name + ".p2p}:"
		pipe := rdb.Pipeline()
		done := pipe.Exists(ctx, q+"done")
		final := pipe.HVals(ctx, q+"final") // node → URLs of its ended runs
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("cannot read crawl %q's peer-to-peer keys: %w", cr.Name, err)
		}
		// Read only (Membership.Members may expire members, a write): the
		// members whose heartbeat deadline has not passed, and their loads.
		live, err := rdb.ZRangeByScore(ctx, keys.Members(), &redis.ZRangeBy{Min: strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"}).Result()
		if err != nil {
			return fmt.Errorf("cannot read crawl %q's members: %w", cr.Name, err)
		}
		cr.Nodes = len(live)
		var urls int64
		if len(live) > 0 {
			infos, err := rdb.HMGet(ctx, keys.Info(), live...).Result()
			if err != nil {
				return fmt.Errorf("cannot read crawl %q's members: %w", cr.Name, err)
			}
			for _, v := range infos {
				var m cluster.Member
				if str, ok := v.(string); ok && json.Unmarshal([]byte(str), &m) == nil {
					urls += m.Load.Fetched
				}
			}
		}
		for _, v := range final.Val() {
			n, _ := strconv.ParseInt(v, 10, 64)
			urls += n
		}
		if urls > 0 || len(final.Val()) > 0 {
			cr.URLsDone = urls
		}
		cr.State = state(done.Val() > 0, cr.Nodes)
	case KindLayered:
		// internal/layered: "finished" marks the crawl done; its processes
		// (the coordinator and the workers) publish the crawl-wide report,
		// whose live rows are its live nodes and whose totals its URLs.
		// The "finished" field of its meta hash (or the "finished" key of
		// an older spider's layout) marks it done.
		p := "{spider:" + cr.Name + "}:layered:"
		pipe := rdb.Pipeline()
		finished := pipe.HExists(ctx, p+"meta", "finished")
		oldFinished := pipe.Exists(ctx, p+"finished")
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("cannot read crawl %q's layered keys: %w", cr.Name, err)
		}
		rep, err := cluster.ReadReports(ctx, rdb, cr.Name)
		if err != nil {
			return err
		}
		for _, n := range rep.Nodes {
			if !n.Final && !n.Stale && (n.Role == cluster.RoleWorker || n.Role == cluster.RoleLayered) {
				cr.Nodes++
			}
		}
		if len(rep.Nodes) > 0 {
			cr.URLsDone = rep.Totals.Pages
		}
		cr.State = state(finished.Val() || oldFinished.Val() > 0, cr.Nodes)
	}
	return nil
}

func state(done bool, live int) string {
	switch {
	case live > 0:
		return StateRunning
	case done:
		return StateDone
	}
	return StateStopped
}

// Get returns the crawl named name, or an error wrapping ErrNoCrawl that
// names the crawls there are.
func Get(ctx context.Context, rdb redis.UniversalClient, name string) (*Crawl, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	all, err := List(ctx, rdb)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(all))
	for i := range all {
		if all[i].Name == name {
			return &all[i], nil
		}
		names = append(names, all[i].Name)
	}
	return nil, &NoCrawlError{Name: name, Crawls: names}
}

// Exists reports whether any key of crawl name is on rdb: first the keys
// every master–worker and peer-to-peer crawl writes at its start (a few
// EXISTS), then a SCAN per kind that stops at the first key found.
func Exists(ctx context.Context, rdb redis.UniversalClient, name string) (bool, error) {
	if err := CheckName(name); err != nil {
		return false, err
	}
	keys, _ := cluster.NewKeys(name)
	for _, k := range []string{"{spider:" + name + "}:mw:epoch", "{spider:" + name + "}:mw:stats", keys.Epoch(), keys.Info()} {
		n, err := rdb.Exists(ctx, k).Result() // one key a call: they lie in different slots
		if err != nil {
			return false, fmt.Errorf("cannot ask Redis for crawl %q: %w", name, err)
		}
		if n > 0 {
			return true, nil
		}
	}
	errFound := errors.New("found")
	for _, pat := range Patterns(name) {
		err := scan(ctx, rdb, pat, func(*redis.Client, []string) error { return errFound })
		if errors.Is(err, errFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

// Check returns nil when crawl name has keys on rdb, an error wrapping
// ErrNoCrawl that names the crawls there are when it has none, and an
// error wrapping cluster.ErrBadName for a name no crawl can have.
func Check(ctx context.Context, rdb redis.UniversalClient, name string) error {
	ok, err := Exists(ctx, rdb, name)
	if err != nil || ok {
		return err
	}
	_, err = Get(ctx, rdb, name)
	return err
}

// ErrNoCrawl is wrapped by the error of Get for a name no key carries.
var ErrNoCrawl = errors.New("no such crawl")

// NoCrawlError names the missing crawl and the ones there are.
type NoCrawlError struct {
	Name   string
	Crawls []string
}

func (e *NoCrawlError) Error() string {
	list := "none"
	if len(e.Crawls) > 0 {
		list = strings.Join(e.Crawls, ", ")
	}
	return fmt.Sprintf("no crawl named %q on this Redis; crawls: %s (spider crawls --redis URL lists them)", e.Name, list)
}

func (e *NoCrawlError) Unwrap() error { return ErrNoCrawl }

// Removed counts the keys a Drop or Expire reached, by kind.
type Removed struct {
	Keys  map[string]int64 `json:"keys"`
	Total int64            `json:"keys_total"`
}

// Drop deletes every key of crawl name on every master, kind by kind,
// and returns how many it deleted. It never refuses: the caller checks
// the crawl's state first. On an error the returned counts are what was
// deleted before it (running Drop again deletes the rest).
func Drop(ctx context.Context, rdb redis.UniversalClient, name string) (Removed, error) {
	return each(ctx, rdb, name, func(ctx context.Context, c *redis.Client, keys []string) (int64, error) {
		// Key by key: on a cluster master the keys of one batch may lie in
		// different slots, and a multi-key DEL must not cross slots.
		pipe := c.Pipeline()
		cmds := make([]*redis.IntCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.Del(ctx, k)
		}
		_, err := pipe.Exec(ctx)
		var n int64
		for _, cmd := range cmds {
			n += cmd.Val()
		}
		return n, err
	})
}

// Expire sets a time to live of ttl on every key of crawl name (keys that
// already expire sooner keep their sooner expiry; Redis 7 or later) and returns how many it
// set. Keys the crawl creates later do not get one.
func Expire(ctx context.Context, rdb redis.UniversalClient, name string, ttl time.Duration) (Removed, error) {
	return each(ctx, rdb, name, func(ctx context.Context, c *redis.Client, keys []string) (int64, error) {
		pipe := c.Pipeline()
		cmds := make([]*redis.Cmd, len(keys))
		for i, k := range keys {
			// LT: a key without an expiry gets one; a sooner one stays.
			cmds[i] = pipe.Do(ctx, "PEXPIRE", k, ttl.Milliseconds(), "LT")
		}
		_, err := pipe.Exec(ctx)
		var n int64
		for _, cmd := range cmds {
			if v, _ := cmd.Int64(); v == 1 {
				n++
			}
		}
		return n, err
	})
}

func each(ctx context.Context, rdb redis.UniversalClient, name string, fn func(context.Context, *redis.Client, []string) (int64, error)) (Removed, error) {
	r := Removed{Keys: map[string]int64{}}
	if err := CheckName(name); err != nil {
		return r, err
	}
	pats := Patterns(name)
	kinds := make([]string, 0, len(pats))
	for k := range pats {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		err := scan(ctx, rdb, pats[kind], func(c *redis.Client, keys []string) error {
			// A pattern may match keys of another kind of the same crawl
			// (the peer-to-peer pattern matches the control keys): count
			// each key under the kind Parse gives it.
			byKind := map[string][]string{}
			for _, k := range keys {
				kk := kind
				if n, pk, ok := Parse(k); ok && n == name {
					kk = pk
				}
				byKind[kk] = append(byKind[kk], k)
			}
			for kk, ks := range byKind {
				n, err := fn(ctx, c, ks)
				r.Keys[kk] += n
				r.Total += n
				if err != nil {
					return fmt.Errorf("cannot change the keys on %s: %w", c.Options().Addr, err)
				}
			}
			return nil
		})
		if err != nil {
			return r, err
		}
	}
	// The §0 crawl's membership lists (see the package doc).
	protos, err := protoNames(ctx, rdb)
	if err != nil {
		return r, err
	}
	protos[name] = true
	err = scan(ctx, rdb, "spider:proto."+name+".*", func(c *redis.Client, keys []string) error {
		var mine []string
		for _, k := range keys {
			if p2p, kind, ok := Parse(k); ok && kind == KindPeer {
				if owner, ok := protoOwner(p2p, protos); ok && owner == name {
					mine = append(mine, k)
				}
			}
		}
		if len(mine) == 0 {
			return nil
		}
		n, err := fn(ctx, c, mine)
		r.Keys[KindProtocol] += n
		r.Total += n
		if err != nil {
			return fmt.Errorf("cannot change the keys on %s: %w", c.Options().Addr, err)
		}
		return nil
	})
	return r, err
}
