package layered

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
)

// Run control of a distributed layered crawl (`spider control`, issue #24):
// every process follows the crawl's control word (cluster.Control) with
// its worker id.
//
//   - pause: no fetch task starts a new request (the one in flight
//     finishes); a cluster task or the coordinator's reduce goes on;
//   - resume: the tasks go on where they were;
//   - stop: each process lets its request in flight finish, then ends Run
//     with ErrStopped; the tasks not done stay on Redis and in the
//     coordinator's manifest, and the next run of the same command resumes
//     them (a task half done refetches only the URLs it had not finished
//     when it runs in the same data directory again);
//   - seed URLs: the coordinator takes them at the end of the fetch pass
//     in progress and queues those not crawled yet, under the crawl's
//     rules, as the next pass of the same round (as redirect targets are):
//     they are fetched at the current depth and their links go to the next
//     round. Seeds given after the last round's last pass wait for a next
//     run of the crawl (none runs once it is done).

// ErrStopped is returned by Run when `spider control stop` stopped the
// crawl: what is pending stays for the next run of the same command.
var ErrStopped = errors.New("the layered crawl was stopped by spider control; run the same command again to resume it")

// gate holds fetches while the crawl is paused or stopping, and counts the
// requests in flight. The zero gate is open.
type gate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	closed   bool // paused or stopping
	inFlight int
}

func (g *gate) init() {
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
}

// enter waits until the gate is open (or ctx ends: its error), then counts
// one request in flight; call leave after it.
func (g *gate) enter(ctx context.Context) error {
	g.mu.Lock()
	g.init()
	if g.closed {
		stop := context.AfterFunc(ctx, func() {
			g.mu.Lock()
			g.cond.Broadcast()
			g.mu.Unlock()
		})
		defer stop()
		for g.closed && ctx.Err() == nil {
			g.cond.Wait()
		}
	}
	defer g.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	g.inFlight++
	return nil
}

func (g *gate) leave() {
	g.mu.Lock()
	g.init()
	g.inFlight--
	g.cond.Broadcast()
	g.mu.Unlock()
}

// set closes (paused or stopping) or opens the gate.
func (g *gate) set(closed bool) {
	g.mu.Lock()
	g.init()
	g.closed = closed
	g.cond.Broadcast()
	g.mu.Unlock()
}

func (g *gate) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// drain waits until no request is in flight or ctx ends.
func (g *gate) drain(ctx context.Context) error {
	g.mu.Lock()
	g.init()
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer stop()
	for g.inFlight > 0 && ctx.Err() == nil {
		g.cond.Wait()
	}
	g.mu.Unlock()
	return ctx.Err()
}

// follow applies the crawl's control word on this process (node: its
// worker id) until ctx ends; on stop it returns ErrStopped once the
// requests in flight finished.
func (c *Crawler) follow(ctx context.Context, ctl *cluster.Control, node string) error {
	return ctl.Follow(ctx, node, c.log, func(ctx context.Context, cmd cluster.Command) error {
		c.gate.set(cmd.State == cluster.ControlPaused || cmd.State == cluster.ControlStopping)
		if cmd.State != cluster.ControlStopping {
			return nil
		}
		if err := c.gate.drain(ctx); err != nil {
			return err
		}
		if err := ctl.Ack(ctx, node, cmd.Seq); err != nil {
			return err
		}
		c.log.Info("layered: stopped by spider control: requests in flight finished, the rest stays for the next run")
		return ErrStopped
	})
}

// controlSeeds takes the seed URLs given by spider control and returns
// those under the crawl's rules that no round had yet, at depth r; nil
// without Redis.
func (c *Crawler) controlSeeds(ctx context.Context, r int, queued map[string]bool) ([]frontier.Request, error) {
	if c.ctl == nil {
		return nil, nil
	}
	var raw []string
	if err := c.ctl.DrainSeeds(ctx, func(_ context.Context, urls []string) error {
		raw = append(raw, urls...)
		return nil
	}); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, nil
	}
	// The crawl's rules (scope, filters) are the fetcher's: one in a
	// directory of its own, since a Fetcher locks its data directory.
	cfg := c.cfg
	cfg.Data = filepath.Join(c.root, "control-seeds")
	cfg.WARC = false
	f, err := crawl.NewFetcher(cfg, c.log, prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	reqs, rerr := f.Requests(raw)
	f.Close()
	os.RemoveAll(cfg.Data)
	if rerr != nil {
		c.log.Warn("layered: seeds refused", "err", rerr)
	}
	var out []frontier.Request
	for _, q := range reqs {
		if queued[q.URL] {
			continue
		}
		ok, err := c.set.Contains(ctx, q.URL)
		if err != nil {
			return nil, err
		}
		if !ok {
			queued[q.URL] = true
			out = append(out, frontier.Request{URL: q.URL, Depth: r, Priority: r})
		}
	}
	c.log.Info("layered: seeds added by spider control", "given", len(raw), "new", len(out), "round", r)
	return out, nil
}

// CoordinatorNode is the node id of the coordinator's row in the
// crawl-wide report: one row whichever process coordinates, since its
// figures are those of the data directory that holds the crawl.
const CoordinatorNode = "coordinator"

// coordReport is the coordinator's part of the crawl-wide report: the
// records of its page store (all runs), the round and pass.
func (c *Crawler) coordReport() cluster.NodeReport {
	c.repMu.Lock()
	defer c.repMu.Unlock()
	// A copy: the report is read after the lock is released, and Add below
	// must not grow repCounts' maps (it did: a race and inflated rows).
	r := cluster.NodeReport{Counts: c.repCounts.Clone(),
		Detail: map[string]int64{"round": c.repRound.Load(), "pass": c.repPass.Load(), "rounds": int64(c.opt.Rounds)}}
	if n := c.repRevisit.Load(); n > 0 {
		r.Detail["revisit_round"] = n // revisit rounds done (revisit.go)
	}
	if c.main != nil {
		r.Counts.Add(cluster.Counts(c.main.tally.Counts()))
	}
	if c.gate.isClosed() {
		r.State = cluster.ReportPaused
	}
	return r
}

// workerReport is a worker's part of the crawl-wide report: the URLs it
// fetched and the tasks it finished, in Detail (its records reach the
// coordinator's page store, whose row counts them).
func (c *Crawler) workerReport() cluster.NodeReport {
	r := cluster.NodeReport{Detail: map[string]int64{"fetched": c.fetchedN.Load(), "tasks": c.tasksDone.Load()}}
	if c.gate.isClosed() {
		r.State = cluster.ReportPaused
	}
	return r
}
