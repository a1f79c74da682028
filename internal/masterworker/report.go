package masterworker

import (
	"context"
	"errors"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
)

// The crawl-wide report (cluster.StartReporter): the master publishes as
// node ControlNode, role master, with no Counts (it writes no records) and
// its scheduler's figures in Detail; each worker publishes as its NodeID,
// role worker, with the Counts of the records it wrote (so the report's
// totals are the union of the workers' records) and its work number and
// tasks answered in Detail. Both publish every ReportEvery and their final
// figures when Run ends: done when the crawl is done, stopped after spider
// control stop or a cancelled context, failed on an error.

// endState is the report state of a Run that returned err.
func endState(err error, stopped bool) string {
	switch {
	case err == nil && stopped, errors.Is(err, ErrStopped), errors.Is(err, context.Canceled):
		return cluster.ReportStopped
	case err == nil:
		return cluster.ReportDone
	}
	return cluster.ReportFailed
}

// stopReport publishes the reporter's final figures (a context of its own:
// the run's may be over).
func stopReport(ctx context.Context, rep *cluster.Reporter, state string) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return rep.Stop(sctx, state)
}

// masterReport is this run's part of the master's report.
func (m *Master) masterReport() cluster.NodeReport {
	d := m.figures()
	delete(d, "elapsed_ms") // the report has its own times
	r := cluster.NodeReport{Detail: d}
	if m.held.Load() {
		r.State = cluster.ReportPaused
	}
	return r
}

// workerReport is this run's part of the worker's report.
func (w *Worker) workerReport() cluster.NodeReport {
	return cluster.NodeReport{Counts: cluster.Counts(w.fetcher.Tally()),
		Detail: map[string]int64{"work_number": int64(w.id), "tasks_answered": w.fetched.Load()}}
}
