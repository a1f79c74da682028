package rstate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
)

// TestReplyReplay: a Discover or Complete script run a second time with the
// same call key (what a go-redis retry after a lost reply does) returns the
// first run's reply and changes nothing; calls that accepted nothing leave
// no reply key behind.
func TestReplyReplay(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client()
	for _, mode := range []string{SeenExact, SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			s, err := Open(ctx, c, Options{Crawl: "replay-" + mode, SeenMode: mode, ExpectedURLs: 1000})
			if err != nil {
				t.Fatal(err)
			}
			reqs := []frontier.Request{{URL: "http://a/"}, {URL: "http://b/"}}
			args := append([]any{"", mode, s.k, replyTTLArg, "0", len(reqs)}, s.appendGroups(nil, reqs)...)
			keys := s.callKeys()
			first, err := discoverScript.Run(ctx, c, keys, args...).Slice()
			if err != nil {
				t.Fatal(err)
			}
			second, err := discoverScript.Run(ctx, c, keys, args...).Slice()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(first) != fmt.Sprint(second) || fmt.Sprint(first) != "[0 1 2]" {
				t.Fatalf("replies %v then %v, want [0 1 2] twice", first, second)
			}
			if ttl := c.TTL(ctx, keys[kCall]).Val(); ttl <= 0 || ttl > ReplyTTL {
				t.Fatalf("reply key TTL %v", ttl)
			}
			if seq := c.Get(ctx, s.keys[kSeq]).Val(); seq != "2" {
				t.Fatalf("seq %s after a replayed call, want 2", seq)
			}
			// Complete with a duplicate fingerprint and a new link, twice.
			cargs := []any{"", mode, s.k, replyTTLArg, "1", "http://a/", "0", "200", "1",
				binary.BigEndian.AppendUint64(nil, 1), "http://a/", dedup.KeyOf("http://a/").AppendBinary(nil), "0", "", 1, "", "", "", "0"}
			cargs = append(cargs, s.appendGroups(nil, []frontier.Request{{URL: "http://c/"}})...)
			ckeys := s.callKeys()
			r1, err := completeScript.Run(ctx, c, ckeys, cargs...).Slice()
			if err != nil {
				t.Fatal(err)
			}
			r2, err := completeScript.Run(ctx, c, ckeys, cargs...).Slice()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(r1) != fmt.Sprint(r2) || fmt.Sprint(r1) != "[1  0  0 3]" {
				t.Fatalf("Complete replies %v then %v, want [1  0  0 3] twice", r1, r2)
			}
			if n := c.HGet(ctx, s.keys[kCounters], "200").Val(); n != "1" {
				t.Fatalf("counter %s after a replayed Complete, want 1", n)
			}
			// Nothing accepted: nothing to remember.
			nkeys := s.callKeys()
			if _, err := discoverScript.Run(ctx, c, nkeys, args...).Slice(); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, nkeys[kCall]).Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("a call that accepted nothing left a reply key (%v)", err)
			}
		})
	}
}

// fieldsScript exposes luaLib's record parser: {url, depth, ds, ss, rs, ts,
// seq, se} or nil.
var fieldsScript = redis.NewScript("#!lua\n" + luaLib + `
local f = fields(ARGV[1])
if not f then return false end
return {f.url, tostring(f.depth), f.ds, f.ss, f.rs, f.ts, f.seq, f.se}
`)

// FuzzLuaFields checks the Lua parser of pending records against
// frontier.Request.UnmarshalBinary on arbitrary bytes, on a real Redis:
// both accept the same inputs (version 1 and version 2, with Kind and
// Schedule), agree on URL, Depth and Seq, and the positions Lua reports
// hold Depth, Seq, Redirects and the Topic length; a record with another
// Seq spliced in at Lua's Seq positions (what the take-due script writes)
// decodes as the same request with that Seq.
func FuzzLuaFields(f *testing.F) {
	for _, r := range []frontier.Request{
		{},
		{URL: "http://a/", Key: "a:80", Depth: 3, Priority: -1, Seq: 1 << 40, Attempt: 2, Redirects: 1, Topic: "t"},
		{URL: string(make([]byte, 200)), Depth: -1 << 40, Seq: 1<<64 - 1, Topic: "é"},
		// Version 2: a Kind, a revisit Schedule, both.
		{URL: "http://a/sitemap.xml", Key: "a:80", Kind: frontier.KindSitemap},
		{URL: "http://a/", Key: "a:80", Seq: 7, Schedule: "\x01\x03sched"},
		{URL: "http://a/s.xml", Kind: frontier.KindSitemap, Topic: "t", Schedule: string(make([]byte, 300))},
	} {
		b, _ := r.MarshalBinary()
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(b, 0))
	}
	f.Add([]byte{})
	f.Add([]byte{2, 0})
	// Version 2 as UnmarshalBinary refuses it: no Kind and no Schedule, an
	// unknown Kind, a Schedule longer than the record.
	for _, tail := range [][]byte{{0, 0}, {2, 0}, {1, 5, 'a'}, {0}} {
		v1, _ := frontier.Request{URL: "http://a/"}.MarshalBinary()
		f.Add(append(append([]byte{2}, v1[1:]...), tail...))
	}
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	srv := redistest.Start(f)
	c := srv.Client()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		var r frontier.Request
		goErr := r.UnmarshalBinary(data)
		v, err := fieldsScript.Run(ctx, c, nil, data).Slice()
		if errors.Is(err, redis.Nil) {
			if goErr == nil {
				t.Fatalf("Lua rejects %x, Go decodes %+v", data, r)
			}
			return
		}
		if err != nil {
			t.Fatalf("script error on %x: %v", data, err)
		}
		if goErr != nil {
			t.Fatalf("Lua accepts %x (%v), Go says %v", data, v, goErr)
		}
		if v[0].(string) != r.URL {
			t.Fatalf("Lua URL %q, Go %q", v[0], r.URL)
		}
		if r.Depth > -1e14 && r.Depth < 1e14 && v[1].(string) != strconv.Itoa(r.Depth) {
			t.Fatalf("Lua depth %s, Go %d", v[1], r.Depth)
		}
		at := func(i int) []byte { return data[v[i].(int64)-1:] }
		if d, _ := binary.Varint(at(2)); d != int64(r.Depth) {
			t.Fatalf("Depth at ds: %d, want %d", d, r.Depth)
		}
		if s, _ := binary.Uvarint(at(3)); s != r.Seq {
			t.Fatalf("Seq at ss: %d, want %d", s, r.Seq)
		}
		if x, _ := binary.Varint(at(4)); x != int64(r.Redirects) {
			t.Fatalf("Redirects at rs: %d, want %d", x, r.Redirects)
		}
		if n, _ := binary.Uvarint(at(5)); n != uint64(len(r.Topic)) {
			t.Fatalf("Topic length at ts: %d, want %d", n, len(r.Topic))
		}
		if r.Seq < 1<<53 && v[6].(int64) != int64(r.Seq) {
			t.Fatalf("Lua Seq %d, Go %d", v[6], r.Seq)
		}
		// The take-due script's rewrite: the record with another Seq at
		// ss..se decodes as the same request with that Seq.
		if r.Seq < 1<<53 {
			re := append(append(append([]byte{}, data[:v[3].(int64)-1]...), binary.AppendUvarint(nil, 42)...), data[v[7].(int64)-1:]...)
			var r2 frontier.Request
			want := r
			want.Seq = 42
			if err := r2.UnmarshalBinary(re); err != nil || r2 != want {
				t.Fatalf("record with Seq 42 spliced at ss..se: %+v, %v; want %+v", r2, err, want)
			}
		}
	})
}
