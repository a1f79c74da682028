package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
)

// Task is one URL of a task pool, with what the crawl needs to fetch it.
type Task struct {
	URL   string `json:"u"`
	Depth int    `json:"d,omitempty"`
	Hops  int    `json:"r,omitempty"`
}

// Taken is a task handed out by Host.Take; Raw (and its part) identify it for
// Complete.
type Taken struct {
	Task
	Raw  string
	part int
}

// HostOptions configures a Host.
type HostOptions struct {
	// Config is the system's configuration (validated).
	Config *Config
	// Network and ID name this host; its address is "NETWORK/ID".
	Network, ID string
	// Local is the host's own Redis (local_Redis); Center its center's Redis.
	Local, Center redis.UniversalClient
	// LocalURL is the URL of Local as the center must dial it (it is registered in the
	// center's Redis).
	LocalURL string
	// Instance tells this host's processes from another process started with the same
	// Network and ID (cluster.Member.Instance): Start refuses an address whose live
	// holder has another Instance (cluster.ErrNodeIDInUse). mixed.Run passes the data
	// directory's token (store.NodeToken), so a host restarted on its data directory
	// takes its address back at once. Empty: "host:NET/ID", the same for every process
	// of the address, so nothing is refused (as before instances existed).
	Instance string
	// AnswerDelay makes the host wait this long before answering each request: a slow
	// host, for tests and experiments. Default 0.
	AnswerDelay time.Duration
	// Logger receives warnings; nil discards.
	Logger *slog.Logger
	// Registerer receives the host's protocol metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// ErrDone is returned by Host.Start when the crawl is already finished.
var ErrDone = errors.New("the crawl is already done")

// Host is the protocol's side of one crawler host: its local_Redis (finish_URL,
// task_pool, URL_pool), the local pass, answers to its center's requests, and
// membership in its network. Safe for concurrent use after Start.
type Host struct {
	opt  HostOptions
	cfg  *Config
	addr string
	k    nodeKeys
	ck   nodeKeys
	tr   *transport
	mem  *cluster.Membership
	m    *metrics
	log  *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
	next   atomic.Uint32 // the part Take and LocalPass start from, turning
}

// NewHost checks the options and returns a host that has done no I/O yet.
func NewHost(opt HostOptions) (*Host, error) {
	if opt.Config == nil {
		return nil, errors.New("cannot start a protocol host without a configuration")
	}
	if err := CheckName(opt.Network); err != nil {
		return nil, fmt.Errorf("cannot start a protocol host: network: %w", err)
	}
	if _, ok := opt.Config.Network(opt.Network); !ok {
		return nil, fmt.Errorf("cannot start a protocol host: network %q is not in the configuration: add it under networks:", opt.Network)
	}
	if err := CheckName(opt.ID); err != nil {
		return nil, fmt.Errorf("cannot start a protocol host: host id: %w", err)
	}
	if opt.Local == nil || opt.Center == nil || opt.LocalURL == "" {
		return nil, errors.New("cannot start a protocol host: its own Redis and its center's Redis are both required")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	addr := HostAddr(opt.Network, opt.ID)
	h := &Host{opt: opt, cfg: opt.Config, addr: addr, k: keysFor(opt.Config.Crawl, addr),
		ck: keysFor(opt.Config.Crawl, opt.Network), m: newMetrics(opt.Registerer, addr), log: opt.Logger}
	h.tr = &transport{crawl: opt.Config.Crawl, self: addr, rdb: opt.Local, k: h.k, m: h.m, log: h.log,
		resolve: func(_ context.Context, to string) (redis.UniversalClient, error) {
			if to != opt.Network {
				return nil, fmt.Errorf("host %s sends only to its center, not to %s", addr, to)
			}
			return opt.Center, nil
		}}
	return h, nil
}

// Taken delivers the error (wrapping cluster.ErrNodeIDInUse) of a heartbeat that found
// the host's address held by another live process, which joined while this host was
// cut off from its center's Redis past the TTL; the host's heartbeats stop then, and
// its crawl loop should stop too. Nil before Start.
func (h *Host) Taken() <-chan error {
	if h.mem == nil {
		return nil
	}
	return h.mem.Taken()
}

// Config returns the system's configuration the host was made with.
func (h *Host) Config() *Config { return h.cfg }

// Addr returns the host's node address "NET/ID".
func (h *Host) Addr() string { return h.addr }

// IDHint is what a host refused for its address (cluster.ErrNodeIDInUse) is told to do.
const IDHint = "give each host of a network its own --host-id"

// Start checks that no live host of another Instance holds the address (else an error
// wrapping cluster.ErrNodeIDInUse that names that host's pid and machine, before
// anything is touched) and that no live center runs another configuration
// (Fingerprint), recovers what a crash left half-done (tasks in processing go
// back to task_pool, frames back to their queues), registers the host with its center
// (so URLs are assigned to it) and joins the network's membership, then runs the local
// pass, the answers and the forwarder until Close. It returns ErrDone if the crawl is
// finished.
func (h *Host) Start(ctx context.Context) error {
	if done, err := h.Done(ctx); err != nil {
		return err
	} else if done {
		return ErrDone
	}
	keys, err := cluster.NewKeys(HostMembersCrawl(h.cfg.Crawl, h.opt.Network))
	if err != nil {
		return err
	}
	instance := h.opt.Instance
	if instance == "" {
		instance = "host:" + h.addr
	}
	h.mem = cluster.NewMembership(h.opt.Center, keys, cluster.MembershipConfig{
		Heartbeat: time.Duration(h.cfg.Heartbeat), TTL: time.Duration(h.cfg.MemberTTL), Logger: h.log, IDHint: IDHint})
	if err := h.mem.Check(ctx, h.opt.ID, instance); err != nil {
		return fmt.Errorf("cannot start host %s: %w", h.addr, err)
	}
	if err := checkPeers(ctx, h.opt.Center, h.cfg, ""); err != nil {
		return fmt.Errorf("cannot start host %s: %w", h.addr, err)
	}
	if err := checkOldLayout(ctx, h.opt.Local, h.cfg.Crawl, h.addr); err != nil {
		return fmt.Errorf("cannot start host %s: %w", h.addr, err)
	}
	if err := h.tr.recover(ctx); err != nil {
		return err
	}
	for i := range Parts {
		for {
			err := h.opt.Local.LMove(ctx, h.k.taskProc(i), h.k.taskPool(i), "RIGHT", "LEFT").Err()
			if errors.Is(err, redis.Nil) {
				break
			}
			if err != nil {
				return fmt.Errorf("cannot recover task_pool:processing: %w", err)
			}
		}
	}
	if err := h.eachPart(ctx, func(p redis.Pipeliner, i int) { p.Del(ctx, h.k.leaving(i)) }); err != nil { // a host that left may come back
		return fmt.Errorf("cannot clear the leaving mark of host %s: %w", h.addr, err)
	}
	reg := h.opt.Center.TxPipeline()
	reg.HSet(ctx, h.ck.registered(), h.opt.ID, h.opt.LocalURL)
	reg.SRem(ctx, h.ck.left(), h.opt.ID)
	if _, err := reg.Exec(ctx); err != nil {
		return fmt.Errorf("cannot register host %s with its center's Redis: %w", h.addr, err)
	}
	if _, err := h.mem.Join(ctx, cluster.Member{ID: h.opt.ID, Weight: 1, Instance: instance, Meta: map[string]string{"config": h.cfg.Fingerprint()}}); err != nil {
		return fmt.Errorf("cannot join network %s as host %s: %w", h.opt.Network, h.opt.ID, err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wg.Add(3)
	go func() { defer h.wg.Done(); h.tr.forward(lctx) }()
	go func() { defer h.wg.Done(); h.serve(lctx) }()
	go func() { defer h.wg.Done(); h.localLoop(lctx) }()
	return nil
}

// Close stops the host's loops and its heartbeats without leaving: the host stays
// registered, its URLs wait in its Redis for its return (as after a crash).
func (h *Host) Close() {
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
		h.cancel = nil
	}
	if h.mem != nil {
		h.mem.Close()
	}
}

// Leave takes the host out of its network without losing anything. In order: it marks
// itself leaving in its own Redis (from then on it refuses the center's hand-outs, which
// stay in task_URL for the remaining hosts), hands its unfinished tasks back to its
// center, submits what is left in URL_pool as flag-1 frames, delivers its whole outbox,
// and only then moves itself from the center's registered hosts to its left hosts (the
// center still accepts frames of a host that left, so frames delivered but not yet
// handled are not dropped as from an unknown sender) and leaves the membership. While
// it still holds work it stays registered, so the termination scan sees that work.
// Call it after the crawl loop stopped taking tasks, and Close after it. If the center's
// Redis is unreachable it returns an error; the work stays in the host's Redis, and
// running the host again (and leaving again) finishes the job.
func (h *Host) Leave(ctx context.Context) error {
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
		h.cancel = nil
	}
	now := time.Now().UnixMilli()
	if err := h.eachPart(ctx, func(p redis.Pipeliner, i int) { p.Set(ctx, h.k.leaving(i), now, 0) }); err != nil {
		return fmt.Errorf("cannot mark host %s leaving: %w", h.addr, err)
	}
	if err := h.tr.recover(ctx); err != nil {
		return err
	}
	var lists []string
	for i := range Parts {
		lists = append(lists, h.k.taskProc(i), h.k.taskPool(i))
	}
	for _, key := range lists {
		for {
			items, err := h.opt.Local.LRange(ctx, key, 0, 255).Result()
			if err != nil {
				return fmt.Errorf("cannot read %s: %w", key, err)
			}
			if len(items) == 0 {
				break
			}
			vals := make([]any, len(items))
			for i, it := range items {
				vals[i] = it
			}
			if err := h.opt.Center.RPush(ctx, h.ck.taskURL(), vals...).Err(); err != nil {
				return fmt.Errorf("cannot hand tasks back to the center: %w", err)
			}
			if err := h.opt.Local.LTrim(ctx, key, int64(len(items)), -1).Err(); err != nil {
				return fmt.Errorf("cannot trim %s: %w", key, err)
			}
		}
	}
	// URLs discovered but not yet submitted: through the protocol like any others.
	for {
		kept, dropped, err := h.LocalPass(ctx)
		if err != nil {
			return err
		}
		if kept == 0 && dropped == 0 {
			break
		}
	}
	if err := h.tr.flush(ctx); err != nil {
		return fmt.Errorf("cannot leave network %s yet: %w; the frames stay in this host's Redis: run the host again to finish", h.opt.Network, err)
	}
	p := h.opt.Center.TxPipeline()
	p.HDel(ctx, h.ck.registered(), h.opt.ID)
	p.SAdd(ctx, h.ck.left(), h.opt.ID)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("cannot deregister host %s: %w", h.addr, err)
	}
	// Requests to a host that left need no answer: its rounds leave it out.
	h.opt.Local.Del(ctx, h.k.inbox(), h.k.inboxProc())
	if h.mem != nil {
		return h.mem.Leave(ctx)
	}
	return nil
}

// Done reports whether the whole system has finished (a center set the done flag).
func (h *Host) Done(ctx context.Context) (bool, error) {
	n, err := h.opt.Center.Exists(ctx, h.ck.done()).Result()
	if err != nil {
		return false, fmt.Errorf("cannot read the done flag from the center's Redis: %w", err)
	}
	return n > 0, nil
}

// eachPart runs fn for every part in one pipeline (one round trip per Redis Cluster
// master) and returns the first error.
func (h *Host) eachPart(ctx context.Context, fn func(p redis.Pipeliner, i int)) error {
	p := h.opt.Local.Pipeline()
	for i := range Parts {
		fn(p, i)
	}
	_, err := p.Exec(ctx)
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// AddSeeds puts seed URLs into URL_pool: they go through the protocol like any
// discovered URL, so every host may be given the same seeds.
func (h *Host) AddSeeds(ctx context.Context, seeds []Task) error {
	byPart := map[int][]Task{}
	for _, s := range seeds {
		byPart[PartOf(s.URL)] = append(byPart[PartOf(s.URL)], s)
	}
	for i, ts := range byPart {
		if err := seedScript.Run(ctx, h.opt.Local, []string{h.k.urlPool(i)}, triples(ts)...).Err(); err != nil {
			return fmt.Errorf("cannot add seeds to URL_pool: %w", err)
		}
	}
	return nil
}

// Take moves about n tasks (at least one from every part that has any, up to
// n/Parts rounded up from each) from task_pool to task_pool:processing and returns
// them. Each must end with Complete (or stay for the next start to re-queue).
func (h *Host) Take(ctx context.Context, n int) ([]Taken, error) {
	per := max(1, (n+Parts-1)/Parts)
	b := newScriptBatch(h.opt.Local)
	calls := make([]*scriptCall, Parts)
	for i := range Parts {
		calls[i] = b.add(ctx, takeScript, []string{h.k.taskPool(i), h.k.taskProc(i)}, per)
	}
	// Tasks taken from parts whose script succeeded are returned even when another
	// part failed: they are in processing and must reach the frontier.
	berr := b.exec(ctx)
	var out []Taken
	for i, c := range calls {
		items, err := c.cmd.StringSlice()
		if err != nil && berr != nil {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot take tasks from task_pool: %w", err)
		}
		for _, raw := range items {
			var t Task
			if err := json.Unmarshal([]byte(raw), &t); err != nil || t.URL == "" {
				h.log.Error("dropping an unreadable task", "host", h.addr, "task", raw)
				h.opt.Local.LRem(ctx, h.k.taskProc(i), 1, raw)
				continue
			}
			out = append(out, Taken{Task: t, Raw: raw, part: i})
		}
	}
	if len(out) == 0 && berr != nil {
		return nil, fmt.Errorf("cannot take tasks from task_pool: %w", berr)
	}
	return out, nil
}

// Complete ends a task and adds its discovered URLs to URL_pool (the task's part) in
// one step.
func (h *Host) Complete(ctx context.Context, t Taken, discovered []Task) error {
	args := append([]any{t.Raw}, triples(discovered)...)
	if err := completeScript.Run(ctx, h.opt.Local, []string{h.k.taskProc(t.part), h.k.urlPool(t.part), h.k.partStats(t.part)}, args...).Err(); err != nil {
		return fmt.Errorf("cannot complete task %s in this host's Redis (the task stays in task_pool:processing for the next start): %w", t.URL, err)
	}
	return nil
}

func triples(ts []Task) []any {
	out := make([]any, 0, 3*len(ts))
	for _, t := range ts {
		out = append(out, t.URL, t.Depth, t.Hops)
	}
	return out
}

// LocalPass runs the local pass once: up to one batch of URL_pool (taken from its
// parts in turn) is checked against finish_URL and the survivors are queued to the
// center as a flag-1 frame; the URLs leave URL_pool only after the frame is queued
// (queueFrameScript). It returns the URLs kept and dropped; 0, 0 means URL_pool was
// empty. Calls must not overlap.
func (h *Host) LocalPass(ctx context.Context) (kept, dropped int, err error) {
	lens := make([]*redis.IntCmd, Parts)
	if err := h.eachPart(ctx, func(p redis.Pipeliner, i int) { lens[i] = p.HLen(ctx, h.k.urlPool(i)) }); err != nil {
		return 0, 0, fmt.Errorf("cannot run the local pass: %w", err)
	}
	first := int(h.next.Add(1)) % Parts
	want := make([]int, Parts)
	for left, j := h.cfg.Batch, 0; j < Parts && left > 0; j++ {
		i := (first + j) % Parts
		want[i] = min(int(lens[i].Val()), left)
		left -= want[i]
	}
	read := make([]*redis.KeyValueSliceCmd, Parts)
	if err := h.eachPart(ctx, func(p redis.Pipeliner, i int) {
		if want[i] > 0 {
			read[i] = p.HRandFieldWithValues(ctx, h.k.urlPool(i), want[i])
		}
	}); err != nil {
		return 0, 0, fmt.Errorf("cannot run the local pass: %w", err)
	}
	type entry struct {
		u, v string
		part int
	}
	var es []entry
	for i, c := range read {
		if c != nil {
			for _, kv := range c.Val() {
				es = append(es, entry{kv.Key, kv.Value, i})
			}
		}
	}
	if len(es) == 0 {
		return 0, 0, nil
	}
	us := make([]string, len(es))
	for i, e := range es {
		us[i] = e.u
	}
	seen, err := h.finished(ctx, us)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot run the local pass: %w", err)
	}
	args := []any{h.opt.Network, h.opt.ID, h.opt.Network, time.Now().UnixMilli(), 0}
	del := map[int][]any{}
	for i, e := range es {
		del[e.part] = append(del[e.part], e.u, e.v)
		if seen[i] {
			dropped++
			continue
		}
		d, r, _ := strings.Cut(e.v, ":")
		args = append(args, e.u, d, r)
		kept++
	}
	args[4] = dropped
	if err := queueFrameScript.Run(ctx, h.opt.Local, []string{h.k.outbox(), h.k.seq(), h.k.stats()}, args...).Err(); err != nil {
		return 0, 0, fmt.Errorf("cannot run the local pass: %w", err)
	}
	b := newScriptBatch(h.opt.Local)
	for i, args := range del {
		b.add(ctx, poolDelScript, []string{h.k.urlPool(i)}, args...)
	}
	if err := b.exec(ctx); err != nil {
		// The frame is queued: the URLs left behind go again in a later frame, which the
		// center drops as claimed.
		return kept, dropped, fmt.Errorf("cannot remove submitted URLs from URL_pool: %w", err)
	}
	h.m.urls.WithLabelValues("submitted").Add(float64(kept))
	h.m.urls.WithLabelValues("local_dup").Add(float64(dropped))
	return kept, dropped, nil
}

// finished reports, for each URL, whether its hash is in finish_URL (its part).
func (h *Host) finished(ctx context.Context, us []string) ([]bool, error) {
	byPart := map[int][]int{} // part → indexes in us
	for i, u := range us {
		byPart[PartOf(u)] = append(byPart[PartOf(u)], i)
	}
	cmds := map[int]*redis.BoolSliceCmd{}
	if err := h.eachPart(ctx, func(p redis.Pipeliner, i int) {
		if idx := byPart[i]; len(idx) > 0 {
			hs := make([]any, len(idx))
			for j, k := range idx {
				hs[j] = URLHash(us[k])
			}
			cmds[i] = p.SMIsMember(ctx, h.k.finishURL(i), hs...)
		}
	}); err != nil {
		return nil, fmt.Errorf("cannot look up finish_URL: %w", err)
	}
	out := make([]bool, len(us))
	for i, c := range cmds {
		for j, in := range c.Val() {
			out[byPart[i][j]] = in
		}
	}
	return out, nil
}

// localLoop runs the local pass every Flush, as many batches as URL_pool holds.
func (h *Host) localLoop(ctx context.Context) {
	t := time.NewTicker(time.Duration(h.cfg.Flush))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			kept, dropped, err := h.LocalPass(ctx)
			if err != nil {
				if ctx.Err() == nil {
					h.log.Warn("local pass failed", "host", h.addr, "err", err)
				}
				break
			}
			if kept == 0 && dropped == 0 {
				break
			}
		}
	}
}

// serve answers the center's requests (flag 2) from finish_URL.
func (h *Host) serve(ctx context.Context) {
	for ctx.Err() == nil {
		raw, f, ok, err := h.tr.next(ctx, 200*time.Millisecond)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("inbox", "host", h.addr, "err", err)
				sleep(ctx, 200*time.Millisecond)
			}
			continue
		}
		if !ok {
			continue
		}
		if err := h.answer(ctx, f); err != nil {
			if ctx.Err() == nil {
				h.log.Warn("cannot answer a request, will retry", "host", h.addr, "number", f.Number, "err", err)
				h.tr.retry(ctx, raw)
				sleep(ctx, 100*time.Millisecond)
			}
			continue
		}
		h.tr.ack(ctx, raw)
	}
}

// answer handles one inbox frame: a request from another host or network is answered
// with flag 3, every URL whose hash is in finish_URL set to 1. The host's own frames and
// anything that is not a request are dropped (the document's rule), and counted.
func (h *Host) answer(ctx context.Context, f *Frame) error {
	if f.Flag != FlagRequest {
		h.opt.Local.HIncrBy(ctx, h.k.stats(), "unexpected_frames", 1)
		return nil
	}
	if f.IP == h.addr {
		h.opt.Local.HIncrBy(ctx, h.k.stats(), "own_requests_ignored", 1)
		return nil
	}
	if h.opt.AnswerDelay > 0 {
		sleep(ctx, h.opt.AnswerDelay)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	us := make([]string, 0, len(f.URLSet))
	for u := range f.URLSet {
		us = append(us, u)
	}
	in, err := h.finished(ctx, us)
	if err != nil {
		return err
	}
	ans := &Frame{URLSet: make(map[string]uint8, len(us)), IP: h.addr, Number: f.Number, Flag: FlagAnswer}
	seen := 0
	for i, u := range us {
		if in[i] {
			ans.URLSet[u] = 1
			seen++
		} else {
			ans.URLSet[u] = 0
		}
	}
	p := h.opt.Local.TxPipeline()
	h.tr.queue(p, ctx, h.opt.Network, ans, false)
	p.HIncrBy(ctx, h.k.stats(), "requests_answered", 1)
	p.HIncrBy(ctx, h.k.stats(), "urls_marked_seen", int64(seen))
	_, err = p.Exec(ctx)
	return err
}

// HostState is the amount of work held in a host's local_Redis.
type HostState struct {
	TaskPool, Processing, URLPool, Inbox, Outbox int64
	Finished                                     int64
	Received                                     int64
	Stats                                        map[string]int64
}

// Busy reports whether the host holds any work.
func (s HostState) Busy() bool {
	return s.TaskPool+s.Processing+s.URLPool+s.Inbox+s.Outbox > 0
}

// ReadHostState reads a host's state from its Redis: its parts first, then its core
// in one transaction. Work moves between them only from a part to the core (the local
// pass queues a frame before it removes the frame's URLs from URL_pool), so reading in
// this order never misses work that moves during the read.
func ReadHostState(ctx context.Context, rdb redis.UniversalClient, crawl, addr string) (HostState, error) {
	k := keysFor(crawl, addr)
	var st HostState
	st.Stats = map[string]int64{}
	pp := rdb.Pipeline()
	type partCmds struct {
		pool, proc, urls, fin *redis.IntCmd
		recv                  *redis.StringCmd
		stats                 *redis.MapStringStringCmd
	}
	parts := make([]partCmds, Parts)
	for i := range Parts {
		parts[i] = partCmds{pp.LLen(ctx, k.taskPool(i)), pp.LLen(ctx, k.taskProc(i)), pp.HLen(ctx, k.urlPool(i)),
			pp.SCard(ctx, k.finishURL(i)), pp.Get(ctx, k.partReceived(i)), pp.HGetAll(ctx, k.partStats(i))}
	}
	if _, err := pp.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return HostState{}, fmt.Errorf("cannot read the state of host %s: %w", addr, err)
	}
	for _, c := range parts {
		st.TaskPool += c.pool.Val()
		st.Processing += c.proc.Val()
		st.URLPool += c.urls.Val()
		st.Finished += c.fin.Val()
		r, _ := c.recv.Int64()
		st.Received += r
		for f, n := range parseStats(c.stats.Val()) {
			st.Stats[f] += n
		}
	}
	p := rdb.TxPipeline()
	lens := []*redis.IntCmd{p.LLen(ctx, k.inbox()), p.LLen(ctx, k.inboxProc()), p.LLen(ctx, k.outbox()), p.LLen(ctx, k.outboxSend())}
	recv := p.Get(ctx, k.received())
	stats := p.HGetAll(ctx, k.stats())
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return HostState{}, fmt.Errorf("cannot read the state of host %s: %w", addr, err)
	}
	r, _ := recv.Int64()
	st.Received += r
	st.Inbox = lens[0].Val() + lens[1].Val()
	st.Outbox = lens[2].Val() + lens[3].Val()
	for f, n := range parseStats(stats.Val()) {
		st.Stats[f] += n
	}
	return st, nil
}

func parseStats(m map[string]string) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		n, _ := strconv.ParseInt(v, 10, 64)
		out[k] = n
	}
	return out
}
