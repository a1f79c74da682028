package protocol

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
)

// hashLua is the Lua twin of URLHash.
const hashLua = `local function h(u) return string.sub(redis.sha1hex(u), 1, 16) end
`

// poolAddLua adds discovered URLs to URL_pool keeping the smallest depth. Values are
// "DEPTH:HOPS". ARGV: url, depth, hops triples.
const poolAddLua = `local function pooladd(key, first)
  for i = first, #ARGV, 3 do
    local cur = redis.call('HGET', key, ARGV[i])
    local d = tonumber(ARGV[i+1])
    if not cur or d < tonumber(string.match(cur, '^(%d+)')) then
      redis.call('HSET', key, ARGV[i], ARGV[i+1] .. ':' .. ARGV[i+2])
    end
  end
end
`

// seedScript: KEYS urlPool (one part); ARGV triples.
var seedScript = redis.NewScript(poolAddLua + `pooladd(KEYS[1], 1) return 1`)

// completeScript ends a task: removes it from task_pool:processing and adds its
// discovered URLs to URL_pool, in one step. KEYS taskProc, urlPool, stats of the task's
// part; ARGV[1] the task entry, then triples.
var completeScript = redis.NewScript(poolAddLua + `
redis.call('LREM', KEYS[1], 1, ARGV[1])
pooladd(KEYS[2], 2)
redis.call('HINCRBY', KEYS[3], 'tasks_done', 1)
return 1`)

// queueFrameScript is the local pass's (SPEC §0 step 1) commit in the host's core: the
// URLs that survived the finish_URL check become a flag-1 frame with a fresh number,
// queued in the outbox. Host.LocalPass removes them from their URL_pool part only
// after this ran (poolDelLua), so a crash in between submits them again in a later
// frame, which the center drops as already claimed: nothing is lost. KEYS outbox, seq,
// stats; ARGV network, host, center address, now (Unix ms), URLs dropped, then url,
// depth, hops triples.
var queueFrameScript = redis.NewScript(`
redis.call('HINCRBY', KEYS[3], 'local_dup', tonumber(ARGV[5]))
if #ARGV < 6 then return 0 end
local set, depth, hops, n = {}, {}, {}, 0
local hasd, hash = false, false
for i = 6, #ARGV, 3 do
  local u, d, r = ARGV[i], tonumber(ARGV[i+1]), tonumber(ARGV[i+2])
  set[u] = 0
  n = n + 1
  if d and d > 0 then depth[u] = d; hasd = true end
  if r and r > 0 then hops[u] = r; hash = true end
end
local seq = redis.call('INCR', KEYS[2])
local addr = ARGV[1] .. '/' .. ARGV[2]
local frame = {URL_set = set, IP = addr, number = addr .. '/' .. seq, flag = 1}
if hasd then frame.depth = depth end
if hash then frame.hops = hops end
redis.call('RPUSH', KEYS[1], cjson.encode({to = ARGV[3], keep = true, first = tonumber(ARGV[4]), frame = frame}))
redis.call('HINCRBY', KEYS[3], 'frames_submitted', 1)
redis.call('HINCRBY', KEYS[3], 'urls_submitted', n)
return n`)

// poolDelLua removes URLs from a URL_pool part, each only if its value is still the
// one the local pass read (a smaller depth written since stays for the next pass).
// KEYS urlPool; ARGV url, value pairs.
const poolDelLua = `
local n = 0
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i+1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
    n = n + 1
  end
end
return n`

// takeLua moves up to ARGV[1] tasks from task_pool to task_pool:processing (KEYS, of
// one part).
const takeLua = `
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #items > 0 then
  redis.call('LTRIM', KEYS[1], #items, -1)
  redis.call('RPUSH', KEYS[2], unpack(items))
end
return items`

var takeScript = redis.NewScript(takeLua)

// acceptLua is run by a center on a host's Redis: each task whose hash is new in
// finish_URL is appended to task_pool. Adding to finish_URL on hand-out (not after the
// fetch) makes the host answer "seen" for a URL it is about to crawl, and makes a repeated
// hand-out harmless. A host that is leaving refuses everything (-1): the center keeps the
// tasks in task_URL for the remaining hosts. KEYS finishURL, taskPool, received, leaving
// of one part (the part of every URL given); ARGV hash, task pairs.
const acceptLua = `
if redis.call('EXISTS', KEYS[4]) == 1 then return -1 end
local n = 0
for i = 1, #ARGV, 2 do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[2], ARGV[i+1])
    n = n + 1
  end
end
redis.call('INCR', KEYS[3])
return n`

// claimLocalLua: a center's claims for a flag-1 frame. A URL survives if nobody
// claimed it yet (it is then claimed "F:NUMBER"), or if this very frame claimed or
// passed it ("P:NUMBER": a re-run after a crash that came between the claims' update
// and the end of the round, see Center.finalize). KEYS claims (the part of every URL given); ARGV number, urls.
// Returns the survivors.
const claimLocalLua = hashLua + `
local mine = 'F:' .. ARGV[1]
local out = {}
for i = 2, #ARGV do
  local k = h(ARGV[i])
  local v = redis.call('HGET', KEYS[1], k)
  if not v then
    redis.call('HSET', KEYS[1], k, mine)
    out[#out+1] = ARGV[i]
  elseif v == mine or v == 'P:' .. ARGV[1] then
    out[#out+1] = ARGV[i]
  end
end
return out`

// claimRemoteLua: a center's verdict on another network's request. For a URL homed
// here the first claim wins: unclaimed → claimed "R:NUMBER" and 0; claimed by this very
// frame → 0; claimed by anything else → 1. For a URL homed elsewhere only final evidence
// counts: passed here ("P:…") → 1, else 0. KEYS claims (the part of every URL given);
// ARGV number, then url, home (1/0) pairs. Returns the marks in order.
const claimRemoteLua = hashLua + `
local mine = 'R:' .. ARGV[1]
local out = {}
for i = 2, #ARGV, 2 do
  local k = h(ARGV[i])
  local v = redis.call('HGET', KEYS[1], k)
  local mark = 0
  if ARGV[i+1] == '1' then
    if not v then
      redis.call('HSET', KEYS[1], k, mine)
    elseif v ~= mine then
      mark = 1
    end
  elseif v and string.sub(v, 1, 2) == 'P:' then
    mark = 1
  end
  out[#out+1] = mark
end
return out`

// moveBatchScript moves up to ARGV[1] entries from KEYS[1] to KEYS[2].
var moveBatchScript = takeScript

var (
	acceptScript      = redis.NewScript(acceptLua)
	claimLocalScript  = redis.NewScript(claimLocalLua)
	claimRemoteScript = redis.NewScript(claimRemoteLua)
	poolDelScript     = redis.NewScript(poolDelLua)
)

// scriptBatch runs scripts on several parts in one pipeline (one round trip per Redis
// Cluster master): a cluster.ScriptBatch, which sends by SHA and loads the scripts a
// server does not know yet. No script runs twice.
type scriptBatch struct{ b *cluster.ScriptBatch }

// scriptCall is one script of a batch; cmd holds its result after exec.
type scriptCall struct{ cmd *redis.Cmd }

func newScriptBatch(rdb redis.UniversalClient) *scriptBatch {
	return &scriptBatch{b: cluster.NewScriptBatch(rdb)}
}

// add queues s with keys and args.
func (b *scriptBatch) add(ctx context.Context, s *redis.Script, keys []string, args ...any) *scriptCall {
	return &scriptCall{cmd: b.b.Add(ctx, s, keys, args...)}
}

// exec runs the batch and returns the first script error (redis.Nil is no error).
func (b *scriptBatch) exec(ctx context.Context) error { return b.b.Exec(ctx) }
