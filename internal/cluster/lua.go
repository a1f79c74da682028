package cluster

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts of every topology load from here: the server clock they share
// (LuaNow), and ScriptBatch, which runs scripts over many keys' slots in one pipeline and
// loads the ones a server does not know.

// LuaNow defines, for a Lua script that needs the time, now_us and now_ms: the Redis
// server's clock (TIME) in microseconds and in whole milliseconds. Every deadline,
// heartbeat and report time of the coordination code is taken from it, never from a
// node's clock, so nodes whose clocks disagree still agree on who is late. Paste it at the
// start of a script's body (it defines the local spider_t too); the values stay below
// 2^53, exact in Lua numbers.
const LuaNow = `
local spider_t = redis.call('TIME')
local now_us = tonumber(spider_t[1]) * 1000000 + tonumber(spider_t[2])
local now_ms = math.floor(now_us / 1000)
`

// ScriptBatch runs Lua scripts in one pipeline (one round trip per Redis node, or per
// Redis Cluster master), each by its SHA; the calls a server does not know the script of
// yet (NOSCRIPT: a new or restarted Redis, a master that never ran it) are sent again in
// full, in a second pipeline, after the first. No script runs twice. Use it for the
// calls of one step that touch several slots (a bucket's parts, many leases). Not safe
// for concurrent use; a batch runs once.
type ScriptBatch struct {
	rdb   redis.UniversalClient
	p     redis.Pipeliner
	calls []batchCall
}

type batchCall struct {
	s    *redis.Script
	keys []string
	args []any
	cmd  *redis.Cmd
}

// NewScriptBatch returns an empty batch on rdb.
func NewScriptBatch(rdb redis.UniversalClient) *ScriptBatch {
	return &ScriptBatch{rdb: rdb, p: rdb.Pipeline()}
}

// Add queues s with keys and args and returns its command, which holds the script's
// reply (or error) once Exec returned, whether it ran by SHA or was sent again in full.
func (b *ScriptBatch) Add(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := s.EvalSha(ctx, b.p, keys, args...)
	b.calls = append(b.calls, batchCall{s: s, keys: keys, args: args, cmd: cmd})
	return cmd
}

// Exec runs the queued scripts and returns the first error of any (a transport error,
// or a script's error reply); redis.Nil (a script that returned nil) is no error. Every
// command of Add carries its own reply or error, also when Exec returns an error.
func (b *ScriptBatch) Exec(ctx context.Context) error {
	if len(b.calls) == 0 {
		return nil
	}
	_, _ = b.p.Exec(ctx) // each call's error is read below
	var retry []int
	for i, c := range b.calls {
		if redis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		p := b.rdb.Pipeline()
		again := make([]*redis.Cmd, len(retry))
		for j, i := range retry {
			c := b.calls[i]
			again[j] = c.s.Eval(ctx, p, c.keys, c.args...)
		}
		_, _ = p.Exec(ctx)
		for j, i := range retry {
			cmd := b.calls[i].cmd
			cmd.SetVal(again[j].Val())
			cmd.SetErr(again[j].Err())
		}
	}
	for _, c := range b.calls {
		if err := c.cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}
