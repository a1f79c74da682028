package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Run control of a distributed crawl (issue #24): one command word per crawl
// in Redis, followed by every node. Keys (all in the membership's hash tag,
// so one script touches them together on a Redis Cluster):
//
//	spider:C:{C.m}:control    string: JSON Command {state, seq, at_ms}
//	spider:C:{C.m}:ctl.events pub/sub channel: the new seq, on every change
//	spider:C:{C.m}:ctl.seeds  list: URLs added by `spider control seed`, popped once
//	spider:C:{C.m}:ctl.acks   hash: node → JSON Ack {seq, at_ms} (Redis server time)
//
// A follower reads the command at once, on every message of the channel and
// every ControlPoll as a fallback (a lost message or a Redis restart cannot
// lose a command), applies a new seq and then acknowledges it by writing
// its seq into the acks hash, which it also refreshes at every poll: a node
// whose ack is fresher than ControlLive is live.

// Control states.
const (
	ControlRunning  = "running"  // URLs are handed out
	ControlPaused   = "paused"   // no new fetch starts; fetches in flight finish
	ControlStopping = "stopping" // every node finishes its fetches in flight and exits; what is pending stays pending
)

// ControlPoll is how often a follower reads the command without a message.
const ControlPoll = 250 * time.Millisecond

// ControlLive is how fresh a node's ack must be for the node to count as
// live (it refreshes it every ControlPoll).
const ControlLive = 3 * time.Second

// Command is a crawl's control word. Seq rises on every change (a state
// change or seeds added); the zero Command (no control key) means running.
type Command struct {
	State string `json:"state"`
	Seq   int64  `json:"seq"`
	AtMS  int64  `json:"at_ms"` // Redis server time of the change, Unix ms
}

// Ack is a node's last acknowledged seq and when it wrote it.
type Ack struct {
	Seq  int64 `json:"seq"`
	AtMS int64 `json:"at_ms"` // the last refresh, Redis server time, Unix ms
	// AckedMS is when the node first acknowledged Seq (Redis server time,
	// Unix ms): AckedMS − Command.AtMS is the node's control latency.
	AckedMS int64 `json:"acked_ms"`
}

// ErrBadControl is returned for a state that is not one of the Control*
// constants.
var ErrBadControl = errors.New("bad control state")

// Control reads and changes one crawl's control word. It is safe for
// concurrent use.
type Control struct {
	rdb redis.UniversalClient
	k   Keys
}

// NewControl returns the control of the crawl named by k.
func NewControl(rdb redis.UniversalClient, k Keys) *Control { return &Control{rdb: rdb, k: k} }

func (c *Control) key() string     { return c.k.mtag + "control" }
func (c *Control) channel() string { return c.k.mtag + "ctl.events" }
func (c *Control) seedsKey() string {
	return c.k.mtag + "ctl.seeds"
}
func (c *Control) acksKey() string { return c.k.mtag + "ctl.acks" }

// Keys returns the names of the control's keys (for clean-up and tests).
func (c *Control) Keys() []string { return []string{c.key(), c.seedsKey(), c.acksKey()} }

// setScript: KEYS control, seeds, channel; ARGV state ("" keeps it), URLs...
// Sets the state, pushes the URLs, raises seq, publishes it; returns the JSON.
var setScript = redis.NewScript(LuaNow + `
local cur = redis.call('GET', KEYS[1])
local state, seq = 'running', 0
if cur then
  local c = cjson.decode(cur)
  state, seq = c.state, c.seq
end
if ARGV[1] ~= '' then state = ARGV[1] end
for i = 2, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
seq = seq + 1
local v = '{"state":"' .. state .. '","seq":' .. string.format('%d', seq) .. ',"at_ms":' .. string.format('%d', now_ms) .. '}'
redis.call('SET', KEYS[1], v)
redis.call('PUBLISH', KEYS[3], seq)
return v`)

// ackScript: KEYS acks; ARGV node, seq. Writes {seq, at_ms, acked_ms} with
// server time; acked_ms is kept while seq stays the same.
var ackScript = redis.NewScript(LuaNow + `
local acked = now_ms
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local ok, c = pcall(cjson.decode, cur)
  if ok and tostring(c.seq) == ARGV[2] and c.acked_ms then acked = c.acked_ms end
end
redis.call('HSET', KEYS[1], ARGV[1], '{"seq":' .. ARGV[2] .. ',"at_ms":' .. string.format('%d', now_ms) .. ',"acked_ms":' .. string.format('%d', acked) .. '}')
return now_ms`)

// Get returns the current command: Command{State: ControlRunning} when no
// command was ever given.
func (c *Control) Get(ctx context.Context) (Command, error) {
	v, err := c.rdb.Get(ctx, c.key()).Result()
	if errors.Is(err, redis.Nil) {
		return Command{State: ControlRunning}, nil
	}
	if err != nil {
		return Command{}, fmt.Errorf("cannot read the crawl's control word (is Redis reachable?): %w", err)
	}
	var cmd Command
	if err := json.Unmarshal([]byte(v), &cmd); err != nil {
		return Command{}, fmt.Errorf("cannot decode the control word %q: %w", v, err)
	}
	return cmd, nil
}

// Set makes state the crawl's state, raises seq and wakes the followers.
// It returns the new command; a state other than the Control* constants is
// an error wrapping ErrBadControl.
func (c *Control) Set(ctx context.Context, state string) (Command, error) {
	switch state {
	case ControlRunning, ControlPaused, ControlStopping:
	default:
		return Command{}, fmt.Errorf("cannot set control state %q: %w: want %s, %s or %s", state, ErrBadControl, ControlRunning, ControlPaused, ControlStopping)
	}
	return c.run(ctx, state, nil)
}

// AddSeeds queues urls for the crawl (popped once, by PopSeeds), raises
// seq without changing the state and wakes the followers. The URLs are not
// checked here: the node that pops them applies the crawl's rules.
func (c *Control) AddSeeds(ctx context.Context, urls []string) (Command, error) {
	if len(urls) == 0 {
		return Command{}, errors.New("cannot add seeds: no URL given")
	}
	return c.run(ctx, "", urls)
}

func (c *Control) run(ctx context.Context, state string, urls []string) (Command, error) {
	args := make([]any, 0, 1+len(urls))
	args = append(args, state)
	for _, u := range urls {
		args = append(args, u)
	}
	v, err := setScript.Run(ctx, c.rdb, []string{c.key(), c.seedsKey(), c.channel()}, args...).Text()
	if err != nil {
		return Command{}, fmt.Errorf("cannot write the crawl's control word (is Redis reachable?): %w", err)
	}
	var cmd Command
	if err := json.Unmarshal([]byte(v), &cmd); err != nil {
		return Command{}, fmt.Errorf("cannot decode the control word %q: %w", v, err)
	}
	return cmd, nil
}

// DrainSeeds pops every queued seed URL, a batch of up to 100 at a time,
// and hands each batch to add; each URL reaches exactly one caller on any
// node. It returns the first error of Redis or of add; the URLs of the
// batch add failed on are not queued again.
func (c *Control) DrainSeeds(ctx context.Context, add func(ctx context.Context, urls []string) error) error {
	for {
		urls, err := c.PopSeeds(ctx, 100)
		if err != nil || len(urls) == 0 {
			return err
		}
		if err := add(ctx, urls); err != nil {
			return err
		}
	}
}

// PopSeeds removes and returns up to max queued seed URLs: each URL is
// returned to exactly one caller.
func (c *Control) PopSeeds(ctx context.Context, max int) ([]string, error) {
	v, err := c.rdb.LPopCount(ctx, c.seedsKey(), max).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot pop the seeds added by spider control: %w", err)
	}
	return v, nil
}

// Ack records that node applied every command up to seq.
func (c *Control) Ack(ctx context.Context, node string, seq int64) error {
	if err := ackScript.Run(ctx, c.rdb, []string{c.acksKey()}, node, seq).Err(); err != nil {
		return fmt.Errorf("cannot acknowledge control seq %d: %w", seq, err)
	}
	return nil
}

// Acks returns every node's last ack and the Redis server time, Unix ms.
func (c *Control) Acks(ctx context.Context) (map[string]Ack, int64, error) {
	pipe := c.rdb.Pipeline()
	all := pipe.HGetAll(ctx, c.acksKey())
	tm := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("cannot read the nodes' control acks: %w", err)
	}
	out := make(map[string]Ack, len(all.Val()))
	for node, v := range all.Val() {
		var a Ack
		if json.Unmarshal([]byte(v), &a) == nil {
			out[node] = a
		}
	}
	return out, tm.Val().UnixMilli(), nil
}

// Live returns the nodes whose ack is fresher than ControlLive.
func (c *Control) Live(ctx context.Context) ([]string, error) {
	acks, now, err := c.Acks(ctx)
	if err != nil {
		return nil, err
	}
	var live []string
	for node, a := range acks {
		if now-a.AtMS <= ControlLive.Milliseconds() {
			live = append(live, node)
		}
	}
	return live, nil
}

// WaitAcks waits until every node of nodes acknowledged seq or ctx ends; it
// returns the nodes that did, and those that did not, and never an error for
// ctx's end (only for Redis). It polls every 5 ms.
func (c *Control) WaitAcks(ctx context.Context, seq int64, nodes []string) (acked, missing []string, err error) {
	for {
		acks, _, err := c.Acks(ctx)
		if err != nil && ctx.Err() == nil {
			return nil, nil, err
		}
		acked, missing = acked[:0], missing[:0]
		for _, n := range nodes {
			if a, ok := acks[n]; ok && a.Seq >= seq {
				acked = append(acked, n)
			} else {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 || ctx.Err() != nil {
			return acked, missing, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Fresh prepares a new run of the crawl: a crawl left stopping by a
// `spider control stop` runs again (a paused crawl stays paused). Every
// node calls it before Follow.
func (c *Control) Fresh(ctx context.Context) error {
	cmd, err := c.Get(ctx)
	if err != nil {
		return err
	}
	if cmd.State != ControlStopping {
		return nil
	}
	_, err = c.Set(ctx, ControlRunning)
	return err
}

// Follow applies the crawl's commands on node until ctx ends or apply
// returns an error (which Follow returns). apply is called once at the
// start with the current command and then with every command of a higher
// seq (several changes in a row may come as one call with the last); after
// it returns nil, Follow acknowledges the seq. Between commands Follow
// refreshes the node's ack every ControlPoll. A Redis error is logged and
// retried at the next poll.
func (c *Control) Follow(ctx context.Context, node string, log *slog.Logger, apply func(context.Context, Command) error) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sub := c.rdb.Subscribe(ctx, c.channel())
	defer sub.Close()
	msgs := sub.Channel()
	t := time.NewTicker(ControlPoll)
	defer t.Stop()
	last := int64(-1)
	for {
		cmd, err := c.Get(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("cannot read the crawl's control word; retrying", "err", err)
		case err == nil:
			if cmd.Seq != last {
				if err := apply(ctx, cmd); err != nil {
					return err
				}
				last = cmd.Seq
			}
			if err := c.Ack(ctx, node, last); err != nil && ctx.Err() == nil {
				log.Warn("cannot acknowledge the crawl's control word; retrying", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-msgs:
		case <-t.C:
		}
	}
}
