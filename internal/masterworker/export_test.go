package masterworker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Victim plays a worker killed with kill -9: it takes a work number,
// heart-beats once, moves one task from srq into its processing list and
// never answers. It returns the processing list's key.
func Victim(t *testing.T, rdb redis.UniversalClient, crawl string) string {
	t.Helper()
	ctx := context.Background()
	k := newKeys(crawl)
	var id string
	// Poll trq (every 10 ms) for a work number; the deadline fails the test.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := rdb.LPop(ctx, k.trq()).Result()
		if err == nil {
			id = v
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no work number in trq: the master did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, _ := strconv.Atoi(id)
	// The task first, then the one heartbeat: a heartbeat written before a
	// long wait for a task (srq empty, as in a continuous crawl between
	// revisits) let the reaper declare the victim dead with an empty list
	// and forget it, so the task it then took was found only by the task
	// TTL (Requeued 0, Expired 1: TestContinuousMasterWorkers failed now
	// and then).
	if err := rdb.BLMove(ctx, k.srq(), k.processing(n), "LEFT", "RIGHT", 10*time.Second).Err(); err != nil {
		t.Fatalf("the victim got no task: %v", err)
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, k.workers(), id, now.UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	return k.processing(n)
}

// WaitSRQ waits until srq of crawl holds at least n tasks, polling every millisecond; it
// fails the test after 30 s.
func WaitSRQ(t *testing.T, rdb redis.UniversalClient, crawl string, n int64) {
	t.Helper()
	k := newKeys(crawl)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := rdb.LLen(context.Background(), k.srq()).Result()
		if err == nil && got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("srq of %s holds %d tasks after 30 s, want %d (%v)", crawl, got, n, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// WaitNotDone waits until the crawl's done flag is cleared: a master (re)started
// on a crawl that ended has prepared its run, so a worker started now does not
// take the previous run's flag for this one's and leave at once.
func WaitNotDone(t *testing.T, rdb redis.UniversalClient, crawl string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for rdb.Exists(context.Background(), newKeys(crawl).done()).Val() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the master did not clear the done flag of the previous run")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TopicVictim plays a crawl node of a topics crawl killed with kill -9: it
// takes a work number, joins the ring (heartbeat and load with the given
// concurrency), waits for a task on its own queue, moves it into its
// processing list and never answers nor beats again. It returns its work
// number.
func TopicVictim(t *testing.T, rdb redis.UniversalClient, crawl string, concurrency int) int {
	t.Helper()
	ctx := context.Background()
	k := newKeys(crawl)
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := rdb.LPop(ctx, k.trq()).Result()
		if err == nil {
			id = v
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no work number in trq: the master did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, _ := strconv.Atoi(id)
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	load := fmt.Sprintf(`{"worker":%d,"node":"victim","concurrency":%d}`, n, concurrency)
	if err := rdb.HSet(ctx, k.workerLoads(), id, load).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, k.workers(), id, now.UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.BLMove(ctx, k.srqOf(n), k.processing(n), "LEFT", "RIGHT", 10*time.Second).Err(); err != nil {
		t.Fatalf("the victim got no task: %v", err)
	}
	return n
}

// InFlight is how many fetches the worker has in flight.
func InFlight(w *Worker) int64 { return w.inFlight.Load() }

// TopicWindows reports the coordinator's view of its crawl nodes: per
// worker number the tasks out on it (srq:N and its processing list) and
// its window, and how many leased tasks wait in the coordinator for their
// node.
func TopicWindows(m *Master) (out, window map[int]int, waiting int) {
	tp := m.tp
	tp.mu.Lock()
	defer tp.mu.Unlock()
	out, window = map[int]int{}, map[int]int{}
	for id, ns := range tp.nodes {
		out[id], window[id] = ns.out, tp.window(ns)
	}
	return out, window, len(tp.waiting)
}

// NodeQueue is the length of crawl node worker's own queue srq:N.
func NodeQueue(t *testing.T, rdb redis.UniversalClient, crawl string, worker int) int64 {
	t.Helper()
	n, err := rdb.LLen(context.Background(), newKeys(crawl).srqOf(worker)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// SetBeforeResult makes w call f with each task's URL after the page was
// processed and before its result is sent: a per-page processing cost on
// the worker (a slow parse or store). Call it before Run.
func SetBeforeResult(w *Worker, f func(url string)) {
	w.beforeResult = func(t Task) { f(t.Request.URL) }
}

// NoAnswered makes w send no answered packets: its hosts' turns end with
// their results, as before issue #22. Call it before Run.
func NoAnswered(w *Worker) { w.noAnswered = true }

// AnsweredVictim is Victim for a worker killed with kill -9 after it told
// the master a task's answer was read (an Answered packet on ans) and
// before it sent the result: the host's turn has ended, the task is in
// its processing list. It returns the processing list's key and the
// task's URL once the master has taken the packet.
func AnsweredVictim(t *testing.T, rdb redis.UniversalClient, crawl string) (proc, url string) {
	t.Helper()
	proc = Victim(t, rdb, crawl)
	return proc, SendAnswered(t, rdb, crawl, proc)
}

// TopicAnsweredVictim is TopicVictim for a crawl node killed after it
// sent the answered packet of the task it took: it returns the node's
// work number and the task's URL once the coordinator has taken the
// packet.
func TopicAnsweredVictim(t *testing.T, rdb redis.UniversalClient, crawl string, concurrency int) (worker int, url string) {
	t.Helper()
	worker = TopicVictim(t, rdb, crawl, concurrency)
	return worker, SendAnswered(t, rdb, crawl, newKeys(crawl).processing(worker))
}

// SendAnswered pushes the answered packet of the first task of the
// processing list proc, as its worker would, and waits until the master
// has popped it; it returns the task's URL.
func SendAnswered(t *testing.T, rdb redis.UniversalClient, crawl, proc string) string {
	t.Helper()
	ctx := context.Background()
	k := newKeys(crawl)
	raw, err := rdb.LIndex(ctx, proc, 0).Result()
	if err != nil {
		t.Fatalf("the victim's task: %v", err)
	}
	task, err := decodeTask([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(Answered{Epoch: task.Epoch, ID: task.ID, URL: task.Request.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.RPush(ctx, k.ans(), b).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rdb.LLen(ctx, k.ans()).Val() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the master did not take the answered packet")
		}
		time.Sleep(time.Millisecond)
	}
	return task.Request.URL
}

// ReportLoad writes w's load record as its heartbeat does.
func ReportLoad(ctx context.Context, w *Worker) error { return w.reportLoad(ctx) }
