package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestLuaNow: the clock of the scripts is the server's TIME, in µs and whole ms.
func TestLuaNow(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := testCtx(t)
	s := redis.NewScript(LuaNow + `return {string.format('%d', now_us), string.format('%d', now_ms), spider_t[1]}`)
	v, err := s.Run(ctx, rdb, nil).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	us, _ := strconv.ParseInt(v[0], 10, 64)
	ms, _ := strconv.ParseInt(v[1], 10, 64)
	sec, _ := strconv.ParseInt(v[2], 10, 64)
	if ms != us/1000 || us/1_000_000 != sec {
		t.Fatalf("now_us %d, now_ms %d, TIME seconds %d: want now_ms = now_us/1000 and the same second", us, ms, sec)
	}
	if d := time.Since(time.UnixMilli(ms)); d < -time.Minute || d > time.Minute {
		t.Fatalf("now_ms is %v from this machine's clock (the same machine)", d)
	}
}

// TestScriptBatch: every call of a batch runs exactly once, by SHA or (NOSCRIPT, after
// SCRIPT FLUSH or on a fresh server) sent again in full, and each command holds its own
// reply; Exec returns the first error reply, and redis.Nil is none.
func TestScriptBatch(t *testing.T) {
	incr := redis.NewScript(`return redis.call('INCR', KEYS[1])`)
	fail := redis.NewScript(`return redis.error_reply('BOOM ' .. KEYS[1])`)
	nothing := redis.NewScript(`return false`)
	type call struct {
		s    *redis.Script
		key  string
		want string // the reply as a string, or the error's prefix after "err:"
	}
	tests := []struct {
		name    string
		flush   bool // SCRIPT FLUSH before the batch
		calls   []call
		wantErr string
	}{
		{"empty", false, nil, ""},
		{"fresh server", false, []call{{incr, "a", "1"}, {incr, "b", "1"}, {incr, "a", "2"}}, ""},
		{"cached", false, []call{{incr, "a", "3"}, {incr, "b", "2"}}, ""},
		{"after SCRIPT FLUSH", true, []call{{incr, "a", "4"}, {nothing, "x", "err:redis: nil"}, {incr, "b", "3"}}, ""},
		{"an error reply", true, []call{{incr, "a", "5"}, {fail, "k1", "err:BOOM k1"}, {fail, "k2", "err:BOOM k2"}, {incr, "a", "6"}}, "BOOM k1"},
	}
	rdb := redistest.Start(t).Client()
	ctx := testCtx(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.flush {
				if err := rdb.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			b := NewScriptBatch(rdb)
			cmds := make([]*redis.Cmd, len(tc.calls))
			for i, c := range tc.calls {
				cmds[i] = b.Add(ctx, c.s, []string{c.key})
			}
			err := b.Exec(ctx)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)) {
				t.Fatalf("Exec = %v, want %q", err, tc.wantErr)
			}
			for i, c := range tc.calls {
				got := ""
				if err := cmds[i].Err(); err != nil {
					got = "err:" + err.Error()
				} else {
					got = strconv.FormatInt(cmds[i].Val().(int64), 10)
				}
				if !strings.HasPrefix(got, c.want) {
					t.Errorf("call %d (%s): %q, want %q", i, c.key, got, c.want)
				}
			}
		})
	}
}

// TestScriptBatchCluster: a batch over keys of every master of a Redis Cluster, whose
// masters have never seen the script, runs each call once.
func TestScriptBatchCluster(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client()
	ctx := testCtx(t)
	incr := redis.NewScript(`return redis.call('INCR', KEYS[1])`)
	tags := SpreadTags("sb-", 6)
	for round := 1; round <= 2; round++ {
		b := NewScriptBatch(rdb)
		var cmds []*redis.Cmd
		for _, tag := range tags {
			cmds = append(cmds, b.Add(ctx, incr, []string{SpreadPrefix("c", tag) + "n"}))
		}
		if err := b.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, cmd := range cmds {
			if n, err := cmd.Int64(); err != nil || n != int64(round) {
				t.Fatalf("round %d, tag %s: %d %v, want %d (each script once)", round, tags[i], n, err, round)
			}
		}
	}
}

// TestTopologyKeys: the key prefixes are the ones the topologies have always used (the
// keys are a protocol between nodes and what a running crawl already holds).
func TestTopologyKeys(t *testing.T) {
	tests := []struct{ got, want string }{
		{TopologyPrefix("web", "mw"), "{spider:web}:mw:"},
		{TopologyPrefix("web", "layered"), "{spider:web}:layered:"},
		{TopologyPrefix("a.b-c", "rank"), "{spider:a.b-c}:rank:"},
		{TopologyPrefix("web", "index"), "{spider:web}:index:"},
		{SpreadPrefix("web", "rk-3-1"), "spider:web:{rk-3-1}:"},
		{SpreadPrefix("web", "web.p2p"), "spider:web:{web.p2p}:"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, n := range []int{1, 3, 12} {
		tags := SpreadTags("ix-", n)
		if len(tags) != n {
			t.Fatalf("SpreadTags(ix-, %d) has %d tags", n, len(tags))
		}
		for i, tag := range tags {
			if !strings.HasPrefix(tag, "ix-"+strconv.Itoa(i)+"-") {
				t.Errorf("SpreadTags(ix-, %d)[%d] = %q, want ix-%d-K", n, i, tag, i)
			}
		}
	}
}

// TestEvery: beats come every interval, errors go to onErr while running, and after
// stop no beat is in flight or starts (a key the caller deletes stays deleted).
func TestEvery(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := testCtx(t)
	var beats, errs atomic.Int64
	failing := atomic.Bool{}
	beat := func(ctx context.Context) error {
		if failing.Load() {
			return errors.New("beat failed")
		}
		beats.Add(1)
		return rdb.Set(ctx, "hb", "1", 0).Err()
	}
	stop := Every(ctx, 5*time.Millisecond, beat, func(error) { errs.Add(1) })
	eventually(t, 10*time.Second, "3 beats", func() bool { return beats.Load() >= 3 })
	failing.Store(true)
	eventually(t, 10*time.Second, "a failed beat reported", func() bool { return errs.Load() >= 1 })
	failing.Store(false)
	stop()
	stop() // a second stop is harmless
	rdb.Del(ctx, "hb")
	n := beats.Load()
	time.Sleep(30 * time.Millisecond)
	if beats.Load() != n {
		t.Fatalf("%d beats after stop", beats.Load()-n)
	}
	if v, err := rdb.Exists(ctx, "hb").Result(); err != nil || v != 0 {
		t.Fatalf("the heartbeat key came back after stop (%d, %v)", v, err)
	}

	// A heartbeat whose context ends stops by itself; onErr may be nil.
	cctx, cancel := context.WithCancel(ctx)
	stop = Every(cctx, time.Millisecond, func(context.Context) error { return errors.New("x") }, nil)
	cancel()
	stop()
}
