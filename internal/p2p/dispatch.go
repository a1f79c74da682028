package p2p

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/frontier"
)

// qkeys names the peer-to-peer queues of one crawl. They share one hash tag
// so that a batch push and its "sent" count, or a batch removal and its
// "received" count, are one MULTI on Redis Cluster too.
type qkeys struct{ prefix string }

func newQKeys(crawl string) qkeys { return qkeys{prefix: cluster.SpreadPrefix(crawl, crawl+".p2p")} }

func (k qkeys) inbox(node string) string { return k.prefix + "inbox:" + node }
func (k qkeys) proc(node string) string  { return k.prefix + "proc:" + node }
func (k qkeys) sent() string             { return k.prefix + "sent" }     // "from>to" → URLs
func (k qkeys) received() string         { return k.prefix + "received" } // node → URLs
func (k qkeys) idle() string             { return k.prefix + "idle" }     // node → idle report
func (k qkeys) done() string             { return k.prefix + "done" }
func (k qkeys) final() string            { return k.prefix + "final" }       // node → URLs completed in its ended runs
func (k qkeys) used() string             { return k.prefix + "budget:used" } // URLs completed, all nodes and runs
func (k qkeys) held() string             { return k.prefix + "budget:held" } // --max-pages slots in flight → expiry (ms)

// Batch is the JSON message between nodes (SPEC §3: URLs exchanged as JSON,
// batched and sent on a timer).
type Batch struct {
	From string             `json:"from"`
	URLs []frontier.Request `json:"urls"`
}

// dispatcher is the URL dispatcher of SPEC §3: it buffers discovered URLs
// per bucket and, on a timer or when enough wait, sends them as one JSON
// batch per destination node to that node's inbox. Routing happens at
// flush time with the current bucket table, so URLs found before the node
// knows the table wait in the buffer.
type dispatcher struct {
	rdb      redis.UniversalClient
	k        qkeys
	from     string
	m        int
	route    func(bucket int) string
	interval time.Duration
	size     int
	log      *slog.Logger

	mu      sync.Mutex
	buf     []frontier.Request
	waiters []chan error
	wake    chan struct{}
	stopped chan struct{} // closed when run returns: nothing will be flushed
}

func newDispatcher(rdb redis.UniversalClient, k qkeys, from string, m int, route func(int) string, interval time.Duration, size int, log *slog.Logger) *dispatcher {
	return &dispatcher{rdb: rdb, k: k, from: from, m: m, route: route, interval: interval, size: size, log: log,
		wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// send queues URLs for their owners; the returned function blocks until
// they are durably in the owners' inboxes (or the flush failed).
func (d *dispatcher) send(byDest map[string][]frontier.Request) func() error {
	n := 0
	for _, rs := range byDest {
		n += len(rs)
	}
	if n == 0 {
		return func() error { return nil }
	}
	ch := make(chan error, 1)
	d.mu.Lock()
	for _, rs := range byDest {
		d.buf = append(d.buf, rs...)
	}
	d.waiters = append(d.waiters, ch)
	d.mu.Unlock()
	// Group commit: wake the dispatcher at once. While it is sending one
	// batch the next one fills up, so batches grow with the load (up to
	// size) and no completion waits for the timer: waiting for it held a
	// fetch slot ~25 ms longer for every page with links to other nodes'
	// hosts, which cost a node a sixth of its pages/s.
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return func() error {
		select {
		case err := <-ch:
			return err
		case <-d.stopped:
			return errStopped
		}
	}
}

var errStopped = errors.New("the URL dispatcher has stopped")

// pending is the number of URLs waiting to be sent.
func (d *dispatcher) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.buf)
}

// run flushes on the timer and on wake-ups until ctx ends.
func (d *dispatcher) run(ctx context.Context) {
	t := time.NewTicker(d.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			close(d.stopped)
			d.fail(ctx.Err())
			return
		case <-t.C:
		case <-d.wake:
		}
		d.flush(ctx)
	}
}

func (d *dispatcher) fail(err error) {
	d.mu.Lock()
	ws := d.waiters
	d.waiters = nil
	d.mu.Unlock()
	for _, w := range ws {
		w <- err
	}
}

// flush sends everything routable. URLs whose bucket has no owner yet (no
// member list) stay, with their waiters.
func (d *dispatcher) flush(ctx context.Context) {
	d.mu.Lock()
	buf, ws := d.buf, d.waiters
	d.buf, d.waiters = nil, nil
	d.mu.Unlock()
	if len(buf) == 0 {
		for _, w := range ws {
			w <- nil
		}
		return
	}
	byDest := map[string][]frontier.Request{}
	var held []frontier.Request
	for _, r := range buf {
		dest := d.route(bucketOf(r.URL, d.m))
		if dest == "" {
			held = append(held, r)
			continue
		}
		byDest[dest] = append(byDest[dest], r)
	}
	err := d.push(ctx, byDest)
	if err != nil {
		d.log.Warn("cannot send URL batches; retrying", "err", err)
		held = buf
	}
	if len(held) > 0 {
		d.mu.Lock()
		d.buf = append(held, d.buf...)
		d.waiters = append(ws, d.waiters...)
		d.mu.Unlock()
		return
	}
	for _, w := range ws {
		w <- nil
	}
}

// push writes the URLs for each destination as JSON batches of at most
// size URLs (so a receiver applies bounded pieces) with the "sent" count,
// all in one transaction.
func (d *dispatcher) push(ctx context.Context, byDest map[string][]frontier.Request) error {
	if len(byDest) == 0 {
		return nil
	}
	pipe := d.rdb.TxPipeline()
	for dest, rs := range byDest {
		for len(rs) > 0 {
			part := rs[:min(len(rs), max(d.size, 1))]
			rs = rs[len(part):]
			b, err := json.Marshal(Batch{From: d.from, URLs: part})
			if err != nil {
				return err
			}
			pipe.RPush(ctx, d.k.inbox(dest), b)
			pipe.HIncrBy(ctx, d.k.sent(), d.from+">"+dest, int64(len(part)))
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

// maxBatchBytes bounds a batch read from an inbox.
const maxBatchBytes = 64 << 20

func decodeBatch(raw string) (Batch, error) {
	var b Batch
	if len(raw) > maxBatchBytes {
		return b, fmt.Errorf("batch of %d bytes is too large", len(raw))
	}
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		return b, fmt.Errorf("malformed batch: %w", err)
	}
	for _, r := range b.URLs {
		if r.URL == "" {
			return b, errors.New("malformed batch: a URL is empty")
		}
	}
	return b, nil
}
