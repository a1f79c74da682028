package masterworker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
)

// A host's turn ends at the answer (issue #22), on a cluster as on one
// node (crawl/pipeline.go): a worker pushes an Answered packet on the list
// ans the moment it has read a task's answer, before it parses and stores
// the page and sends the result; the master's answer collector ends the
// host's turn then (crawl.Scheduler.EndTurn), so the host's delay counts
// from the answer and not from the result's round trip (worker's
// processing, nrq, the master's appliers). The lease stays out until its
// result is applied (Finish: the URL leaves pending only with its
// result), or until its worker is declared dead (the task is queued again;
// its host's turn already ended, so the URL waits the host's delay again,
// crawl.Scheduler.RequeueAfterTurn).
//
// The packets are advisory: one that is lost, late (its result was
// applied first), of another epoch, or for a lease the master no longer
// holds is ignored, and the host's turn then ends with the result as
// before. A task's turn state (taskTurn) makes the order safe: the turn
// is ended at most once and never after the lease was taken (result,
// requeue, expiry).

// Answered is a packet on ans: a worker has read the answer of a task.
type Answered struct {
	Epoch  int64  `json:"epoch"`
	ID     uint64 `json:"id"` // the task's lease id
	Worker int    `json:"worker"`
	// URL is the task's URL, checked against the master's lease.
	URL string `json:"url"`
	// Delay and CrawlDelay are crawl.Visit's, known when the answer was
	// read (Retry-After, the host's robots.txt Crawl-delay).
	Delay      time.Duration `json:"delay,omitempty"`
	CrawlDelay time.Duration `json:"crawl_delay,omitempty"`
	// RequestAge is as Result.RequestAge: how long before the worker sent
	// the packet its page request started at the latest; 0 if none was
	// sent (robots.txt refused it, the host could not be reached).
	RequestAge time.Duration `json:"request_age,omitempty"`
}

func decodeAnswered(b []byte) (Answered, error) {
	var a Answered
	if len(b) > maxPacket {
		return a, fmt.Errorf("%w: answered packet of %d bytes", errPacket, len(b))
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("%w: %v", errPacket, err)
	}
	if a.ID == 0 || a.URL == "" || a.Delay < 0 || a.CrawlDelay < 0 || a.RequestAge < 0 {
		return a, fmt.Errorf("%w: answered packet without id or URL, or with a negative duration", errPacket)
	}
	return a, nil
}

// taskTurn is the state of a task's host turn, shared by the task's
// copies in Master.leases: ended once an Answered ended it, over once the
// lease was taken (take). mu orders the two: endTurn ends the turn only
// while the lease is not over, and take waits for an endTurn under way.
type taskTurn struct {
	mu    sync.Mutex
	ended bool
	over  bool
}

// finish marks the task's lease taken and reports whether its turn had
// ended (nil t: a task without turn state, never ended).
func (t *taskTurn) finish() (ended bool) {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.over = true
	return t.ended
}

// collectAnswers pops Answered packets from ans, up to resultBatch per
// round trip, and ends their hosts' turns. It costs no state round trip,
// so one loop keeps up with any number of workers; it has its own Redis
// connection (MasterConns), so a backlog of results on nrq never delays
// an answer.
func (m *Master) collectAnswers(ctx context.Context) error {
	return m.drain(ctx, m.k.ans(), "answered packets", func(raw string) error {
		m.endTurn(raw)
		return nil
	})
}

// endTurn ends the host's turn of the task an Answered packet names, if
// the master still holds its lease and its turn is still out; anything
// else is ignored (counted in MasterStats.StaleAnswers).
func (m *Master) endTurn(raw string) {
	a, err := decodeAnswered([]byte(raw))
	if err != nil {
		m.bad.Add(1)
		m.log.Warn("dropping malformed answered packet", "err", err)
		return
	}
	if a.Epoch != m.epoch {
		m.staleAnswers.Add(1)
		return
	}
	m.mu.Lock()
	t, ok := m.leases[a.ID]
	m.mu.Unlock()
	if !ok || t.turn == nil {
		m.staleAnswers.Add(1) // its result came first, or it was taken back
		return
	}
	if t.lease.Request.URL != a.URL {
		m.bad.Add(1)
		m.log.Warn("answered packet does not match its task; ignored", "id", a.ID, "task", t.lease.Request.URL, "answered", a.URL)
		return
	}
	t.turn.mu.Lock()
	defer t.turn.mu.Unlock()
	if t.turn.over || t.turn.ended {
		m.staleAnswers.Add(1)
		return
	}
	t.turn.ended = true
	v := crawl.Visit{Request: t.lease.Request, Delay: a.Delay, CrawlDelay: a.CrawlDelay}
	if a.RequestAge > 0 {
		// Counted back from the packet's arrival, as a result's
		// (requestAfter): never earlier than the request really started.
		v.RequestAfter = max(time.Since(t.lease.Start)-a.RequestAge, 1)
	}
	m.sched.EndTurn(t.lease, v)
	m.answers.Add(1)
}

// sendAnswered tells the master that task t's answer has been read (turn
// is crawl.Fetched.Turn, took when the worker took the task), if the
// master reads such packets (its epoch in ans-epoch is the task's). It is
// best effort: on failure the host's turn ends with the result, as
// without it. It reports whether it sent the packet.
func (w *Worker) sendAnswered(ctx context.Context, t Task, turn crawl.Visit, took time.Time) bool {
	if w.noAnswered || turn.Retry || t.Epoch != w.ansEpoch.Load() {
		return false
	}
	a := Answered{Epoch: t.Epoch, ID: t.ID, Worker: w.id, URL: t.Request.URL, Delay: turn.Delay, CrawlDelay: turn.CrawlDelay}
	if turn.RequestAfter > 0 {
		a.RequestAge = max(time.Since(took.Add(turn.RequestAfter)), 1)
	}
	b, err := json.Marshal(a)
	if err == nil {
		err = w.rdb.RPush(ctx, w.k.ans(), b).Err()
	}
	if err != nil {
		if ctx.Err() == nil {
			w.log.Debug("cannot tell the master the answer was read; the host's turn ends with the result", "url", t.Request.URL, "err", err)
		}
		return false
	}
	return true
}

// giveBackAnswered gives back, as retry results on nrq, the tasks of
// processing list proc whose answered packet was sent and whose result
// was not (the worker is abandoning them): their hosts' turns have ended,
// so such a task must not go back on srq (or srq:N), where another worker
// would fetch it outside the host's turn; the master queues it again in
// its frontier instead (Master.apply: a retry after the turn ended), where
// it waits the host's delay. It reports whether every such task was given
// back; a task whose give-back fails stays in proc, and the caller must
// then leave proc and its work number to the master's reaper (which takes
// the list back when the worker is declared dead) instead of moving proc
// to a queue.
func (w *Worker) giveBackAnswered(ctx context.Context, proc string) (ok bool) {
	ok = true
	w.answeredOut.Range(func(key, val any) bool {
		raw, t := key.(string), val.(Task)
		r := t.Request
		r.Schedule = ""
		b, err := json.Marshal(Result{Epoch: t.Epoch, ID: t.ID, Worker: w.id, Visit: crawl.Visit{Request: r, Retry: true}, GivenBack: true})
		if err == nil {
			pipe := w.rdb.TxPipeline()
			pipe.RPush(ctx, w.k.nrq(), b)
			pipe.LRem(ctx, proc, 1, raw)
			_, err = pipe.Exec(ctx)
		}
		if err != nil {
			ok = false
			w.log.Warn("cannot give an abandoned task back to the master; this worker's tasks are taken back when it is declared dead", "url", t.Request.URL, "err", err)
		}
		w.answeredOut.Delete(key)
		return true
	})
	return ok
}
