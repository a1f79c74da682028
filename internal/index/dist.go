package index

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/content"
	"github.com/spider-crawler/spider/internal/crawls"
	"github.com/spider-crawler/spider/internal/index/analysis"
)

// The distributed build of SPEC §1. Pages stay where they were crawled:
// each node's data directory is read only by mappers running on that node.
// Map tasks are ranges of a node's records.jsonl; a mapper takes a unique
// task tag from the node's tag queue trq (LMOVE into its own processing
// list: the lease), segments and counts the pages of the range and pushes
// result packets (term, page, frequency and positions) to the results
// queue. One writer alone pops the results and writes the inverted index,
// so there are no write conflicts. Mappers heart-beat into a sorted set
// scored with Redis server time; the writer's reaper puts the tasks of a
// mapper silent for longer than the lease TTL back on trq, and a later
// attempt redoes them. Packets carry the task tag and the attempt, and the
// writer accepts exactly one complete attempt per tag.
//
// Keys. The queues and the bookkeeping share the hash tag {spider:NAME},
// so every script and transaction on them is in one slot of a Redis
// Cluster; the result packets, which hold the analysed pages and so
// nearly all of the build's memory, go to resultLists lists, one per hash
// tag ix-I-K (slots.SpreadTag), a task's packets all to one list (so they
// stay in order; the build's tasks go round the lists), and the masters of a cluster hold about
// equal shares of them:
//
//	{spider:NAME}:index:trq:NODE      task tags of NODE not yet leased
//	{spider:NAME}:index:proc:MAPPER   tags leased by MAPPER
//	{spider:NAME}:index:tasks         hash tag → task JSON
//	{spider:NAME}:index:lists         hash tag → its result list (0 to resultLists-1)
//	{spider:NAME}:index:plan          hash NODE → number of tasks
//	{spider:NAME}:index:done          set of finished tags
//	{spider:NAME}:index:donebynode    hash NODE → finished tasks
//	{spider:NAME}:index:mappers       sorted set MAPPER → last heartbeat (ms)
//	{spider:NAME}:index:mapnode       hash MAPPER → NODE
//	{spider:NAME}:index:stats         hash of counters (pages, bytes)
//	spider:NAME:{ix-I-K}:results      result packets of the tasks numbered I mod resultLists

// resultLists is the number of result lists (and hash tags) of a build.
const resultLists = 12

var resultTags = cluster.SpreadTags("ix-", resultLists)

// distKeys names the keys of one distributed index build.
type distKeys struct{ p, crawl string }

func newDistKeys(crawl string) distKeys {
	return distKeys{p: cluster.TopologyPrefix(crawl, "index"), crawl: crawl}
}

// results is result list i.
func (k distKeys) results(i int) string {
	return cluster.SpreadPrefix(k.crawl, resultTags[i]) + "results"
}

// resultList is the list of a task's packets: its number (the tag's part
// after the last '/') plus an offset hashed from its node, modulo
// resultLists, so that a node's consecutive tasks go round the lists and
// nodes with few tasks each do not all start at list 0.
func resultList(tag string) int {
	i := strings.LastIndexByte(tag, '/')
	n, err := strconv.Atoi(tag[i+1:])
	if err != nil || n < 0 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(tag[:max(i, 0)]))
	return int((h.Sum32()%resultLists + uint32(n%resultLists)) % resultLists)
}

func (k distKeys) trq(node string) string    { return k.p + "trq:" + node }
func (k distKeys) proc(mapper string) string { return k.p + "proc:" + mapper }
func (k distKeys) tasks() string             { return k.p + "tasks" }
func (k distKeys) lists() string             { return k.p + "lists" }
func (k distKeys) plan() string              { return k.p + "plan" }
func (k distKeys) done() string              { return k.p + "done" }
func (k distKeys) doneByNode() string        { return k.p + "donebynode" }
func (k distKeys) mappers() string           { return k.p + "mappers" }
func (k distKeys) mapNode() string           { return k.p + "mapnode" }
func (k distKeys) stats() string             { return k.p + "stats" }

// task is one map task: a byte range of a node's records.jsonl.
type task struct {
	Node  string `json:"node"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
}

// planScript registers a node's tasks once: the first mapper of a node to
// arrive plans, the others see the plan. Each task gets its result list in
// the lists hash: the build's tasks numbered across nodes in planning
// order, round the lists, so they spread evenly whatever the nodes'
// sizes. KEYS: plan, trq, tasks, lists. ARGV: node, number of lists, then
// tag, task JSON pairs.
var planScript = redis.NewScript(`
local base = 0
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do base = base + tonumber(v) end
if redis.call('HSETNX', KEYS[1], ARGV[1], (#ARGV - 2) / 2) == 0 then
  return 0
end
local n = tonumber(ARGV[2])
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i+1])
  redis.call('HSET', KEYS[4], ARGV[i], (base + (i - 3) / 2) % n)
  redis.call('RPUSH', KEYS[2], ARGV[i])
end
return 1
`)

// beatScript records a heartbeat with the server's clock. KEYS: mappers,
// mapnode. ARGV: mapper, node.
var beatScript = redis.NewScript(cluster.LuaNow + `
redis.call('ZADD', KEYS[1], now_ms, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
`)

// reapScript re-queues the tasks of mappers silent for more than ARGV[2]
// ms. KEYS: mappers, mapnode. ARGV: key prefix, TTL. Returns the tags
// re-queued.
var reapScript = redis.NewScript(cluster.LuaNow + `
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms - tonumber(ARGV[2]))
local out = {}
for _, m in ipairs(dead) do
  local node = redis.call('HGET', KEYS[2], m)
  local proc = ARGV[1] .. 'proc:' .. m
  if node then
    while true do
      local tag = redis.call('RPOP', proc)
      if not tag then break end
      redis.call('LPUSH', ARGV[1] .. 'trq:' .. node, tag)
      table.insert(out, tag)
    end
  end
  redis.call('ZREM', KEYS[1], m)
  redis.call('HDEL', KEYS[2], m)
end
return out
`)

// MapperOptions configure RunMapper.
type MapperOptions struct {
	// Crawl names the build's keys ({spider:Crawl}:index:*). Default "default".
	Crawl string
	// Node names this data directory among the build's nodes; mappers with
	// the same Node share its tasks. Default: the host name and the data
	// directory's absolute path.
	Node string
	// TaskRecords is how many record lines one task covers. Default 2,000.
	TaskRecords int
	// Workers analyse a task's pages in parallel. Default 1.
	Workers int
	// PacketDocs is how many documents go into one result packet. Default 100.
	PacketDocs int
	// Heartbeat is how often the mapper reports it is alive. Default 1s.
	Heartbeat time.Duration
	// MaxQueued pauses the mapper while its task's result list is longer.
	// Default 256 packets.
	MaxQueued int64
	// Logger receives progress. Nil discards.
	Logger *slog.Logger
	// afterPacket is a test hook called after each packet is pushed.
	afterPacket func(n int)
}

// MapperStats counts a mapper's work.
type MapperStats struct {
	Tasks, Pages int
	Bytes        int64
	Took         time.Duration
}

// RunMapper runs a mapper over dataDir until every task of its node is
// finished (by it or by others), or ctx ends. It plans the node's tasks if
// no mapper of the node did yet.
func RunMapper(ctx context.Context, rdb redis.UniversalClient, dataDir string, opt MapperOptions) (MapperStats, error) {
	start := time.Now()
	var st MapperStats
	if opt.Crawl == "" {
		opt.Crawl = "default"
	}
	if err := crawls.CheckName(opt.Crawl); err != nil { // a name that could reach other keys
		return st, err
	}
	if opt.TaskRecords <= 0 {
		opt.TaskRecords = 2000
	}
	if opt.Workers <= 0 {
		opt.Workers = 1
	}
	if opt.PacketDocs <= 0 {
		opt.PacketDocs = 100
	}
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = time.Second
	}
	if opt.MaxQueued <= 0 {
		opt.MaxQueued = 256
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.Node == "" {
		abs, _ := filepath.Abs(dataDir)
		host, _ := os.Hostname()
		opt.Node = host + ":" + abs
	}
	k := newDistKeys(opt.Crawl)
	a, err := analysis.Shared()
	if err != nil {
		return st, err
	}
	if err := planTasks(ctx, rdb, k, dataDir, opt.Node, opt.TaskRecords, log); err != nil {
		return st, err
	}
	var rb [6]byte
	rand.Read(rb[:])
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(rb[:]))
	beat := func(ctx context.Context) error {
		return beatScript.Run(ctx, rdb, []string{k.mappers(), k.mapNode()}, id, opt.Node).Err()
	}
	if err := beat(ctx); err != nil {
		return st, fmt.Errorf("cannot register the mapper in Redis: %w", err)
	}
	stopHB := cluster.Every(ctx, opt.Heartbeat, beat, func(err error) {
		log.Warn("index mapper: heartbeat failed", "err", err)
	})
	defer stopHB()
	log.Info("index mapper: started", "mapper", id, "node", opt.Node)
	attempts := 0
	packets := 0
	var sites *content.Model // the node's site models, learned before the first task
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		tag, err := rdb.BLMove(ctx, k.trq(opt.Node), k.proc(id), "LEFT", "RIGHT", time.Second).Result()
		if errors.Is(err, redis.Nil) {
			planned, err1 := rdb.HGet(ctx, k.plan(), opt.Node).Int()
			done, err2 := rdb.HGet(ctx, k.doneByNode(), opt.Node).Int()
			finished := errors.Is(err1, redis.Nil) || // the writer finished and cleared the build
				err1 == nil && (err2 == nil || errors.Is(err2, redis.Nil)) && done >= planned
			if finished {
				// Clean exit: leave the heartbeat set, once no beat is in
				// flight (one landing after would put the mapper back).
				stopHB()
				rdb.ZRem(context.WithoutCancel(ctx), k.mappers(), id)
				rdb.HDel(context.WithoutCancel(ctx), k.mapNode(), id)
				st.Took = time.Since(start)
				if err := a.DictErr(); err != nil {
					log.Warn("index mapper: Chinese pages were analysed without word segmentation", "err", err)
				}
				log.Info("index mapper: finished", "mapper", id, "tasks", st.Tasks, "dictionary_load", a.LoadTime().Round(time.Millisecond))
				return st, nil
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			return st, fmt.Errorf("cannot take a task from Redis: %w", err)
		}
		raw, err := rdb.HGet(ctx, k.tasks(), tag).Result()
		if err != nil {
			return st, fmt.Errorf("cannot read task %s: %w", tag, err)
		}
		var t task
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			return st, fmt.Errorf("task %s is malformed in Redis: %w", tag, err)
		}
		attempts++
		attempt := id + "#" + strconv.Itoa(attempts)
		pages, err := openPageReader(filepath.Join(dataDir, "pages"))
		if err != nil {
			return st, err
		}
		if sites == nil && DefaultFieldWeights.Template == 0 {
			if sites, err = nodeSites(ctx, dataDir, pages, opt.Workers); err != nil {
				pages.close()
				return st, err
			}
		}
		var nb int64
		var np int
		r, err := analyzeRange(ctx, a, dataDir, pages, t.Start, t.End, 0, opt.Workers, DefaultFieldWeights, true, sites, func(d *Doc, n int) {
			if d != nil {
				np++
				nb += int64(n)
			}
		}, log)
		pages.close()
		if err != nil {
			return st, err
		}
		seq := 0
		li, err := rdb.HGet(ctx, k.lists(), tag).Int()
		if err != nil || li < 0 || li >= resultLists {
			li = resultList(tag) // a plan without lists (an older mapper planned it)
		}
		list := k.results(li)
		send := func(p *packet) error {
			for {
				n, err := rdb.LLen(ctx, list).Result()
				if err != nil {
					return err
				}
				if n < opt.MaxQueued {
					break
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
			}
			p.tag, p.attempt, p.seq = tag, attempt, seq
			seq++
			if err := rdb.RPush(ctx, list, encodePacket(p)).Err(); err != nil {
				return err
			}
			packets++
			if opt.afterPacket != nil {
				opt.afterPacket(packets)
			}
			return nil
		}
		p := &packet{kind: 'D'}
		for _, it := range r.items {
			p.items = append(p.items, packetItem{url: it.url, fetched: it.rec.FetchedAt.UnixNano(), offset: it.offset, doc: it.doc,
				final: it.rec.FinalURL, anchors: it.anchors, dup: clusterPageOf(it.rec)})
			if len(p.items) >= opt.PacketDocs {
				if err := send(p); err != nil {
					return st, fmt.Errorf("cannot push results to Redis: %w", err)
				}
				p = &packet{kind: 'D'}
			}
		}
		if len(p.items) > 0 {
			if err := send(p); err != nil {
				return st, fmt.Errorf("cannot push results to Redis: %w", err)
			}
		}
		if err := send(&packet{kind: 'E', count: seq}); err != nil {
			return st, fmt.Errorf("cannot push results to Redis: %w", err)
		}
		pipe := rdb.TxPipeline()
		pipe.LRem(ctx, k.proc(id), 1, tag)
		pipe.HIncrBy(ctx, k.stats(), "pages", int64(np))
		pipe.HIncrBy(ctx, k.stats(), "bytes", nb)
		if _, err := pipe.Exec(ctx); err != nil {
			return st, fmt.Errorf("cannot finish task %s in Redis: %w", tag, err)
		}
		st.Tasks++
		st.Pages += np
		st.Bytes += nb
		log.Info("index mapper: task done", "task", tag, "records", r.records, "pages", np)
	}
}

// planTasks cuts the node's records.jsonl into ranges of n lines and
// registers them, unless the node is planned already.
func planTasks(ctx context.Context, rdb redis.UniversalClient, k distKeys, dataDir, node string, n int, log *slog.Logger) error {
	if ok, err := rdb.HExists(ctx, k.plan(), node).Result(); err != nil {
		return fmt.Errorf("cannot read the task plan from Redis: %w", err)
	} else if ok {
		return nil
	}
	args := []any{node, resultLists}
	start, lines, no := int64(0), 0, 0
	flush := func(end int64) {
		b, _ := json.Marshal(task{Node: node, Start: start, End: end})
		args = append(args, node+"/"+strconv.Itoa(no), string(b))
		no++
		start, lines = end, 0
	}
	end, err := scanLineEnds(dataDir, func(end int64) {
		lines++
		if lines == n {
			flush(end)
		}
	})
	if err != nil {
		return err
	}
	if lines > 0 {
		flush(end)
	}
	created, err := planScript.Run(ctx, rdb, []string{k.plan(), k.trq(node), k.tasks(), k.lists()}, args...).Int()
	if err != nil {
		return fmt.Errorf("cannot register the tasks in Redis: %w", err)
	}
	if created == 1 {
		log.Info("index mapper: planned tasks", "node", node, "tasks", no, "bytes", end)
	}
	return nil
}

// scanLineEnds calls fn with the offset after every complete line of
// records.jsonl and returns the end of the last one.
func scanLineEnds(dataDir string, fn func(end int64)) (int64, error) {
	var last int64
	// ScanRecords skips lines that are not records; a task boundary only
	// needs line ends, so count every line the scanner sees.
	end, err := ScanRecords(dataDir, 0, -1, func(_ Record, end int64) bool {
		fn(end)
		last = end
		return true
	})
	if err != nil {
		return 0, err
	}
	if end > last {
		fn(end)
	}
	return end, nil
}

// WriterProgress is reported by RunDistWriter about once a second.
type WriterProgress struct {
	Nodes, Tasks, Done int
	Mappers            int
	Pages              int
	Bytes              int64
	Elapsed            time.Duration
}

// DistWriterOptions configure RunDistWriter.
type DistWriterOptions struct {
	Crawl string // see MapperOptions.Crawl
	// Nodes is how many nodes (data directories) must plan tasks before the
	// build can finish. Default 1.
	Nodes int
	// LeaseTTL is how long a mapper may stay silent before its tasks are
	// given to others. Default 5s.
	LeaseTTL time.Duration
	// Progress is called about once a second.
	Progress func(WriterProgress)
	Logger   *slog.Logger
	// NearDupDistance is the SimHash distance of the duplicate clusters
	// the writer computes over every node's pages and writes to
	// ClustersFile, as Build does; 0: DefaultNearDupDistance; negative:
	// exact duplicates and canonical URLs only.
	NearDupDistance int
}

// DistStats summarises a distributed build.
type DistStats struct {
	Tasks, Docs, Deleted int
	Requeued             int
	Folded               int   // pages folded into another's duplicate cluster (ClustersFile)
	Bytes                int64 // page bytes the mappers analysed
	Took                 time.Duration
}

// winner is the current last record of a URL in the distributed build.
type winner struct {
	node    string
	fetched int64
	offset  int64
	doc     *Doc
	final   string   // the page's final URL (anchor targets)
	anchors []anchor // the page's links' anchor texts
	dup     *clusterPage
}

// newer reports whether candidate c replaces w: on the same node the later
// line of records.jsonl, across nodes the later fetch.
func (w winner) newer(c winner) bool {
	if c.node == w.node {
		return c.offset > w.offset
	}
	if c.fetched != w.fetched {
		return c.fetched > w.fetched
	}
	return c.node > w.node
}

// RunDistWriter is the single writer: it pops result packets until every
// planned task of Nodes nodes is done, then writes the index into indexDir
// (replacing what was there) as one segment. It also re-queues the tasks
// of dead mappers.
func RunDistWriter(ctx context.Context, rdb redis.UniversalClient, indexDir string, opt DistWriterOptions) (DistStats, error) {
	start := time.Now()
	var st DistStats
	if opt.Crawl == "" {
		opt.Crawl = "default"
	}
	if err := crawls.CheckName(opt.Crawl); err != nil {
		return st, err
	}
	if opt.Nodes <= 0 {
		opt.Nodes = 1
	}
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = 5 * time.Second
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := newDistKeys(opt.Crawl)
	if n, err := rdb.SCard(ctx, k.done()).Result(); err != nil {
		return st, fmt.Errorf("cannot read the build state from Redis: %w", err)
	} else if n > 0 {
		return st, fmt.Errorf("cannot start the index writer: a previous writer of build %q stopped after %d tasks and their results are gone; "+
			"start the writer with --reset, then restart the mappers", opt.Crawl, n)
	}
	w, err := OpenWriter(indexDir, WriterOptions{Logger: log})
	if err != nil {
		return st, err
	}
	defer w.Close()

	type attemptState struct {
		packets int
		items   []packetItem
	}
	pending := map[string]map[string]*attemptState{} // tag → attempt → packets so far
	doneTags := map[string]bool{}
	win := map[string]winner{}
	nodeOf := func(tag string) string {
		if i := strings.LastIndexByte(tag, '/'); i >= 0 {
			return tag[:i]
		}
		return tag
	}
	lastReap, lastProgress := time.Time{}, time.Time{}
	var queued []string // packets popped, not yet handled
	next, idle := 0, time.Duration(0)
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		now := time.Now()
		if now.Sub(lastReap) >= opt.LeaseTTL/4 {
			lastReap = now
			tags, err := reapScript.Run(ctx, rdb, []string{k.mappers(), k.mapNode()}, k.p, opt.LeaseTTL.Milliseconds()).StringSlice()
			if err != nil && !errors.Is(err, redis.Nil) {
				return st, fmt.Errorf("cannot reap dead mappers: %w", err)
			}
			for _, t := range tags {
				st.Requeued++
				log.Warn("index writer: mapper died; task re-queued", "task", t)
			}
		}
		plan, err := rdb.HGetAll(ctx, k.plan()).Result()
		if err != nil {
			return st, fmt.Errorf("cannot read the task plan: %w", err)
		}
		total := 0
		for _, v := range plan {
			n, _ := strconv.Atoi(v)
			total += n
		}
		if opt.Progress != nil && now.Sub(lastProgress) >= time.Second {
			lastProgress = now
			m, _ := rdb.ZCard(ctx, k.mappers()).Result()
			s, _ := rdb.HGetAll(ctx, k.stats()).Result()
			pages, _ := strconv.Atoi(s["pages"])
			bytes, _ := strconv.ParseInt(s["bytes"], 10, 64)
			opt.Progress(WriterProgress{Nodes: len(plan), Tasks: total, Done: len(doneTags), Mappers: int(m),
				Pages: pages, Bytes: bytes, Elapsed: time.Since(start)})
		}
		if len(plan) >= opt.Nodes && len(doneTags) >= total && total > 0 {
			break
		}
		if len(queued) == 0 {
			// The lists in turn, a batch from each; when all are empty, a
			// short sleep (a blocking pop can wait on one slot only).
			for range resultLists {
				list := k.results(next)
				next = (next + 1) % resultLists
				got, err := rdb.LPopCount(ctx, list, 64).Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					if ctx.Err() != nil {
						return st, ctx.Err()
					}
					return st, fmt.Errorf("cannot pop results from %s: %w", list, err)
				}
				if len(got) > 0 {
					queued = got
					break
				}
			}
			if len(queued) == 0 {
				idle = min(max(2*idle, 2*time.Millisecond), 100*time.Millisecond)
				select {
				case <-ctx.Done():
					return st, ctx.Err()
				case <-time.After(idle):
				}
				continue
			}
			idle = 0
		}
		raw := queued[0]
		queued = queued[1:]
		p, err := decodePacket([]byte(raw))
		if err != nil {
			log.Warn("index writer: dropped a malformed packet", "err", err)
			continue
		}
		if doneTags[p.tag] {
			continue // a late packet of a task already accepted
		}
		as := pending[p.tag]
		if as == nil {
			as = map[string]*attemptState{}
			pending[p.tag] = as
		}
		a := as[p.attempt]
		if a == nil {
			a = &attemptState{}
			as[p.attempt] = a
		}
		if p.kind == 'D' {
			if p.seq != a.packets {
				// A gap: this attempt lost a packet; it can never complete.
				log.Warn("index writer: packet out of order; discarding attempt", "task", p.tag, "attempt", p.attempt)
				a.packets = -1 << 30
				continue
			}
			a.packets++
			a.items = append(a.items, p.items...)
			continue
		}
		if a.packets != p.count {
			log.Warn("index writer: incomplete attempt ignored", "task", p.tag, "attempt", p.attempt)
			continue
		}
		node := nodeOf(p.tag)
		for _, it := range a.items {
			c := winner{node: node, fetched: it.fetched, offset: it.offset, doc: it.doc, final: it.final, anchors: it.anchors, dup: it.dup}
			if old, ok := win[it.url]; !ok || old.newer(c) {
				win[it.url] = c
			}
		}
		doneTags[p.tag] = true
		delete(pending, p.tag)
		pipe := rdb.TxPipeline()
		pipe.SAdd(ctx, k.done(), p.tag)
		pipe.HIncrBy(ctx, k.doneByNode(), node, 1)
		if _, err := pipe.Exec(ctx); err != nil {
			return st, fmt.Errorf("cannot record task %s as done: %w", p.tag, err)
		}
	}
	if err := addDistAnchors(win, DefaultFieldWeights.Anchor); err != nil {
		return st, err
	}
	var docs []Doc
	var deleted []string
	for u, c := range win {
		if c.doc != nil {
			docs = append(docs, *c.doc)
		} else {
			deleted = append(deleted, u)
		}
	}
	if err := w.Reset("distributed"); err != nil {
		return st, err
	}
	if err := w.Commit(docs, deleted, 0, "distributed"); err != nil {
		return st, err
	}
	// The duplicate clusters over every node's pages, as Build computes
	// them over one node's.
	kd := opt.NearDupDistance
	if kd == 0 {
		kd = DefaultNearDupDistance
	}
	kd = max(kd, 0)
	var cps []clusterPage
	for _, c := range win {
		if c.dup != nil {
			cps = append(cps, *c.dup)
		}
	}
	ms, err := clustersOf(cps, kd)
	if err != nil {
		return st, err
	}
	if err := writeClusterFile(w.dir, kd, ms); err != nil {
		return st, err
	}
	st.Folded = len(ms)
	s, _ := rdb.HGetAll(ctx, k.stats()).Result()
	st.Bytes, _ = strconv.ParseInt(s["bytes"], 10, 64)
	st.Tasks, st.Docs, st.Deleted = len(doneTags), len(docs), len(deleted)
	// The build is over: clear its keys, which also tells waiting mappers
	// to exit.
	if err := ResetDist(ctx, rdb, opt.Crawl); err != nil {
		log.Warn("index writer: cannot clear the build's keys", "err", err)
	}
	st.Took = time.Since(start)
	return st, nil
}

// ResetDist deletes a finished (or abandoned) build's keys so the crawl
// name can be used for a new build.
func ResetDist(ctx context.Context, rdb redis.UniversalClient, crawl string) error {
	if err := crawls.CheckName(crawl); err != nil {
		return err
	}
	k := newDistKeys(crawl)
	var keys []string
	plan, err := rdb.HGetAll(ctx, k.plan()).Result()
	if err != nil {
		return fmt.Errorf("cannot read the task plan: %w", err)
	}
	for node := range plan {
		keys = append(keys, k.trq(node))
	}
	mappers, _ := rdb.HKeys(ctx, k.mapNode()).Result()
	for _, m := range mappers {
		keys = append(keys, k.proc(m))
	}
	keys = append(keys, k.tasks(), k.lists(), k.plan(), k.done(), k.doneByNode(), k.mappers(), k.mapNode(), k.stats())
	for i := range resultLists {
		keys = append(keys, k.results(i))
	}
	for _, key := range keys {
		if err := rdb.Del(ctx, key).Err(); err != nil {
			return fmt.Errorf("cannot delete %s: %w", key, err)
		}
	}
	return nil
}
