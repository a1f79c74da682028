package mixed

import (
	"context"
	"fmt"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/protocol"
)

// controlOf returns the crawl's control word (cluster.Control, issue #24),
// kept where the crawl-wide budget is: opt.Budget, else the first network's
// center's Redis (Host.Center when this host is in that network, else
// dialled). `spider control --redis FIRST-CENTER-URL --crawl CRAWL` writes
// it. The returned function closes what was dialled.
func controlOf(opt Options) (*cluster.Control, func(), error) {
	rdb, closeFn, err := firstCenter(opt)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot follow spider control: %w", err)
	}
	k, err := cluster.NewKeys(opt.Host.Config.Crawl)
	if err != nil {
		closeFn()
		return nil, nil, fmt.Errorf("cannot follow spider control: %w", err)
	}
	return cluster.NewControl(rdb, k), closeFn, nil
}

// follow applies the control word to this host's loop: pause and resume its
// frontier, add seeds (through the protocol, like discovered URLs; the
// crawl's rules apply), stop after the fetches in flight (the tasks taken
// stay in processing for the next run, unless Leave).
func (l *loop) follow(ctx context.Context, ctl *cluster.Control, node string) error {
	return ctl.Follow(ctx, node, l.log, func(ctx context.Context, cmd cluster.Command) error {
		switch cmd.State {
		case cluster.ControlPaused, cluster.ControlStopping:
			l.fr.Pause()
			l.paused.Store(true)
		default:
			l.fr.Resume()
			l.paused.Store(false)
		}
		err := ctl.DrainSeeds(ctx, func(ctx context.Context, raw []string) error {
			reqs, rerr := l.fetcher.Requests(raw)
			if rerr != nil {
				l.log.Warn("seeds refused", "err", rerr)
			}
			tasks := make([]protocol.Task, 0, len(reqs))
			for _, r := range reqs {
				tasks = append(tasks, protocol.Task{URL: r.URL})
			}
			if err := l.host.AddSeeds(ctx, tasks); err != nil {
				return err
			}
			l.log.Info("seeds added by spider control", "given", len(raw), "added", len(tasks))
			return nil
		})
		if err != nil {
			l.log.Warn("cannot add the seeds given by spider control", "err", err)
		}
		if cmd.State != cluster.ControlStopping {
			return nil
		}
		for l.fr.Stats().Leased > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		if err := ctl.Ack(ctx, node, cmd.Seq); err != nil {
			return err
		}
		l.log.Info("stopped by spider control: fetches in flight finished, the tasks taken stay for the next run")
		l.stop()
		return nil
	})
}
