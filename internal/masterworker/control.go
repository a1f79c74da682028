package masterworker

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/frontier"
)

// ControlNode is the node name a master acknowledges control commands
// with; a worker acknowledges as "worker-N" (its work number). Workers
// follow the master for pause and seeds (a paused master hands out
// nothing) and apply stop themselves.
const ControlNode = "master"

// ErrStopped is returned by Master.Run when `spider control stop` stopped
// the crawl: the tasks out were answered, the workers were told to exit,
// what is pending stays pending for the next master run.
var ErrStopped = errors.New("the crawl was stopped by spider control; run the same master command again to resume it")

// follow applies the crawl's control word (cluster.Control) to the master:
// pause takes back the tasks still waiting on srq and hands out nothing;
// resume hands out again; seeds are recorded as discovered; stop waits for
// the tasks out (the workers finish them and exit) and returns ErrStopped
// without marking the crawl done: the next master run resumes it.
func (m *Master) follow(ctx context.Context, ctl *cluster.Control) error {
	return ctl.Follow(ctx, ControlNode, m.log, func(ctx context.Context, cmd cluster.Command) error {
		switch cmd.State {
		case cluster.ControlPaused, cluster.ControlStopping:
			m.held.Store(true)
			m.sched.Pause()
			m.takeBack(ctx)
		default:
			m.held.Store(false)
			m.sched.Resume()
		}
		m.popSeeds(ctx, ctl)
		if cmd.State != cluster.ControlStopping {
			return nil
		}
		for {
			m.takeBack(ctx) // a task pushed while Pause took effect
			m.mu.Lock()
			out := len(m.leases)
			m.mu.Unlock()
			if out == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		m.publish(ctx)
		if err := ctl.Ack(ctx, ControlNode, cmd.Seq); err != nil {
			return err
		}
		m.log.Info("stopped by spider control: tasks out answered, the rest stays pending")
		return ErrStopped
	})
}

// takeBack removes the tasks still waiting on srq (no worker took them)
// and gives their URLs back to the scheduler, pending. A topics
// coordinator also takes back those on the crawl nodes' own queues srq:N
// and those waiting in it for their node (takeBackTopics).
func (m *Master) takeBack(ctx context.Context) {
	queues := []string{m.k.srq()}
	if m.tp != nil {
		for w := 1; w <= m.opt.MaxWorkers; w++ {
			queues = append(queues, m.k.srqOf(w))
		}
	}
	pipe := m.rdb.TxPipeline()
	lists := make([]*redis.StringSliceCmd, len(queues))
	for i, q := range queues {
		lists[i] = pipe.LRange(ctx, q, 0, -1)
	}
	pipe.Del(ctx, queues...)
	if _, err := pipe.Exec(ctx); err != nil {
		m.log.Warn("cannot take back the tasks waiting on srq; they are fetched", "err", err)
		return
	}
	var all []string
	for _, l := range lists {
		all = append(all, l.Val()...)
	}
	m.releaseTasks(all, false)
	if m.tp != nil {
		m.takeBackWaiting()
	}
}

// releaseTasks gives the tasks raw (as on srq, srq:N or a processing
// list) back to the scheduler and returns how many it released: each
// task of this run's epoch whose lease is still out, once, as release
// does.
func (m *Master) releaseTasks(raws []string, fetched bool) int {
	n := 0
	for _, raw := range raws {
		if raw == doneSentinel {
			continue
		}
		t, err := decodeTask([]byte(raw))
		if err != nil || t.Epoch != m.epoch {
			continue
		}
		if task, ok := m.take(t.ID); ok {
			m.release(task, fetched)
			n++
		}
	}
	return n
}

// release gives a task taken from m.leases (take) back to the scheduler
// and frees its --max-inflight slot. A task never fetched (fetched false)
// is queued again as it was (no attempt counted: it stays pending in the
// state); a fetched one is released as a failed attempt (Attempt+1),
// which queues it again after a back-off. A task whose host's turn an
// Answered packet ended (answered.go) was fetched, wherever it is found:
// it is queued again with Attempt+1 through
// crawl.Scheduler.RequeueAfterTurn, where it waits the host's delay
// (Release with retry would lose it: the frontier's Done ignores a Retry
// after EndTurn).
func (m *Master) release(t outTask, fetched bool) {
	defer func() { <-m.sem }()
	if t.turn.finish() {
		if err := m.sched.RequeueAfterTurn(t.lease); err != nil {
			m.log.Warn("cannot queue a task taken back again; it stays pending for the next run", "url", t.lease.Request.URL, "err", err)
		}
		return
	}
	m.sched.Release(t.lease, fetched)
	if !fetched {
		if err := m.sched.Enqueue([]frontier.Request{t.lease.Request}); err != nil {
			m.log.Warn("cannot queue a task taken back again; the next run fetches it", "url", t.lease.Request.URL, "err", err)
		}
	}
}

// popSeeds records the seeds spider control queued (the crawl's rules
// apply) and queues the new ones.
func (m *Master) popSeeds(ctx context.Context, ctl *cluster.Control) {
	if m.fetcher == nil {
		return
	}
	err := ctl.DrainSeeds(ctx, func(ctx context.Context, raw []string) error {
		reqs, rerr := m.fetcher.Requests(raw)
		if rerr != nil {
			m.log.Warn("seeds refused", "err", rerr)
		}
		added, err := m.sched.AddSeeds(ctx, reqs)
		if err != nil {
			return err
		}
		m.log.Info("seeds added by spider control", "given", len(raw), "new", added)
		return nil
	})
	if err != nil {
		m.log.Warn("cannot add the seeds given by spider control", "err", err)
	}
}

// follow makes the worker stop taking tasks once the crawl is stopping:
// each loop finishes its task and the worker leaves (Run returns nil).
func (w *Worker) follow(ctx context.Context, ctl *cluster.Control) error {
	return ctl.Follow(ctx, "worker-"+strconv.Itoa(w.id), w.log, func(ctx context.Context, cmd cluster.Command) error {
		if cmd.State == cluster.ControlStopping && !w.stopping.Swap(true) {
			w.log.Info("stopped by spider control: finishing the tasks taken")
		}
		return nil
	})
}
