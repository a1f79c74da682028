package layered

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/slots"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/denoise"
	"github.com/spider-crawler/spider/internal/store"
)

// keys names the Redis keys of a distributed layered crawl. The few
// keys of the crawl as a whole share the hash tag {spider:NAME}:
//
//	{spider:NAME}:layered:meta      hash: layout (layoutVersion, set by the crawl's first
//	                                coordinator), seq (counter of worker ids), finished
//	                                (set when the crawl is done; cleared when the process
//	                                holding its data directory runs it again)
//
// Every other key is under one of Shards hash tags (ShardTag): a task's by
// a hash of its ID, a worker's heart-beat by its number, and the crawl's coordination
// keys under shards 0, 4 and 8, so that a Redis Cluster holds them (and the
// tasks' outputs, the bulk of the memory) on every master:
//
//	spider:NAME:{ly-I-K}:todo       tasks of shard I to run (JSON Task)
//	spider:NAME:{ly-I-K}:proc:W     the tasks of shard I worker W holds
//	spider:NAME:{ly-I-K}:out:TASK   a task's output (gzip JSON payload)
//	spider:NAME:{ly-I-K}:hb:W       worker W's heart-beat (a TTL), for the W of shard I
//	spider:NAME:{ly-0-K}:coord      the coordinator's lease (NODEID/TOKEN, a TTL)
//	spider:NAME:{ly-4-K}:workers    set of worker ids
//	spider:NAME:{ly-8-K}:done       list of IDs of tasks whose output was posted (a wake-up only)
//
// Every atomic step touches one shard: taking a task moves it from todo to
// proc:W of the same shard (BLMOVE), posting it sets out:TASK and removes
// it from proc:W (MULTI), handing a silent worker's tasks out again moves
// them back (LMOVE).
type keys struct {
	p      string   // "{spider:NAME}:layered:"
	shards []string // "spider:NAME:{ly-I-K}:" by shard
}

// Shards is the number of hash tags a layered crawl's task keys spread
// over: 12 land evenly on clusters of 1, 2, 3, 4, 6 or 12 masters with the
// default, evenly split slot ranges.
const Shards = 12

// layoutVersion is the value of the created key: a crawl created by an
// older spider, whose tasks sit under {spider:NAME}, is refused.
const layoutVersion = "2 shards=12"

// ShardTag is the hash tag of task shard i of n: "ly-<i>-<k>" with the
// smallest k ≥ 0 whose Redis Cluster slot lies in the i-th of n equal slot
// ranges, so the shards of a crawl lie on different masters of a cluster
// whose masters hold equal ranges. The tags name no crawl (the key's
// "spider:NAME:" prefix does).
func ShardTag(i, n int) string { return slots.SpreadTag("ly-", i, n) }

var shardTags = cluster.SpreadTags("ly-", Shards) // ShardTag(i, Shards)

func newKeys(crawl string) keys {
	k := keys{p: cluster.TopologyPrefix(crawl, "layered"), shards: make([]string, Shards)}
	for i, tag := range shardTags {
		k.shards[i] = cluster.SpreadPrefix(crawl, tag)
	}
	return k
}

func (k keys) meta() string    { return k.p + "meta" }
func (k keys) coord() string   { return k.shards[0] + "coord" }
func (k keys) workers() string { return k.shards[Shards/3] + "workers" }
func (k keys) done() string    { return k.shards[2*Shards/3] + "done" }

// oldCreated is the key an older spider's layered crawl has (its layout
// had every key under {spider:NAME}).
func (k keys) oldCreated() string { return k.p + "created" }

// Fields of the meta hash.
const (
	metaLayout   = "layout"
	metaSeq      = "seq"
	metaFinished = "finished"
)

// shardOf is a task's shard: a hash of its ID, so a crawl's tasks spread
// over the shards evenly whichever groups have URLs.
func shardOf(t Task) int { return int(crc32.ChecksumIEEE([]byte(t.ID())) % Shards) }

// workerShard is the shard of worker w's heart-beat: by its number (the
// N of NODEID-N, workerID): worker N in the N mod 3rd third of the
// shards, so that consecutive workers' land on different masters of a
// 3-master cluster; by a hash of the id for an id of another shape.
func workerShard(w string) int {
	if i := strings.LastIndexByte(w, '-'); i >= 0 {
		if n, err := strconv.Atoi(w[i+1:]); err == nil && n >= 0 {
			return (n%3)*(Shards/3) + (n/3)%(Shards/3)
		}
	}
	return int(crc32.ChecksumIEEE([]byte(w)) % Shards)
}

func (k keys) todo(shard int) string           { return k.shards[shard] + "todo" }
func (k keys) proc(shard int, w string) string { return k.shards[shard] + "proc:" + w }
func (k keys) out(t Task) string               { return k.shards[shardOf(t)] + "out:" + t.ID() }
func (k keys) hb(w string) string              { return k.shards[workerShard(w)] + "hb:" + w }

// payload is a task's output as a worker sends it: a fetch task's result
// with its records and page bodies (so that the coordinator's page store
// gets them, S200 reduce), or a cluster task's block results.
type payload struct {
	Task    string                `json:"task"`
	Fetch   *FetchResult          `json:"fetch,omitempty"`
	Records []store.Record        `json:"records,omitempty"`
	Bodies  [][]byte              `json:"bodies,omitempty"` // by Records index; nil without a page
	Blocks  []denoise.BlockResult `json:"blocks,omitempty"`
	Worker  string                `json:"worker"`
}

func encodePayload(p *payload) ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if err := json.NewEncoder(zw).Encode(p); err != nil {
		return nil, fmt.Errorf("cannot encode the output of task %s: %w", p.Task, err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func decodePayload(b []byte) (*payload, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("cannot decode a task output: %w", err)
	}
	var p payload
	if err := json.NewDecoder(io.LimitReader(zr, 4<<30)).Decode(&p); err != nil {
		return nil, fmt.Errorf("cannot decode a task output: %w", err)
	}
	return &p, nil
}

// runDistributed is Run with Redis: this process coordinates if it may
// (no crawl of this name exists yet, or this data directory holds it) and
// the role is free; every process also works on tasks until the crawl is
// finished, follows spider control and publishes its part of the
// crawl-wide report (cluster.Reporter).
func (c *Crawler) runDistributed(ctx context.Context) error {
	ck, err := cluster.NewKeys(c.opt.Crawl)
	if err != nil {
		return err
	}
	if c.opt.NodeID == "" {
		host, _ := os.Hostname()
		c.opt.NodeID = host + "-" + strconv.Itoa(os.Getpid())
	}
	k := newKeys(c.opt.Crawl)
	rdb := c.opt.Redis
	if err := checkLayout(ctx, rdb, k, c.opt.Crawl); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	id, err := c.workerID(ctx, k)
	if err != nil {
		return err
	}
	c.ctl = cluster.NewControl(rdb, ck)
	if err := c.ctl.Fresh(ctx); err != nil {
		return err
	}
	rep, err := cluster.StartReporter(ctx, rdb, ck, cluster.ReporterConfig{Node: id, Role: cluster.RoleWorker, Source: c.workerReport, Logger: c.log})
	if err != nil {
		return err
	}
	// A finished crawl whose data directory is here runs again for its
	// revisit rounds, as without Redis: every run takes the URLs due when
	// it starts (failures whose back-off passed, with or without revisit
	// flags; with --revisit the pages due; with --retry-failed every
	// failure), and --continuous goes on. It is not finished any more, so
	// workers stay for its tasks; the coordinator marks it finished again
	// once its revisit rounds end (at once when nothing is due). Only the
	// coordinator's schedule knows what is due, so the mark is not kept
	// for a run that would find nothing.
	if _, err := os.Stat(filepath.Join(c.root, ManifestFile)); err == nil {
		if err := rdb.HDel(ctx, k.meta(), metaFinished).Err(); err != nil {
			return fmt.Errorf("cannot reopen the finished crawl %q for its revisits: %w", c.opt.Crawl, err)
		}
	}
	finished := false // the crawl is done (this process saw or set finished)
	defer func() {
		state := cluster.ReportDone
		switch cause := context.Cause(ctx); {
		case finished:
		case errors.Is(cause, ErrStopped), errors.Is(cause, context.Canceled):
			state = cluster.ReportStopped
		case cause != nil:
			state = cluster.ReportFailed
		}
		if err := rep.Stop(context.WithoutCancel(ctx), state); err != nil {
			c.log.Warn("layered: cannot publish the worker's final report", "err", err)
		}
	}()
	go func() {
		if err := c.follow(ctx, c.ctl, id); errors.Is(err, ErrStopped) {
			cancel(ErrStopped)
		}
	}()

	var coordinating atomic.Bool
	werr := make(chan error, 1)
	go func() { werr <- c.work(ctx, k, id, &coordinating) }()

	for {
		if fin, err := rdb.HExists(ctx, k.meta(), metaFinished).Result(); err != nil {
			if errors.Is(context.Cause(ctx), ErrStopped) {
				<-werr
				return ErrStopped
			}
			return fmt.Errorf("cannot reach Redis: %w", err)
		} else if fin {
			finished = true
			cancel(nil)
			<-werr
			return nil
		}
		ok, err := c.tryCoordinate(ctx, k)
		if err != nil {
			return err
		}
		if ok {
			coordinating.Store(true)
			err := c.coordinateLeased(ctx, k, ck)
			coordinating.Store(false)
			if err != nil {
				cancel(err)
				<-werr
				return err
			}
			rdb.HSet(context.WithoutCancel(ctx), k.meta(), metaFinished, "1")
			rdb.Del(context.WithoutCancel(ctx), k.coord())
			finished = true
			cancel(nil)
			<-werr
			return nil
		}
		select {
		case err := <-werr:
			if err != nil {
				return err
			}
			if errors.Is(context.Cause(ctx), ErrStopped) {
				return ErrStopped
			}
			return nil
		case <-ctx.Done():
			<-werr
			return context.Cause(ctx)
		case <-time.After(c.opt.LeaseTTL / 3):
		}
	}
}

// checkLayout refuses a crawl whose keys an older spider wrote (its tasks
// under the one tag {spider:NAME}).
func checkLayout(ctx context.Context, rdb redis.UniversalClient, k keys, crawl string) error {
	pipe := rdb.Pipeline()
	old := pipe.Exists(ctx, k.oldCreated())
	layout := pipe.HGet(ctx, k.meta(), metaLayout)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("cannot reach Redis: %w", err)
	}
	v := layout.Val()
	if old.Val() > 0 {
		v = "1 (every key under {spider:" + crawl + "})"
	}
	if v != "" && v != layoutVersion {
		return fmt.Errorf("cannot run layered crawl %q: an older spider created its keys on this Redis (layout %q, this spider's is %q); finish it with that version, or remove it with spider drop --crawl %s and start over", crawl, v, layoutVersion, crawl)
	}
	return nil
}

// tryCoordinate takes the coordinator role if it is free and this data
// directory may hold the crawl.
func (c *Crawler) tryCoordinate(ctx context.Context, k keys) (bool, error) {
	rdb := c.opt.Redis
	created, err := rdb.HExists(ctx, k.meta(), metaLayout).Result()
	if err != nil {
		return false, fmt.Errorf("cannot reach Redis: %w", err)
	}
	_, statErr := os.Stat(filepath.Join(c.root, ManifestFile))
	if created && statErr != nil {
		return false, nil // a worker: the crawl's state is in another data directory
	}
	lock, err := c.coordLock(k)
	if err != nil {
		return false, err
	}
	ok, err := lock.TryAcquire(ctx)
	if err != nil || !ok {
		return false, err
	}
	if err := rdb.HSet(ctx, k.meta(), metaLayout, layoutVersion).Err(); err != nil {
		return false, err
	}
	c.log.Info("layered: coordinating", "crawl", c.opt.Crawl, "node", c.opt.NodeID)
	return true, nil
}

// coordValue is the coordinator lease's value: "NODEID/TOKEN", the token
// random per process, so that another process with the same NodeID that
// took the lease after this one's expired is never taken for this one.
func (c *Crawler) coordValue() string { return c.opt.NodeID + "/" + c.instance }

// coordLock is the coordinator lease: the key k.coord() held by coordValue
// for LeaseTTL.
func (c *Crawler) coordLock(k keys) (*cluster.Lock, error) {
	return cluster.NewLock(c.opt.Redis, k.coord(), c.coordValue(), c.opt.LeaseTTL)
}

// coordinateLeased runs the rounds with the map tasks on Redis, keeping the
// coordinator lease alive.
func (c *Crawler) coordinateLeased(ctx context.Context, k keys, ck cluster.Keys) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The coordinator's row of the crawl-wide report: the records of this
	// data directory's page store (earlier runs counted from
	// records.jsonl), final and recounted at the end.
	base, err := crawl.CountsOf(c.cfg.Data)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot count the records of %s for the crawl's report: %w", c.cfg.Data, err)
	}
	c.repMu.Lock()
	c.repCounts = cluster.Counts(base)
	c.repMu.Unlock()
	if err := cluster.ClearCrawlState(ctx, c.opt.Redis, ck); err != nil {
		return err
	}
	rep, err := cluster.StartReporter(ctx, c.opt.Redis, ck, cluster.ReporterConfig{Node: CoordinatorNode, Role: cluster.RoleLayered, Source: c.coordReport, Fresh: true, Logger: c.log})
	if err != nil {
		return err
	}
	var runErr error
	defer func() {
		state := cluster.ReportDone
		switch cause := context.Cause(ctx); {
		case runErr == nil:
		case errors.Is(runErr, ErrStopped), errors.Is(cause, ErrStopped), errors.Is(runErr, context.Canceled):
			state = cluster.ReportStopped
		default:
			state = cluster.ReportFailed
		}
		wctx := context.WithoutCancel(ctx)
		if all, err := crawl.CountsOf(c.cfg.Data); err == nil {
			c.repMu.Lock()
			c.repCounts = cluster.Counts(all)
			c.repMu.Unlock()
		}
		if err := rep.Stop(wctx, state); err != nil {
			c.log.Warn("layered: cannot publish the coordinator's final report", "err", err)
		}
		if err := cluster.SetCrawlState(wctx, c.opt.Redis, ck, state); err != nil {
			c.log.Warn("layered: cannot record the crawl's state", "err", err)
		}
	}()
	lock, err := c.coordLock(k)
	if err != nil {
		return err
	}
	go func() {
		// Renew only our own lease (compare and extend in one script);
		// a renewal that fails on the way is retried at the next tick.
		if err := lock.Keep(ctx, nil); err != nil {
			cancel(fmt.Errorf("lost the coordinator role (lease expired): restart this process to take it back: %w", err))
		}
	}()
	runErr = c.coordinate(ctx, &redisMapper{c: c, k: k})
	if cause := context.Cause(ctx); runErr != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		runErr = cause
	}
	return runErr
}

// workerID is a new worker id, NODEID-N with N from the crawl's counter in
// Redis (INCR): unique even between processes that share a NodeID.
func (c *Crawler) workerID(ctx context.Context, k keys) (string, error) {
	n, err := c.opt.Redis.HIncrBy(ctx, k.meta(), metaSeq, 1).Result()
	if err != nil {
		return "", fmt.Errorf("cannot register as a worker: %w", err)
	}
	return c.opt.NodeID + "-" + strconv.FormatInt(n, 10), nil
}

// work is the worker loop every process runs, as worker id: take a task
// (moved atomically from its shard's todo list to this worker's processing
// list of that shard), run it, post its output and remove it from the
// processing list in one transaction, then wake the coordinator. A worker
// whose heartbeat expires has its processing lists handed out again by
// the coordinator.
func (c *Crawler) work(ctx context.Context, k keys, id string, coordinating *atomic.Bool) error {
	rdb := c.opt.Redis
	beat := func(ctx context.Context) error {
		if err := rdb.SAdd(ctx, k.workers(), id).Err(); err != nil {
			return err
		}
		return rdb.Set(ctx, k.hb(id), "1", c.opt.LeaseTTL).Err()
	}
	if err := beat(ctx); err != nil {
		return fmt.Errorf("cannot register as a worker: %w", err)
	}
	defer rdb.Del(context.WithoutCancel(ctx), k.hb(id))
	// The heartbeat ends before work returns (and before the deferred Del
	// above): a beat in flight could otherwise set the key again after it
	// was deleted, or log after the command returned.
	defer cluster.Every(ctx, c.opt.LeaseTTL/3, beat, func(err error) {
		c.log.Warn("layered: heartbeat failed", "err", err)
	})()
	// The shard to look at first, random each time: tasks wait about as
	// long in every shard.
	for {
		if ctx.Err() != nil {
			return nil
		}
		shard, raw, err := c.take(ctx, k, id, rand.IntN(Shards))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.log.Warn("layered: cannot take a task", "err", err)
			time.Sleep(time.Second)
			continue
		}
		if raw == "" {
			select {
			case <-ctx.Done():
			case <-time.After(takePoll):
			}
			continue
		}
		var t Task
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			c.log.Error("layered: dropping an unreadable task", "err", err)
			rdb.LRem(ctx, k.proc(shard, id), 1, raw)
			continue
		}
		c.m.tasks.WithLabelValues(t.Kind).Inc()
		local := coordinating.Load()
		p, err := c.runTask(ctx, t, local)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the task stays in the processing list; redone after the lease
			}
			return fmt.Errorf("task %s: %w", t.ID(), err)
		}
		p.Worker = id
		b, err := encodePayload(p)
		if err != nil {
			return err
		}
		_, err = rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			pp.Set(ctx, k.out(t), b, 0)
			pp.LRem(ctx, k.proc(shard, id), 1, raw)
			return nil
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cannot post the output of task %s: %w", t.ID(), err)
		}
		c.tasksDone.Add(1)
		// The wake-up: a coordinator that misses it finds the output at
		// its next look (redisMapper.run).
		if err := rdb.RPush(ctx, k.done(), t.ID()).Err(); err != nil {
			c.log.Warn("layered: cannot wake the coordinator", "task", t.ID(), "err", err)
		}
		if (t.Kind == KindFetch || t.Kind == KindRevisit) && !local {
			os.RemoveAll(taskDir(c.root, t)) // the coordinator has it now
		}
	}
}

// takePoll is how long a worker waits when no shard has a task.
const takePoll = 100 * time.Millisecond

// take moves the first task of the first shard that has one, from shard
// first on, into worker id's processing list of that shard; raw is "" when
// none has a task.
func (c *Crawler) take(ctx context.Context, k keys, id string, first int) (shard int, raw string, err error) {
	for i := range Shards {
		shard = (first + i) % Shards
		raw, err = c.opt.Redis.LMove(ctx, k.todo(shard), k.proc(shard, id), "LEFT", "RIGHT").Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		return shard, raw, err
	}
	return 0, "", nil
}

// runTask runs one task and builds its payload; local says the coordinator
// is this process, so a fetch task's pages are already where it reads them.
func (c *Crawler) runTask(ctx context.Context, t Task, local bool) (*payload, error) {
	p := &payload{Task: t.ID()}
	switch t.Kind {
	case KindCluster:
		blocks, err := c.runCluster(ctx, t)
		p.Blocks = blocks
		return p, err
	case KindFetch, KindRevisit:
	default:
		return nil, fmt.Errorf("unknown task kind %q (is every process the same spider version?)", t.Kind)
	}
	dir := taskDir(c.root, t)
	res, err := c.runFetch(ctx, dir, t)
	if err != nil {
		return nil, err
	}
	p.Fetch = res
	if local {
		return p, nil
	}
	recs, err := store.OpenRecords(dir, store.Options{Logger: c.log})
	if err != nil {
		return nil, err
	}
	_, err = recs.Iterate(func(r store.Record) error { p.Records = append(p.Records, r); return nil })
	recs.Close()
	if err != nil {
		return nil, err
	}
	pages, err := store.OpenPageFiles(store.DataDir(dir).Pages(), store.Options{Logger: c.log})
	if err != nil {
		return nil, err
	}
	defer pages.Close()
	p.Bodies = make([][]byte, len(p.Records))
	for i, r := range p.Records {
		if r.PageNo < 0 {
			continue
		}
		pg, err := pages.ReadRecord(r)
		if err != nil {
			return nil, err
		}
		p.Bodies[i] = pg.Body
	}
	return p, nil
}

// redisMapper hands the map tasks out on Redis and gathers their outputs.
type redisMapper struct {
	c *Crawler
	k keys
}

func (m *redisMapper) fetch(ctx context.Context, tasks []Task) ([]*FetchResult, error) {
	have := func(t Task) bool {
		_, err := os.Stat(filepath.Join(taskDir(m.c.root, t), ResultFile))
		return err == nil
	}
	err := m.run(ctx, tasks, have, func(t Task, p *payload) error { return m.ingest(t, p) })
	if err != nil {
		return nil, err
	}
	out := make([]*FetchResult, len(tasks))
	for i, t := range tasks {
		var r FetchResult
		if err := readJSON(filepath.Join(taskDir(m.c.root, t), ResultFile), &r); err != nil {
			return nil, fmt.Errorf("cannot read the result of task %s: %w", t.ID(), err)
		}
		out[i] = &r
	}
	return out, nil
}

func (m *redisMapper) cluster(ctx context.Context, tasks []Task) ([]denoise.BlockResult, error) {
	got := map[string][]denoise.BlockResult{}
	err := m.run(ctx, tasks, func(t Task) bool { _, ok := got[t.ID()]; return ok }, func(t Task, p *payload) error {
		got[t.ID()] = p.Blocks
		return nil
	})
	if err != nil {
		return nil, err
	}
	var all []denoise.BlockResult
	for _, t := range tasks {
		all = append(all, got[t.ID()]...)
	}
	return all, nil
}

// ingest writes a remote fetch task's pages and records into the task's
// directory here, then its result (the marker that the task is done).
func (m *redisMapper) ingest(t Task, p *payload) error {
	dir := taskDir(m.c.root, t)
	if _, err := os.Stat(filepath.Join(dir, ResultFile)); err == nil {
		return nil // run by this process
	}
	if p.Fetch == nil {
		return fmt.Errorf("output of task %s holds no fetch result", t.ID())
	}
	// A half-ingested directory from a crash is rebuilt from scratch.
	if err := errors.Join(os.RemoveAll(store.DataDir(dir).Pages()), removeIfExists(store.DataDir(dir).Records())); err != nil {
		return err
	}
	pages, err := store.OpenPageFiles(store.DataDir(dir).Pages(), store.Options{Logger: m.c.log})
	if err != nil {
		return err
	}
	recs, err := store.OpenRecords(dir, store.Options{Logger: m.c.log})
	if err != nil {
		pages.Close()
		return err
	}
	for i, r := range p.Records {
		if r.PageNo >= 0 && i < len(p.Bodies) && p.Bodies[i] != nil {
			no, err := pages.Append(r.FinalURL, r.FetchedAt, p.Bodies[i])
			r.BodyCRC = store.BodyChecksum(p.Bodies[i])
			if err != nil {
				pages.Close()
				recs.Close()
				return err
			}
			r.PageNo = no
		} else {
			r.PageNo = -1
		}
		if err := recs.Append(r); err != nil {
			pages.Close()
			recs.Close()
			return err
		}
	}
	if err := errors.Join(pages.Close(), recs.Close()); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, ResultFile), p.Fetch)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// run pushes the tasks not yet done (nor queued or held by a worker),
// then waits for their outputs, handing out again the tasks of workers
// whose heartbeat expired.
func (m *redisMapper) run(ctx context.Context, tasks []Task, have func(Task) bool, ingest func(Task, *payload) error) error {
	rdb, k := m.c.opt.Redis, m.k
	left := map[string]Task{}
	for _, t := range tasks {
		if !have(t) {
			left[t.ID()] = t
		}
	}
	take := func(id string) error {
		t, ok := left[id]
		if !ok {
			return nil
		}
		b, err := rdb.Get(ctx, k.out(t)).Bytes()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		p, err := decodePayload(b)
		if err != nil {
			return err
		}
		if err := ingest(t, p); err != nil {
			return err
		}
		delete(left, id)
		return rdb.Del(ctx, k.out(t)).Err()
	}
	// Outputs posted while no coordinator was listening.
	for id := range left {
		if err := take(id); err != nil {
			return err
		}
	}
	queued, err := m.listed(ctx)
	if err != nil {
		return err
	}
	push := map[int][]any{} // by shard, in task order
	for _, t := range tasks {
		if _, ok := left[t.ID()]; ok && !queued[t.ID()] {
			b, err := json.Marshal(t)
			if err != nil {
				return err
			}
			push[shardOf(t)] = append(push[shardOf(t)], b)
		}
	}
	for shard := range Shards {
		if len(push[shard]) == 0 {
			continue
		}
		if err := rdb.RPush(ctx, k.todo(shard), push[shard]...).Err(); err != nil {
			return fmt.Errorf("cannot hand out tasks: %w", err)
		}
	}
	lastReap := time.Now()
	for len(left) > 0 {
		res, err := rdb.BLPop(ctx, time.Second, k.done()).Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("cannot wait for task outputs: %w", err)
		default:
			if err := take(res[1]); err != nil {
				return err
			}
		}
		if time.Since(lastReap) >= m.c.opt.LeaseTTL/2 || errors.Is(err, redis.Nil) {
			lastReap = time.Now()
			if err := m.reap(ctx); err != nil {
				return err
			}
			for id := range left { // a done notice may have been consumed before a restart
				if err := take(id); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// listed returns the IDs of the tasks queued or held by workers.
func (m *redisMapper) listed(ctx context.Context) (map[string]bool, error) {
	rdb, k := m.c.opt.Redis, m.k
	out := map[string]bool{}
	var lists []string
	ws, err := rdb.SMembers(ctx, k.workers()).Result()
	if err != nil {
		return nil, err
	}
	for shard := range Shards {
		lists = append(lists, k.todo(shard))
		for _, w := range ws {
			lists = append(lists, k.proc(shard, w))
		}
	}
	for _, l := range lists {
		items, err := rdb.LRange(ctx, l, 0, -1).Result()
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			var t Task
			if json.Unmarshal([]byte(it), &t) == nil {
				out[t.ID()] = true
			}
		}
	}
	return out, nil
}

// reap hands out again the tasks held by workers whose heartbeat expired.
func (m *redisMapper) reap(ctx context.Context) error {
	rdb, k := m.c.opt.Redis, m.k
	ws, err := rdb.SMembers(ctx, k.workers()).Result()
	if err != nil {
		return err
	}
	for _, w := range ws {
		alive, err := rdb.Exists(ctx, k.hb(w)).Result()
		if err != nil {
			return err
		}
		if alive > 0 {
			continue
		}
		for shard := range Shards {
			for {
				_, err := rdb.LMove(ctx, k.proc(shard, w), k.todo(shard), "LEFT", "LEFT").Result()
				if errors.Is(err, redis.Nil) {
					break
				}
				if err != nil {
					return err
				}
				m.c.log.Info("layered: task of a silent worker handed out again", "worker", w)
			}
		}
		rdb.SRem(ctx, k.workers(), w)
	}
	return nil
}
