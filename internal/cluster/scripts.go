package cluster

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// luaClock is LuaNow (now_us, now_ms) and next_counter, shared by the scripts below.
// next_counter(key) raises a counter to max(old+1, now_us), so epochs and fencing tokens
// keep increasing even when Redis lost the counter (a restart without persistence, or the
// last second of an everysec AOF), as long as the server's clock does not go back.
const luaClock = LuaNow + `
local function next_counter(key)
  local n = tonumber(redis.call('GET', key) or '0') + 1
  if now_us > n then n = now_us end
  redis.call('SET', key, string.format('%d', n))
  return n
end
`

// Membership scripts: KEYS = members zset, info hash, epoch.

// luaTaken defines taken(id, instance): the reply {"taken", record, deadline ms, now ms}
// when id is listed with a live deadline (not passed) under an Instance other than
// instance (both non-empty), else nil. A record without an Instance (written by an
// older spider) never counts as taken. Needs luaClock's now_ms; KEYS = members, info.
const luaTaken = luaOther + `
local function taken(id, instance)
  if instance == '' then return nil end
  local score = redis.call('ZSCORE', KEYS[1], id)
  if not score or tonumber(score) < now_ms then return nil end
  local other, old = other_instance(id, instance)
  if not other then return nil end
  return {'taken', old, string.format('%d', tonumber(score)), string.format('%d', now_ms)}
end
`

// luaOther defines other_instance(id, instance) → boolean, record: true when id's record
// names an Instance, and one other than instance (both non-empty); the record (or the
// empty string) as second value. KEYS[2] = info.
const luaOther = `
local function other_instance(id, instance)
  if instance == '' then return false, '' end
  local old = redis.call('HGET', KEYS[2], id) or ''
  local ok, rec = pcall(cjson.decode, old)
  return ok and type(rec) == 'table' and type(rec.instance) == 'string' and rec.instance ~= '' and rec.instance ~= instance, old
end
`

// joinScript: ARGV = id, ttl ms, record JSON, weight, channel, instance. Registers or
// refreshes the member, unless another instance holds the ID with a live deadline
// (then the reply of taken, nothing written); raises the epoch when it was absent or its
// weight changed. Returns {"ok", epoch}.
var joinScript = redis.NewScript(luaClock + luaTaken + `
local t = taken(ARGV[1], ARGV[6])
if t then return t end
local changed = false
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  changed = true
else
  local old = redis.call('HGET', KEYS[2], ARGV[1])
  local ok, rec = pcall(cjson.decode, old or '')
  if not ok or type(rec) ~= 'table' or string.format('%d', tonumber(rec.weight) or -1) ~= ARGV[4] then
    changed = true
  end
end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
if changed then
  local e = next_counter(KEYS[3])
  redis.call('PUBLISH', ARGV[5], string.format('%d', e))
  return {'ok', e}
end
return {'ok', tonumber(redis.call('GET', KEYS[3]) or '0')}
`)

// checkScript: ARGV = id, instance. Writes nothing; returns the reply of taken, or
// {"free"}.
var checkScript = redis.NewScript(luaClock + luaTaken + `
local t = taken(ARGV[1], ARGV[2])
if t then return t end
return {'free'}
`)

// heartbeatScript: ARGV = id, ttl ms, record JSON, instance. Extends a registered
// member's deadline and stores its record; returns {"ok"}, {"absent"} when the member is
// not registered (it expired and was removed, or Redis lost it), or the reply of taken
// when another instance holds the ID with a live deadline (nothing written). A listing
// under another instance whose deadline passed counts as absent: the join script takes
// it over.
var heartbeatScript = redis.NewScript(luaClock + luaTaken + `
local t = taken(ARGV[1], ARGV[4])
if t then return t end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return {'absent'} end
if other_instance(ARGV[1], ARGV[4]) then return {'absent'} end
redis.call('ZADD', KEYS[1], 'XX', now_ms + tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return {'ok'}
`)

// leaveScript: ARGV = id, channel, instance. Removes the member, unless it is listed
// under another (non-empty) instance: a process whose ID was taken over must not remove
// the new holder. Raises the epoch if it removed it. Returns 1 if it was registered.
var leaveScript = redis.NewScript(luaClock + luaOther + `
if other_instance(ARGV[1], ARGV[3]) then return 0 end
local n = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if n == 1 then
  redis.call('PUBLISH', ARGV[2], string.format('%d', next_counter(KEYS[3])))
end
return n
`)

// membersScript: ARGV = channel. Removes every member past its deadline (raising the
// epoch once if any), then returns {epoch, {id, deadline ms, …}, {record, …}}.
var membersScript = redis.NewScript(luaClock + `
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', now_ms))
for i = 1, #expired, 1000 do
  local chunk = {}
  for j = i, math.min(i + 999, #expired) do chunk[#chunk + 1] = expired[j] end
  redis.call('ZREM', KEYS[1], unpack(chunk))
  redis.call('HDEL', KEYS[2], unpack(chunk))
end
if #expired > 0 then
  redis.call('PUBLISH', ARGV[1], string.format('%d', next_counter(KEYS[3])))
end
local live = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local recs = {}
for i = 1, #live, 2 do
  recs[#recs + 1] = redis.call('HGET', KEYS[2], live[i]) or ''
end
return {tonumber(redis.call('GET', KEYS[3]) or '0'), live, recs}
`)

// Lease scripts: KEYS = owner, fence.

// acquireScript: ARGV = node, ttl ms. Takes the lease when it is free or held by an
// earlier incarnation of the same node, with a new fencing token; returns {token, ""} on
// success and {0, current value} when another node holds it.
var acquireScript = redis.NewScript(luaClock + `
local cur = redis.call('GET', KEYS[1])
if cur then
  local holder = string.match(cur, '^(.*):[0-9]+$')
  if holder ~= ARGV[1] then return {0, cur} end
end
local tok = next_counter(KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', tok), 'PX', ARGV[2])
return {tok, ''}
`)

// renewScript: KEYS = owner; ARGV = holder value ("node:token" for a bucket lease, a
// Lock's value), ttl ms. Extends the lease if it is still this holder's; returns 1 if
// so, 0 if the lease is gone or someone else's. BucketLeases and Lock share it, and
// it checks the holder as fenced scripts do (CheckOwnerLua).
var renewScript = redis.NewScript(CheckOwnerLua + `
if spider_check_owner(KEYS[1], ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// releaseScript: KEYS = owner; ARGV = holder value. Deletes the lease if it is still
// this holder's; returns 1 if so. BucketLeases and Lock share it.
var releaseScript = redis.NewScript(CheckOwnerLua + `
if spider_check_owner(KEYS[1], ARGV[1]) then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// scriptCall is one invocation of a script in a batch.
type scriptCall struct {
	keys []string
	args []any
}

// evalBatch runs s once per call in a ScriptBatch. The returned commands are in call
// order; the error is the pipeline's transport error, if any (a script's error reply is
// not: each command carries its own result).
func evalBatch(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, calls []scriptCall) ([]*redis.Cmd, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	b := NewScriptBatch(rdb)
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = b.Add(ctx, s, c.keys, c.args...)
	}
	_ = b.Exec(ctx) // the transport errors are told from the replies below
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && !isReplyError(err) {
			return cmds, err
		}
	}
	return cmds, nil
}

// isReplyError reports whether err is a reply of the server (the command ran and failed,
// or found nothing) rather than a transport or context error.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}
