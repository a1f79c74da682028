package rstate

import "github.com/redis/go-redis/v9"

// Positions of the keys in every script's KEYS (Lua indexes from 1).
const (
	kMeta = iota
	kPending
	kSeq
	kSeen
	kBloom
	kLive
	kCounters
	kFP
	kFence  // the fence key, or kMeta's key when there is no fence
	kCall   // the reply-cache key of this call (Discover and Complete)
	kLinks  // with Options.Relink: fetched URL key → kept-links record
	kSim    // near-duplicate tables: dedup.SimTables key → filed pages (near.go)
	kRv     // revisit records: URL key → request encoding (revisit.go)
	kDue    // due index: sorted set of URL keys by Due (Unix ms)
	kFailed // set of the URL keys whose last completion failed
	numKeys
)

// luaLib is the code shared by the write scripts. Its key indexes must match
// the constants above.
//
// uv and fields parse the binary encoding of frontier.Request (see
// frontier.Request.AppendBinary) as strictly as UnmarshalBinary does and
// never raise an error: a malformed record gives nil. Lua numbers are
// doubles, so varints are exact up to 2^53; Seqs and depths stay far below.
const luaLib = `
local K_META, K_PENDING, K_SEQ, K_SEEN, K_BLOOM, K_LIVE, K_COUNTERS, K_FP, K_FENCE, K_CALL, K_LINKS, K_SIM, K_RV, K_DUE, K_FAILED = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15

-- fence returns an error reply when the fence key does not hold v ('' = no fence).
local function fence(v)
  if v == '' then return nil end
  local cur = redis.call('GET', KEYS[K_FENCE])
  if cur ~= v then
    local who = 'nobody'
    if cur then who = cur end
    return redis.error_reply('FENCED the bucket is owned by ' .. who)
  end
  return nil
end

-- uv decodes the uvarint at s[p]; it returns the value and the position after it.
local function uv(s, p)
  local v, m = 0, 1
  for i = 0, 9 do
    local b = string.byte(s, p + i)
    if not b then return nil end
    if b < 128 then
      if i == 9 and b > 1 then return nil end
      return v + b * m, p + i + 1
    end
    v = v + (b - 128) * m
    m = m * 128
  end
  return nil
end

local function putuv(v)
  local t = {}
  while v >= 128 do
    t[#t + 1] = string.char(v % 128 + 128)
    v = math.floor(v / 128)
  end
  t[#t + 1] = string.char(v)
  return table.concat(t)
end

-- fields parses a request record: its URL and Depth and where its Depth (ds),
-- Seq (ss), Redirects (rs) and Topic (ts) start, and its Seq. Version 1
-- ends with the Topic; version 2 adds the Kind (one byte, 0 or 1) and the
-- Schedule (length-prefixed), never both zero (UnmarshalBinary's rules).
local function fields(s)
  local ver = string.byte(s, 1)
  if ver ~= 1 and ver ~= 2 then return nil end
  local n, p = uv(s, 2)
  if not n or p + n - 1 > #s then return nil end
  local f = {url = string.sub(s, p, p + n - 1)}
  n, p = uv(s, p + n)
  if not n or p + n - 1 > #s then return nil end
  p = p + n
  f.ds = p
  local z
  z, p = uv(s, p)
  if not z then return nil end
  if z % 2 == 0 then f.depth = z / 2 else f.depth = -(z + 1) / 2 end
  z, p = uv(s, p)
  if not z then return nil end
  f.ss = p
  f.seq, p = uv(s, p)
  if not f.seq then return nil end
  f.se = p
  z, p = uv(s, p)
  if not z then return nil end
  f.rs = p
  z, p = uv(s, p)
  if not z then return nil end
  f.ts = p
  n, p = uv(s, p)
  if ver == 1 then
    if not n or p + n - 1 ~= #s then return nil end
    return f
  end
  if not n or p + n - 1 >= #s then return nil end
  p = p + n
  local kind = string.byte(s, p)
  if kind > 1 then return nil end
  n, p = uv(s, p + 1)
  if not n or p + n - 1 ~= #s then return nil end
  if kind == 0 and n == 0 then return nil end
  return f
end

-- pendingAs reports whether the URL of revisit record f (fields) is
-- pending under the Seq the record holds (TakeDue's).
local function pendingAs(f)
  if f.seq == 0 then return false end
  local rec = redis.call('HGET', KEYS[K_PENDING], string.format('%.0f', f.seq))
  if not rec then return false end
  local p = fields(rec)
  return p ~= nil and p.url == f.url
end

-- bitsop reports whether the bits at the k positions ARGV[at..at+k-1]
-- (decimal strings: GETBIT parses them faster than it converts Lua numbers)
-- are all set; with set true it sets them instead.
local function bitsop(at, k, set)
  for i = at, at + k - 1 do
    if set then
      redis.call('SETBIT', KEYS[K_BLOOM], ARGV[i], 1)
    elseif redis.call('GETBIT', KEYS[K_BLOOM], ARGV[i]) == 0 then
      return false
    end
  end
  return true
end

-- relinkOne lowers the kept-links record of the fetched URL key (see
-- keptRecord in links.go: uvarint depth, uvarint base depth, the requests)
-- to depth when that is smaller. It returns {record} (the rewritten
-- record: the caller discovers its requests again, shifted) or nil.
local function relinkOne(key, depth)
  if depth < 0 then return nil end
  local rec = redis.call('HGET', KEYS[K_LINKS], key)
  if not rec then return nil end
  local cur, p = uv(rec, 1)
  if not cur or depth >= cur then return nil end
  local nrec = putuv(depth) .. string.sub(rec, p)
  redis.call('HSET', KEYS[K_LINKS], key, nrec)
  return {nrec}
end

-- discover handles n requests whose arguments start at ARGV[at], each as
--   urlkey, head, tail, depth, dp, rd, then k bit positions (bloom mode)
-- where the record with Seq s is head .. uvarint(s) .. tail, dp is the
-- encoded Depth and Priority and rd the encoded Redirects. It appends one
-- item per request to out: 0 (already seen), the new Seq, the lowered
-- record, or with relink, for a fetched URL found at a smaller depth than
-- its kept links record says, {record} (relinkOne). It returns how many
-- damaged pending records it skipped.
local function discover(at, n, bloom, k, relink, out)
  local seenKey = KEYS[K_SEEN]
  if bloom then seenKey = KEYS[K_LIVE] end
  local added, damaged = 0, 0
  for _ = 1, n do
    local key, depth, pos = ARGV[at], ARGV[at + 3], at + 6
    local v
    local known = true
    if bloom then
      known = bitsop(pos, k, false)
      if known then v = redis.call('HGET', seenKey, key) end
    else
      v = redis.call('HGET', seenKey, key)
      known = v ~= false
    end
    if not known then
      local seq = redis.call('INCR', KEYS[K_SEQ])
      local sf = string.format('%.0f', seq)
      redis.call('HSET', KEYS[K_PENDING], sf, ARGV[at + 1] .. putuv(seq) .. ARGV[at + 2])
      redis.call('HSET', seenKey, key, sf .. ',' .. depth)
      if bloom then bitsop(pos, k, true) end
      added = added + 1
      out[#out + 1] = seq
    else
      local item = 0
      if v then
        local c = string.find(v, ',', 1, true)
        local old = c and tonumber(string.sub(v, c + 1))
        if old and tonumber(depth) < old then
          local sf = string.sub(v, 1, c - 1)
          local rec = redis.call('HGET', KEYS[K_PENDING], sf)
          if rec then
            local f = fields(rec)
            if f then
              item = string.sub(rec, 1, f.ds - 1) .. ARGV[at + 4] .. string.sub(rec, f.ss, f.rs - 1) .. ARGV[at + 5] .. string.sub(rec, f.ts)
              redis.call('HSET', KEYS[K_PENDING], sf, item)
              redis.call('HSET', seenKey, key, sf .. ',' .. depth)
            else
              damaged = damaged + 1
            end
          elseif relink then
            -- Fetched (exact mode): its seen depth drops, its links follow.
            redis.call('HSET', seenKey, key, sf .. ',' .. depth)
            item = relinkOne(key, tonumber(depth)) or 0
          end
        end
      elseif relink then
        -- Bloom mode: a fetched URL is not in live; its kept links record
        -- holds its depth.
        item = relinkOne(key, tonumber(depth)) or 0
      end
      out[#out + 1] = item
    end
    at = pos + k
  end
  if added > 0 then redis.call('HINCRBY', KEYS[K_META], 'seen', added) end
  return damaged
end

-- replay returns the stored reply of a call that already ran (a client
-- retry after a lost reply), or nil.
local function replay()
  local prev = redis.call('GET', KEYS[K_CALL])
  if prev then return cmsgpack.unpack(prev) end
  return nil
end

-- begin starts a write script that keeps its reply (remember): it returns what the
-- script must return at once, the reply of a call that already ran (replay) or the
-- error of a fence value v that is not the bucket's (fence), else nil.
local function begin(v)
  local prev = replay()
  if prev then return prev end
  return fence(v)
end

-- remember stores the reply of this call for replay, for ttl seconds.
local function remember(out, ttl)
  redis.call('SET', KEYS[K_CALL], cmsgpack.pack(out), 'EX', ttl)
end
` + luaSimScan + `
-- nearest looks a SimHash up in the near-duplicate tables (K_SIM: table key
-- → entries, each the 8-byte hash, a 2-byte URL length and the URL). arg is
-- simArg: the distance k (1 byte), the hash (8 bytes), then one 10-byte
-- table key per table. It returns the URL, other than owner, of the nearest
-- filed hash within k (ties: the first found), or '' after filing the hash
-- under owner in every table (a table key's entries stop growing at
-- SIM_MAX bytes).
local SIM_MAX = 16384
local function nearest(arg, owner, self)
  local k = string.byte(arg, 1)
  local h = {string.byte(arg, 2, 9)}
  local n = math.floor((#arg - 9) / 10)
  local best, bestD = nil, k + 1
  local mineD = k + 1
  local vals = {}
  for i = 0, n - 1 do
    local v = redis.call('HGET', KEYS[K_SIM], string.sub(arg, 10 + 10 * i, 19 + 10 * i))
    vals[i] = v or ''
    if v then best, bestD, mineD = sim_scan(v, h, owner, self, best, bestD, mineD) end
  end
  -- The page itself (a revisit) nearest: not a duplicate, nothing filed.
  if mineD <= k and mineD <= bestD then return '' end
  if best then return best end
  if #owner > 65535 then return '' end
  local e = string.sub(arg, 2, 9) .. string.char(math.floor(#owner / 256), #owner % 256) .. owner
  for i = 0, n - 1 do
    if #vals[i] + #e <= SIM_MAX then
      redis.call('HSET', KEYS[K_SIM], string.sub(arg, 10 + 10 * i, 19 + 10 * i), vals[i] .. e)
    end
  end
  return ''
end
`

// luaSimScan defines sim_scan(v, h, owner, self, best, bestD, mineD), the scan of one
// near-duplicate table's value that the bucket scripts' nearest (luaLib) and the
// crawl-wide simFileScript share. v holds entries of an 8-byte SimHash, a 2-byte URL
// length and the URL; h is the looked-up hash as 8 byte values. The nearest entry of a
// URL other than owner and self replaces best, bestD when nearer than bestD (ties: the
// first found); the nearest of owner or self lowers mineD. It returns best, bestD, mineD
// and whether v holds an entry of owner.
const luaSimScan = `
local sim_pop = nil -- popcounts of bytes, built at the first entry
local function sim_scan(v, h, owner, self, best, bestD, mineD)
  local owned = false
  local p = 1
  while p + 9 <= #v do
    local len = string.byte(v, p + 8) * 256 + string.byte(v, p + 9)
    local u = string.sub(v, p + 10, p + 9 + len)
    if not sim_pop then
      sim_pop = {}
      for b = 0, 255 do
        local c, x = 0, b
        while x > 0 do c = c + x % 2; x = math.floor(x / 2) end
        sim_pop[b] = c
      end
    end
    local d = 0
    for j = 0, 7 do d = d + sim_pop[bit.bxor(string.byte(v, p + j), h[j + 1])] end
    if u == owner or u == self then
      if u == owner then owned = true end
      if d < mineD then mineD = d end
    elseif d < bestD then
      best, bestD = u, d
    end
    p = p + 10 + len
  end
  return best, bestD, mineD, owned
end
`

// initScript creates the bucket's meta hash (and in bloom mode its filter)
// if it is new and returns the stored mode, filter shape and creation time.
//
//	ARGV: fence value, mode, bloom m, bloom k, creation time
var initScript = redis.NewScript("#!lua\n" + luaLib + `
local e = fence(ARGV[1])
if e then return e end
if redis.call('HSETNX', KEYS[K_META], 'mode', ARGV[2]) == 1 then
  redis.call('HSET', KEYS[K_META], 'bloom_m', ARGV[3], 'bloom_k', ARGV[4], 'created', ARGV[5], 'seen', 0, 'pages', 0)
  if ARGV[2] == 'bloom' then
    -- Allocate the whole filter now: one exact allocation, where growing it
    -- bit by bit would over-allocate by up to 2x.
    redis.call('SETBIT', KEYS[K_BLOOM], string.format('%.0f', tonumber(ARGV[3]) - 1), 0)
  end
end
return redis.call('HMGET', KEYS[K_META], 'mode', 'bloom_m', 'bloom_k', 'created')
`)

// discoverScript: ARGV: fence value, mode, k, reply ttl, relink ("1"/"0"),
// n, then n request groups (see discover). Reply: {damaged, item...}.
var discoverScript = redis.NewScript("#!lua\n" + luaLib + `
local early = begin(ARGV[1])
if early then return early end
local out = {0}
out[1] = discover(7, tonumber(ARGV[6]), ARGV[2] == 'bloom', tonumber(ARGV[3]), ARGV[5] == '1', out)
for i = 2, #out do
  if out[i] ~= 0 then remember(out, ARGV[4]) break end
end
return out
`)

// completeScript: ARGV: fence value, mode, k, reply ttl, Seq, URL, depth,
// class, stored ("1"/"0"), fingerprint (8 bytes or ""), fingerprint owner,
// urlkey, relink ("1"/"0"), kept requests (keptRequests encoding, "" for
// none), n, the near-duplicate lookup (simArg: "" for none), the revisit
// record ("" for none: the URL's record is removed), its Due in Unix ms
// ("" for none), failed ("1"/"0"), then n request groups. Reply: {done (0 = not pending), duplicate-of, damaged, relinked,
// near (1: duplicate-of found by SimHash), item...}.
//
// With relink, the URL's depth is its seen depth when that is below the
// request's (lowered while in flight). The kept requests are stored as
// the record depth, request depth, requests (for a depth ≥ 1: a seed is
// never lowered). If the URL was lowered, the n groups are not discovered
// (their items are 0) and relinked is that record, for the caller to
// discover the kept requests again, shifted; else relinked is "".
var completeScript = redis.NewScript("#!lua\n" + luaLib + `
local early = begin(ARGV[1])
if early then return early end
local sf = ARGV[5]
local rec = redis.call('HGET', KEYS[K_PENDING], sf)
if not rec then return {0, '', 0, '', 0} end
local f = fields(rec)
if not f then return redis.error_reply('DAMAGED pending record ' .. sf .. ' cannot be decoded') end
if f.url ~= ARGV[6] then return redis.error_reply('MISMATCH pending record ' .. sf .. ' holds another URL') end
local bloom = ARGV[2] == 'bloom'
local relink = ARGV[13] == '1'
local depth = tonumber(ARGV[7])
local cur = depth
if relink then
  local seenKey = KEYS[K_SEEN]
  if bloom then seenKey = KEYS[K_LIVE] end
  local v = redis.call('HGET', seenKey, ARGV[12])
  local c = v and string.find(v, ',', 1, true)
  local d = c and tonumber(string.sub(v, c + 1))
  if d and d < cur then cur = d end
end
redis.call('HDEL', KEYS[K_PENDING], sf)
if bloom then redis.call('HDEL', KEYS[K_LIVE], ARGV[12]) end
redis.call('HINCRBY', KEYS[K_COUNTERS], ARGV[8], 1)
if ARGV[9] == '1' then redis.call('HINCRBY', KEYS[K_META], 'pages', 1) end
local dup = ''
if ARGV[10] ~= '' then
  local owner = redis.call('HGET', KEYS[K_FP], ARGV[10])
  if not owner then
    redis.call('HSET', KEYS[K_FP], ARGV[10], ARGV[11])
  elseif owner ~= ARGV[11] and owner ~= ARGV[6] then
    dup = owner
  end
end
local near = 0
if dup == '' and ARGV[16] ~= '' then
  dup = nearest(ARGV[16], ARGV[11], ARGV[6])
  if dup ~= '' then near = 1 end
end
local rk = ARGV[12]
if ARGV[17] == '' then
  redis.call('HDEL', KEYS[K_RV], rk)
  redis.call('ZREM', KEYS[K_DUE], rk)
else
  redis.call('HSET', KEYS[K_RV], rk, ARGV[17])
  if ARGV[18] ~= '' then
    redis.call('ZADD', KEYS[K_DUE], ARGV[18], rk)
  else
    redis.call('ZREM', KEYS[K_DUE], rk)
  end
end
if ARGV[19] == '1' then
  redis.call('SADD', KEYS[K_FAILED], rk)
else
  redis.call('SREM', KEYS[K_FAILED], rk)
end
local out = {1, dup, 0, '', near}
local n = tonumber(ARGV[15])
if relink and ARGV[14] ~= '' and cur >= 0 and depth >= 0 then
  local kept = putuv(cur) .. putuv(depth) .. ARGV[14]
  if cur > 0 then redis.call('HSET', KEYS[K_LINKS], ARGV[12], kept) end
  if cur < depth then out[4] = kept end
end
if cur < depth then
  for _ = 1, n do out[#out + 1] = 0 end
else
  out[3] = discover(20, n, bloom, tonumber(ARGV[3]), relink, out)
end
local keep = dup ~= '' or out[4] ~= ''
for i = 6, #out do
  if out[i] ~= 0 then keep = true break end
end
if keep then remember(out, ARGV[4]) end
return out
`)

// updateScript: ARGV: fence value, Seq, URL, record. Reply: 1 updated, 0
// not pending.
var updateScript = redis.NewScript("#!lua\n" + luaLib + `
local e = fence(ARGV[1])
if e then return e end
local rec = redis.call('HGET', KEYS[K_PENDING], ARGV[2])
if not rec then return 0 end
local f = fields(rec)
if not f then return redis.error_reply('DAMAGED pending record ' .. ARGV[2] .. ' cannot be decoded') end
if f.url ~= ARGV[3] then return redis.error_reply('MISMATCH pending record ' .. ARGV[2] .. ' holds another URL') end
redis.call('HSET', KEYS[K_PENDING], ARGV[2], ARGV[4])
return 1
`)

// takeDueScript makes up to max due URLs pending again (Revisits.TakeDue):
// the earliest in the due set with a score at or below now, each given a
// fresh Seq (its revisit record's request with that Seq becomes its pending
// record, and the revisit record keeps the Seq); a URL still pending under
// its record's Seq, or without a record, only leaves the due set.
//
//	ARGV: fence value, reply ttl, now (Unix ms), max. Reply: the pending
//	records made, in Due order.
var takeDueScript = redis.NewScript("#!lua\n" + luaLib + `
local early = begin(ARGV[1])
if early then return early end
local now, max = ARGV[3], tonumber(ARGV[4])
local out, damaged = {}, 0
while #out < max do
  local ks = redis.call('ZRANGEBYSCORE', KEYS[K_DUE], '-inf', now, 'LIMIT', 0, max - #out)
  if #ks == 0 then break end
  for _, k in ipairs(ks) do
    redis.call('ZREM', KEYS[K_DUE], k)
    local rec = redis.call('HGET', KEYS[K_RV], k)
    local f = rec and fields(rec)
    if rec and not f then damaged = damaged + 1 end
    if f and not pendingAs(f) then
      local seq = redis.call('INCR', KEYS[K_SEQ])
      local nrec = string.sub(rec, 1, f.ss - 1) .. putuv(seq) .. string.sub(rec, f.se)
      redis.call('HSET', KEYS[K_PENDING], string.format('%.0f', seq), nrec)
      redis.call('HSET', KEYS[K_RV], k, nrec)
      out[#out + 1] = nrec
    end
  end
end
if #out > 0 then
  redis.call('HINCRBY', KEYS[K_META], 'taken', #out)
  remember(out, ARGV[2])
end
if damaged > 0 then redis.log(redis.LOG_WARNING, 'spider: ' .. damaged .. ' damaged revisit records left the due set of ' .. KEYS[K_DUE]) end
return out
`)

// retryFailedScript puts every URL of the failed set that has a revisit
// record and is not pending in the due set at now (Revisits.RetryFailed).
//
//	ARGV: fence value, now (Unix ms). Reply: how many.
var retryFailedScript = redis.NewScript("#!lua\n" + luaLib + `
local e = fence(ARGV[1])
if e then return e end
local n = 0
for _, k in ipairs(redis.call('SMEMBERS', KEYS[K_FAILED])) do
  local rec = redis.call('HGET', KEYS[K_RV], k)
  local f = rec and fields(rec)
  if f and not pendingAs(f) then
    redis.call('ZADD', KEYS[K_DUE], ARGV[2], k)
    n = n + 1
  end
end
return n
`)

// rescheduleReadScript reads the revisit records of keys for Reschedule:
// per key its record (empty for none, or a record whose URL is pending under
// its Seq: left alone) and its Due (empty for none). Read-only.
//
//	KEYS: the store's keys. ARGV: the URL keys. Reply: record, due, … per key.
var rescheduleReadScript = redis.NewScript("#!lua flags=no-writes\n" + luaLib + `
local out = {}
for i = 1, #ARGV do
  local rec = redis.call('HGET', KEYS[K_RV], ARGV[i])
  local f = rec and fields(rec)
  if not f or pendingAs(f) then rec = '' end
  local due = redis.call('ZSCORE', KEYS[K_DUE], ARGV[i])
  out[#out + 1] = rec
  out[#out + 1] = due or ''
end
return out
`)

// rescheduleScript writes Reschedule's decisions: for each URL key whose
// record still holds the record read (a Complete or TakeDue meanwhile
// wins) and is not pending, the new record and Due (empty takes the URL out
// of the due set); the failed set is left as it is.
//
//	ARGV: fence value, then key, record read, new record, new Due (Unix ms
//	or '') per URL. Reply: how many records changed.
var rescheduleScript = redis.NewScript("#!lua\n" + luaLib + `
local e = fence(ARGV[1])
if e then return e end
local n = 0
for i = 2, #ARGV, 4 do
  local k = ARGV[i]
  local rec = redis.call('HGET', KEYS[K_RV], k)
  local f = rec and fields(rec)
  if rec == ARGV[i + 1] and f and not pendingAs(f) then
    redis.call('HSET', KEYS[K_RV], k, ARGV[i + 2])
    if ARGV[i + 3] == '' then
      redis.call('ZREM', KEYS[K_DUE], k)
    else
      redis.call('ZADD', KEYS[K_DUE], ARGV[i + 3], k)
    end
    n = n + 1
  end
end
return n
`)
