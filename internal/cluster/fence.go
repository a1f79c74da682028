package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrFenced is returned by a FencedScript (and reported by CheckOwner) when the lease it
// was run under is no longer held: the bucket moved to another node, or the lease
// expired. The caller must stop working on the bucket.
var ErrFenced = errors.New("lease no longer held")

// fencedCode starts the error reply of a fenced script that was refused.
const fencedCode = "SPIDERFENCED"

// CheckOwnerLua defines, for Lua scripts that write a bucket's keys, the function
// spider_check_owner(owner_key, holder) → boolean: true when the lease key owner_key
// (Keys.Owner) holds exactly holder (OwnerValue(node, token)). Paste it before a script's
// body and call it before the first write; the owner key must be one of the script's
// KEYS, which in Redis Cluster means the script works on one bucket's keys (one hash
// tag). FencedScript does this for you.
const CheckOwnerLua = `
local function spider_check_owner(owner_key, holder)
  return redis.call('GET', owner_key) == holder
end
`

// fencedPrelude takes the owner key and the holder off KEYS and ARGV and refuses to run
// the body when the lease is not held.
const fencedPrelude = CheckOwnerLua + `
local spider_owner_key = table.remove(KEYS, 1)
local spider_holder = table.remove(ARGV, 1)
if not spider_check_owner(spider_owner_key, spider_holder) then
  return redis.error_reply('` + fencedCode + ` lease ' .. spider_owner_key .. ' not held by ' .. spider_holder)
end
`

// FencedScript is a Lua script that writes one bucket's keys only while a given lease on
// the bucket is held, atomically with the check: a node that lost a bucket can never
// write to it, whatever its clock or its view says. Safe for concurrent use.
type FencedScript struct {
	s *redis.Script
}

// NewFencedScript wraps body, a Lua script written as for EVAL: inside it, KEYS and ARGV
// are the ones given to Run (the lease key and holder are removed before body runs).
func NewFencedScript(body string) *FencedScript {
	return &FencedScript{s: redis.NewScript(fencedPrelude + body)}
}

// Run runs the script on bucket under lease, for node, with the bucket's keys (each
// should be keys.Bucket(lease.Bucket, …), so that in Redis Cluster they share the lease
// key's slot) and args. When the lease is not held it returns an error wrapping
// ErrFenced and the body does not run.
func (f *FencedScript) Run(ctx context.Context, rdb redis.Scripter, keys Keys, node string, lease Lease, bucketKeys []string, args ...any) (any, error) {
	k := append([]string{keys.Owner(lease.Bucket)}, bucketKeys...)
	a := append([]any{OwnerValue(node, lease.Token)}, args...)
	res, err := f.s.Run(ctx, rdb, k, a...).Result()
	if err != nil && strings.HasPrefix(err.Error(), fencedCode) {
		return nil, fmt.Errorf("cannot write bucket %d with token %d: %w", lease.Bucket, lease.Token, ErrFenced)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("cannot run fenced script on bucket %d: %w", lease.Bucket, err)
	}
	return res, err
}

// checkOwnerScript runs CheckOwnerLua alone: KEYS = owner; ARGV = holder.
var checkOwnerScript = redis.NewScript(CheckOwnerLua + `
if spider_check_owner(KEYS[1], ARGV[1]) then return 1 end
return 0
`)

// CheckOwner reports whether node holds bucket's lease with token right now (it may lose
// it the next moment: writes must use FencedScript, which checks atomically).
func CheckOwner(ctx context.Context, rdb redis.Scripter, keys Keys, bucket int, node string, token int64) (bool, error) {
	n, err := checkOwnerScript.Run(ctx, rdb, []string{keys.Owner(bucket)}, OwnerValue(node, token)).Int64()
	if err != nil {
		return false, fmt.Errorf("cannot check the lease of bucket %d: %w", bucket, err)
	}
	return n == 1, nil
}
