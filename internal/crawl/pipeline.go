package crawl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/frontier"
)

// The engine's crawl is a two-stage pipeline (issue #22), with at most
// Config.Concurrency URLs in flight (leased and not yet finished, being
// processed included):
//
//	fetch workers (Config.Concurrency)         page workers (pageWorkers)
//	  lease := Next()                            Process(fetched): parse, store
//	  fetched := Fetch(lease): robots, HTTP ──▶   Finish: Complete + PushAll, Done
//	  EndTurn(lease): the host's turn ends      (bounded queue: a fetch worker
//	                                             waits while it is full)
//
// A host's next request may start (after its delay, counted from the end
// of the previous answer as before, or from its start with DelayFrom
// "start") while the previous page is still parsed, stored and committed.
// Crash safety is unchanged: the URL stays pending (and in flight, and in
// the frontier's lease count: no ErrDrained, the Strict level barrier
// holds) until Finish's Complete, the transaction that adds its links; a
// retry is not pipelined (Finish re-queues it under the host's turn).

// pageWorkers is the number of page workers of a crawl with concurrency
// fetch workers: as many (the slots bound the URLs in flight, processing
// included, to concurrency anyway). A page worker also waits (the state's
// group commit, whose batches grow with the callers, and writes), so one
// per CPU is too few: on the static web (bench/static.sh, 2 CPUs) 2 page
// workers took 2.0 s, 8 took 1.2 s and 16 the same; on BenchmarkCrawl
// (200 websim hosts, concurrency 32) 8 gave 6,500 pages/s and 32 gave
// 8,100 (7,250 before the pipeline).
func pageWorkers(concurrency int) int {
	return max(1, concurrency)
}

// pageJob is a fetched answer waiting for a page worker.
type pageJob struct {
	lease   *frontier.Lease
	fetched *Fetched
}

// EndTurn ends the host's turn of lease once its answer has been read
// (turn is Fetched.Turn): the host's robots.txt Crawl-delay is applied and
// the frontier may hand out the host's next URL after the host's delay,
// counted as Finish would count it (Visit.Delay, Visit.RequestAfter for
// DelayFrom "start"), while the lease's URL stays in flight until Finish
// or Release. A retry (turn.Retry) does nothing here: Finish re-queues it
// under the host's turn, so that it never runs before its Done.
func (s *Scheduler) EndTurn(lease *frontier.Lease, turn Visit) {
	if turn.Retry {
		return
	}
	if turn.CrawlDelay > 0 {
		s.fr.SetKeyDelay(lease.Request.Key, turn.CrawlDelay)
	}
	s.fr.EndTurn(lease, turn.doneInfo(lease))
}

// RequeueAfterTurn gives back, without a result, a lease whose host's
// turn EndTurn already ended (a master–worker task whose worker died
// after it reported the answer read, before its result): the lease ends
// and its URL is queued again with Attempt+1 at the tail of its host's
// queue, where it waits the host's delay like any other URL. It is
// Release(lease, true) for such a lease, whose frontier Done ignores a
// Retry (a retry re-queued at the head would otherwise be lost). A topic
// hub's revisit stays one. The error is the frontier's (closed, or the
// request out of range): the URL then stays pending in the State for the
// next run.
func (s *Scheduler) RequeueAfterTurn(lease *frontier.Lease) error {
	s.done(lease, frontier.DoneInfo{})
	r := lease.Request
	r.Attempt++
	if err := s.fr.Push(r); err != nil {
		return fmt.Errorf("cannot queue %s again after its worker died: %w", r.URL, err)
	}
	return nil
}

// drainedPoll is how often an idle fetch worker of a continuous crawl
// asks the frontier again when no due URL was queued meanwhile.
const drainedPoll = time.Second

// pipelineHooks are test hooks of the engine's pipeline; nil fields are
// not called.
type pipelineHooks struct {
	// beforeFinish is called by a page worker after Process and before
	// Finish (the state commit) of req.
	beforeFinish func(req frontier.Request)
}

// runPipeline runs the fetch workers and the page workers until the
// frontier is drained, the hand-out ends (nextCtx: Stop, the page limit),
// ctx ends, or a worker fails; it returns the first error.
func (e *Engine) runPipeline(ctx, nextCtx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	// A failing worker ends the hand-out too, so that the fetch workers
	// waiting in Next return.
	hctx, stopHand := context.WithCancel(nextCtx)
	defer stopHand()
	stopOnFail := context.AfterFunc(gctx, stopHand)
	defer stopOnFail()

	pages := pageWorkers(e.cfg.Concurrency)
	jobs := make(chan pageJob, pages)
	slots := make(chan struct{}, e.cfg.Concurrency) // URLs in flight
	var fetchers sync.WaitGroup
	for i := 0; i < e.cfg.Concurrency; i++ {
		fetchers.Add(1)
		g.Go(func() error {
			defer fetchers.Done()
			return e.fetchWorker(gctx, hctx, slots, jobs)
		})
	}
	g.Go(func() error {
		fetchers.Wait()
		close(jobs)
		return nil
	})
	for i := 0; i < pages; i++ {
		g.Go(func() error { return e.pageWorker(gctx, slots, jobs) })
	}
	err := g.Wait()
	// After a failure, answers may be left in the queue: their URLs stay
	// pending for the next run.
	for job := range jobs {
		e.Release(job.lease, false)
		<-slots
	}
	return err
}

// fetchWorker leases URLs and fetches them until the frontier is drained,
// the hand-out ends (nextCtx), or ctx ends; each answer read is handed to
// the page workers (jobs), waiting while the queue is full. A worker takes
// one of the slots before it asks for a URL; the slot is given back when
// the URL is finished or released (by a page worker, once the URL was
// handed over), so that no more than Config.Concurrency URLs are ever in
// flight, processing included: a kill -9 repeats at most that many.
func (e *Engine) fetchWorker(ctx, nextCtx context.Context, slots chan struct{}, jobs chan<- pageJob) error {
	for {
		select {
		case slots <- struct{}{}:
		case <-nextCtx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}
		lease, err := e.Next(nextCtx)
		if err != nil {
			<-slots
		}
		if errors.Is(err, frontier.ErrDrained) && e.topics != nil && e.topics.revisits() {
			// Time-critical topics revisit their hubs: the crawl goes on
			// until MaxPages or ctx, waiting for the next revisit.
			select {
			case <-nextCtx.Done():
				return nil
			case <-time.After(time.Duration(e.topics.cfg.Tick)):
				continue
			}
		}
		if errors.Is(err, frontier.ErrDrained) && e.cfg.Continuous {
			// A continuous crawl runs until stopped: FeedRevisits queues
			// the URLs that come due (and wakes the idle workers), AddSeeds
			// new ones (found within drainedPoll).
			t := time.NewTimer(drainedPoll)
			select {
			case <-nextCtx.Done():
				t.Stop()
				return ctx.Err()
			case <-e.rv.queued():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if errors.Is(err, ErrLimitReached) {
			e.stopAtLimit()
			return nil
		}
		if errors.Is(err, frontier.ErrDrained) || err != nil && nextCtx.Err() != nil && ctx.Err() == nil {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		fetched := e.fetcher.Fetch(ctx, lease.Request, lease.Start)
		if ctx.Err() != nil {
			// The crawl is stopping: the URL stays pending for the next run.
			e.Release(lease, false)
			<-slots
			return ctx.Err()
		}
		turn := fetched.Turn()
		if turn.Retry {
			// Nothing to process: the retry is recorded and re-queued
			// under the host's turn.
			err := e.Finish(ctx, lease, turn)
			<-slots
			if err != nil {
				return err
			}
			continue
		}
		e.EndTurn(lease, turn)
		select {
		case jobs <- pageJob{lease: lease, fetched: fetched}:
		case <-ctx.Done():
			e.Release(lease, false)
			<-slots
			return ctx.Err()
		}
	}
}

// pageWorker processes fetched answers (parse, store, Finish) until jobs
// is closed or one fails; once ctx has ended it releases them instead
// (their URLs stay pending for the next run). It gives each job's slot
// back (fetchWorker) when the job is over.
func (e *Engine) pageWorker(ctx context.Context, slots <-chan struct{}, jobs <-chan pageJob) error {
	for job := range jobs {
		err := e.processJob(ctx, job)
		<-slots
		if err != nil {
			return err
		}
	}
	return nil
}

// processJob processes one fetched answer: parse and store it, then
// Finish (the state commit, the lease's end).
func (e *Engine) processJob(ctx context.Context, job pageJob) error {
	if ctx.Err() != nil {
		e.Release(job.lease, false)
		return nil
	}
	v, err := e.fetcher.Process(ctx, job.fetched)
	if err != nil || ctx.Err() != nil {
		// A local store failed, or the crawl is stopping: the URL stays
		// pending for the next run.
		e.Release(job.lease, false)
		return err
	}
	if h := e.hooks.beforeFinish; h != nil {
		h(job.lease.Request)
	}
	if err := e.Finish(ctx, job.lease, v); err != nil {
		return err
	}
	if e.LimitReached() {
		e.stopAtLimit()
	}
	return nil
}
