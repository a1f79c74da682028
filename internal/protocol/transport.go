package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
)

// Resolver returns a client for the Redis of the node at addr ("NET" or "NET/HOST").
type Resolver func(ctx context.Context, addr string) (redis.UniversalClient, error)

// envelope is an outbox entry: a frame and where it goes.
type envelope struct {
	To string `json:"to"`
	// Keep: never give up (a host's flag-1 frames: giving up would lose URLs).
	Keep bool `json:"keep,omitempty"`
	// First is when the frame was queued (Unix ms); NotBefore delays a retry.
	First     int64           `json:"first"`
	NotBefore int64           `json:"nb,omitempty"`
	Attempt   int             `json:"att,omitempty"`
	Frame     json.RawMessage `json:"frame"`
}

// transport moves frames between nodes through Redis lists in the receiver's Redis (see
// the package doc): a sender queues into its own outbox (in the same transaction as the
// state change that produced the frame), its forwarder moves each entry to
// outbox:sending, appends it to the receiver's inbox (and counts it there), then removes
// it; the receiver moves an entry from its inbox to inbox:processing, handles it, then
// removes it. Delivery is at least once; every handler is idempotent.
type transport struct {
	crawl, self string
	rdb         redis.UniversalClient
	k           nodeKeys
	resolve     Resolver
	giveUp      time.Duration
	m           *metrics
	log         *slog.Logger
}

// queue adds the commands that put f in the outbox, for delivery to addr, to pipe.
func (t *transport) queue(pipe redis.Pipeliner, ctx context.Context, to string, f *Frame, keep bool) {
	env := envelope{To: to, Keep: keep, First: time.Now().UnixMilli(), Frame: f.Encode()}
	b, _ := json.Marshal(env)
	pipe.RPush(ctx, t.k.outbox(), b)
}

// recover puts entries left in processing lists by a crash back at the head of their
// queues.
func (t *transport) recover(ctx context.Context) error {
	for _, p := range [][2]string{{t.k.inboxProc(), t.k.inbox()}, {t.k.outboxSend(), t.k.outbox()}} {
		for {
			err := t.rdb.LMove(ctx, p[0], p[1], "RIGHT", "LEFT").Err()
			if errors.Is(err, redis.Nil) {
				break
			}
			if err != nil {
				return fmt.Errorf("cannot recover %s: %w", p[0], err)
			}
		}
	}
	return nil
}

// forward runs the forwarder until ctx ends.
func (t *transport) forward(ctx context.Context) {
	for ctx.Err() == nil {
		raw, err := cluster.BLMove(ctx, t.rdb, t.k.outbox(), t.k.outboxSend(), 200*time.Millisecond)
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				t.log.Warn("cannot read outbox", "node", t.self, "err", err)
				sleep(ctx, 200*time.Millisecond)
			}
			continue
		}
		t.deliver(ctx, raw)
	}
}

// flush delivers the whole outbox now (the forwarder must not be running): entries that
// cannot be delivered are retried with the forwarder's back-off until ctx ends, which
// returns an error saying how many frames are still queued.
func (t *transport) flush(ctx context.Context) error {
	for {
		raw, err := t.rdb.LMove(ctx, t.k.outbox(), t.k.outboxSend(), "LEFT", "RIGHT").Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot read the outbox of %s: %w", t.self, err)
		}
		t.deliver(ctx, raw)
		if ctx.Err() != nil {
			t.recover(context.WithoutCancel(ctx))
			n, _ := t.rdb.LLen(context.WithoutCancel(ctx), t.k.outbox()).Result()
			return fmt.Errorf("%d frames not delivered: %w", n, ctx.Err())
		}
	}
}

// deliver sends one outbox entry (already in outbox:sending).
func (t *transport) deliver(ctx context.Context, raw string) {
	var env envelope
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		t.log.Error("dropping unreadable outbox entry", "node", t.self, "err", err)
		t.rdb.LRem(ctx, t.k.outboxSend(), 1, raw)
		return
	}
	now := time.Now().UnixMilli()
	if env.NotBefore > now {
		// A retry not yet due: back to the tail, and wait a little if it is alone.
		n, err := t.requeue(ctx, raw, raw)
		if err == nil && n <= 1 {
			sleep(ctx, time.Duration(min(env.NotBefore-now, 100))*time.Millisecond)
		}
		return
	}
	err := t.push(ctx, env)
	if err == nil {
		flag := flagLabel(env.Frame)
		t.m.framesSent.WithLabelValues(flag).Inc()
		t.m.bytesSent.WithLabelValues(flag).Add(float64(len(env.Frame)))
		p := t.rdb.TxPipeline()
		p.LRem(ctx, t.k.outboxSend(), 1, raw)
		p.HIncrBy(ctx, t.k.stats(), "frames_sent", 1)
		p.HIncrBy(ctx, t.k.stats(), "bytes_sent", int64(len(env.Frame)))
		if _, err := p.Exec(ctx); err != nil && ctx.Err() == nil {
			t.log.Warn("cannot remove a delivered frame from outbox:sending (it may be delivered twice)", "node", t.self, "err", err)
		}
		return
	}
	if ctx.Err() != nil {
		return // recover puts it back on the next start
	}
	if !env.Keep && t.giveUp > 0 && time.Duration(now-env.First)*time.Millisecond > t.giveUp {
		t.log.Warn("giving up a frame: its receiver stayed unreachable", "node", t.self, "to", env.To, "err", err)
		t.m.dropped.Inc()
		p := t.rdb.TxPipeline()
		p.LRem(ctx, t.k.outboxSend(), 1, raw)
		p.HIncrBy(ctx, t.k.stats(), "undeliverable", 1)
		p.Exec(ctx)
		return
	}
	t.log.Debug("cannot deliver a frame, will retry", "node", t.self, "to", env.To, "err", err)
	env.Attempt++
	env.NotBefore = now + min(int64(50)<<min(env.Attempt, 6), 2000)
	b, _ := json.Marshal(env)
	t.requeue(ctx, raw, string(b))
}

// requeue replaces raw in outbox:sending by next at the outbox's tail; it returns the
// outbox's length.
func (t *transport) requeue(ctx context.Context, raw, next string) (int64, error) {
	p := t.rdb.TxPipeline()
	p.LRem(ctx, t.k.outboxSend(), 1, raw)
	n := p.RPush(ctx, t.k.outbox(), next)
	_, err := p.Exec(ctx)
	return n.Val(), err
}

// push appends the frame to the receiver's inbox and counts it there, in one transaction.
func (t *transport) push(ctx context.Context, env envelope) error {
	rdb, err := t.resolve(ctx, env.To)
	if err != nil {
		return err
	}
	rk := keysFor(t.crawl, env.To)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	p := rdb.TxPipeline()
	p.RPush(cctx, rk.inbox(), []byte(env.Frame))
	p.Incr(cctx, rk.received())
	_, err = p.Exec(cctx)
	return err
}

// next waits up to wait for an inbox entry and moves it to inbox:processing. ok is false
// when nothing came. Entries that are not frames are dropped (counted) and reported as
// nothing.
func (t *transport) next(ctx context.Context, wait time.Duration) (raw string, f *Frame, ok bool, err error) {
	raw, err = cluster.BLMove(ctx, t.rdb, t.k.inbox(), t.k.inboxProc(), wait)
	if errors.Is(err, redis.Nil) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("cannot read the inbox of %s: %w", t.self, err)
	}
	f, derr := DecodeFrame([]byte(raw))
	if derr != nil {
		t.log.Warn("dropping a bad frame", "node", t.self, "err", derr)
		t.m.badFrames.Inc()
		p := t.rdb.TxPipeline()
		p.LRem(ctx, t.k.inboxProc(), 1, raw)
		p.HIncrBy(ctx, t.k.stats(), "bad_frames", 1)
		p.Exec(ctx)
		return "", nil, false, nil
	}
	t.m.framesRecv.WithLabelValues(strconv.Itoa(int(f.Flag))).Inc()
	return raw, f, true, nil
}

// ack removes a handled entry from inbox:processing.
func (t *transport) ack(ctx context.Context, raw string) error {
	return t.rdb.LRem(ctx, t.k.inboxProc(), 1, raw).Err()
}

// retry puts a entry whose handling failed back into the inbox.
func (t *transport) retry(ctx context.Context, raw string) {
	p := t.rdb.TxPipeline()
	p.LRem(ctx, t.k.inboxProc(), 1, raw)
	p.RPush(ctx, t.k.inbox(), raw)
	p.Exec(ctx)
}

// flagLabel reads the flag of an encoded frame for metrics.
func flagLabel(b []byte) string {
	var f struct {
		Flag int `json:"flag"`
	}
	json.Unmarshal(b, &f)
	return strconv.Itoa(f.Flag)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
