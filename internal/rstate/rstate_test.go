package rstate_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/cluster/slots"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/state/statetest"
)

var ctx = context.Background()

func open(t testing.TB, c redis.UniversalClient, opt rstate.Options) *rstate.Store {
	t.Helper()
	if opt.ExpectedURLs == 0 {
		opt.ExpectedURLs = 100_000
	}
	s, err := rstate.Open(ctx, c, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// dump returns every key under prefix with a DUMP of its value, to check
// that a failed write changed nothing.
func dump(t *testing.T, c redis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	keys, err := c.Keys(ctx, prefix+"*").Result()
	must(t, err)
	out := map[string]string{}
	for _, k := range keys {
		v, err := c.Dump(ctx, k).Result()
		must(t, err)
		out[k] = v
	}
	return out
}

func equalDumps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestFence: with the lease held, writes go through; once another node owns
// the bucket, every write fails with ErrFenced and changes nothing.
func TestFence(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	owner := "spider:fc:{" + rstate.BucketName(7) + "}:owner"
	must(t, c.Set(ctx, owner, "node1:tok1", 0).Err())
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			must(t, c.Set(ctx, owner, "node1:tok1", 0).Err())
			opt := rstate.Options{Crawl: "fc-" + mode, Bucket: rstate.BucketName(7), SeenMode: mode,
				Fence: &rstate.Fence{Key: owner, Value: "node1:tok1"}}
			s := open(t, c, opt)
			acc, err := s.Discover(ctx, statetest.Reqs("http://a/", "http://b/"))
			if err != nil || len(acc) != 2 {
				t.Fatalf("Discover under the lease = %v, %v", acc, err)
			}
			must(t, c.Set(ctx, owner, "node2:tok9", 0).Err())
			before := dump(t, c, s.Prefix())
			u := acc[1]
			u.Attempt = 4
			writes := []struct {
				name string
				do   func() error
			}{
				{"Discover", func() error { _, err := s.Discover(ctx, statetest.Reqs("http://c/")); return err }},
				{"Complete", func() error {
					_, err := s.Complete(ctx, acc[0], crawlstate.Outcome{Class: "200", Fingerprint: 9}, statetest.Reqs("http://d/"))
					return err
				}},
				{"UpdatePending", func() error { return s.UpdatePending(ctx, u) }},
			}
			for _, w := range writes {
				err := w.do()
				if !errors.Is(err, rstate.ErrFenced) {
					t.Fatalf("%s with a lost lease = %v, want ErrFenced", w.name, err)
				}
				if !strings.Contains(err.Error(), `owned by node2:tok9, not "node1:tok1"`) {
					t.Errorf("%s error %q does not name both owners", w.name, err)
				}
			}
			if after := dump(t, c, s.Prefix()); !equalDumps(before, after) {
				t.Fatal("a fenced write changed the bucket's keys")
			}
			// Reads still work; a new Open with the stale value is refused.
			if got := statetest.LoadAll(t, s); len(got) != 2 {
				t.Fatalf("LoadPending with a lost lease = %d", len(got))
			}
			if _, err := rstate.Open(ctx, c, opt); !errors.Is(err, rstate.ErrFenced) {
				t.Fatalf("Open with a lost lease = %v, want ErrFenced", err)
			}
			must(t, c.Del(ctx, owner).Err())
			if _, err := s.Discover(ctx, statetest.Reqs("http://c/")); !errors.Is(err, rstate.ErrFenced) || !strings.Contains(err.Error(), "owned by nobody") {
				t.Fatalf("Discover with no lease = %v, want ErrFenced naming nobody", err)
			}
			// The lease back: writes go through again.
			must(t, c.Set(ctx, owner, "node1:tok1", 0).Err())
			if res, err := s.Complete(ctx, acc[0], crawlstate.Outcome{Class: "200"}, statetest.Reqs("http://c/")); err != nil || len(res.New) != 1 {
				t.Fatalf("Complete with the lease back = %+v, %v", res, err)
			}
		})
	}
	// The fence key must share the bucket's slot.
	_, err := rstate.Open(ctx, c, rstate.Options{Crawl: "fc", Bucket: "b1", Fence: &rstate.Fence{Key: "spider:fc:{b2}:owner", Value: "x"}})
	if err == nil || !strings.Contains(err.Error(), "not in the bucket's hash slot") {
		t.Fatalf("Open with a fence key in another slot = %v", err)
	}
}

// TestRedisRestart: a crawl survives a Redis crash (kill -9 with the AOF at
// appendfsync always) and a clean restart (appendfsync everysec): everything
// acknowledged before is there after, and the same Store goes on working.
func TestRedisRestart(t *testing.T) {
	tests := []struct {
		name  string
		opt   redistest.Option
		crash bool
	}{
		{"kill -9, appendfsync always", redistest.AppendOnly(), true},
		{"shutdown, appendfsync everysec", redistest.AppendOnlyEverySec(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t, tt.opt)
			c := srv.Client()
			stores := map[string]*rstate.Store{}
			for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
				s := open(t, c, rstate.Options{Crawl: "rs-" + mode, Bucket: "b3", SeenMode: mode})
				stores[mode] = s
				var urls []string
				for i := 0; i < 500; i++ {
					urls = append(urls, fmt.Sprintf("http://r/%d", i))
				}
				acc, err := s.Discover(ctx, statetest.Reqs(urls...))
				must(t, err)
				for i, r := range acc[:200] {
					// Every completed URL scheduled, the first 50 due.
					o := crawlstate.Outcome{Class: "200", Stored: true, Schedule: "s"}
					if i < 50 {
						o.Due = time.UnixMilli(int64(1000 + i))
					}
					if _, err := s.Complete(ctx, r, o, statetest.Reqs(r.URL+"/x")); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.crash {
				srv.Kill()
			} else {
				srv.Stop()
			}
			_, err := stores[rstate.SeenExact].Discover(ctx, statetest.Reqs("http://down/"))
			if want := "cannot reach Redis at " + srv.Addr() + ": is redis-server running?"; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Discover with Redis down = %v, want it to say %q", err, want)
			}
			srv.Restart()
			for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
				// A Store opened again sees everything; the old Store goes on
				// through the same client (its scripts are sent again after
				// NOSCRIPT).
				reopened := open(t, c, rstate.Options{Crawl: "rs-" + mode, Bucket: "b3", SeenMode: mode})
				if st, err := reopened.Stats(ctx); err != nil || st.Pending != 500 || st.Seen != 700 {
					t.Fatalf("%s reopened after restart: %+v, %v", mode, st, err)
				}
				s := stores[mode]
				st, err := s.Stats(ctx)
				must(t, err)
				if st.Pending != 500 || st.Seen != 700 || st.PagesStored != 200 {
					t.Fatalf("%s after restart: %+v, want pending 500 seen 700 pages 200", mode, st)
				}
				got := statetest.LoadAll(t, s)
				if len(got) != 500 || got[0].URL != "http://r/200" {
					t.Fatalf("%s after restart: %d pending starting at %v", mode, len(got), got[0])
				}
				again, err := s.Discover(ctx, statetest.Reqs("http://r/0", "http://r/499/x", "http://r/0/x", "http://r/new"))
				if err != nil || !slices.Equal(statetest.URLs(again), []string{"http://r/499/x", "http://r/new"}) {
					t.Fatalf("%s after restart accepted %v, %v", mode, statetest.URLs(again), err)
				}
				if c, err := s.Counters(ctx); err != nil || c["200"] != 200 {
					t.Fatalf("%s counters after restart %v, %v", mode, c, err)
				}
				if r, d, err := s.Scheduled(ctx); err != nil || r != 200 || d != 50 {
					t.Fatalf("%s schedule after restart: %d records, %d due, %v; want 200, 50", mode, r, d, err)
				}
				due, err := s.TakeDue(ctx, time.UnixMilli(1009), 100)
				if err != nil || len(due) != 10 || due[0].URL != "http://r/0" || due[9].URL != "http://r/9" || due[0].Schedule != "s" {
					t.Fatalf("%s TakeDue after restart: %v, %v; want r/0 to r/9", mode, statetest.URLs(due), err)
				}
			}
		})
	}
}

// TestIsolation: two crawls and two buckets of one crawl on one Redis do
// not see each other's URLs, pending sets or counters.
func TestIsolation(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	stores := []*rstate.Store{
		open(t, c, rstate.Options{Crawl: "one", Bucket: "b0"}),
		open(t, c, rstate.Options{Crawl: "one", Bucket: "b1"}),
		open(t, c, rstate.Options{Crawl: "two", Bucket: "b0", SeenMode: rstate.SeenBloom}),
	}
	urls := statetest.Reqs("http://a/", "http://b/", "http://c/")
	for i, s := range stores {
		got, err := s.Discover(ctx, urls)
		if err != nil || len(got) != 3 || got[0].Seq != 1 {
			t.Fatalf("store %d: Discover = %v, %v; want all three from Seq 1", i, got, err)
		}
		for j := 0; j <= i; j++ {
			if _, err := s.Complete(ctx, got[j], crawlstate.Outcome{Class: fmt.Sprint("c", i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, s := range stores {
		if p := statetest.LoadAll(t, s); len(p) != 2-i {
			t.Errorf("store %d: %d pending, want %d", i, len(p), 2-i)
		}
		c, err := s.Counters(ctx)
		must(t, err)
		if len(c) != 1 || c[fmt.Sprint("c", i)] != int64(i+1) {
			t.Errorf("store %d: counters %v", i, c)
		}
	}
	// A bucket keeps its seen mode.
	if _, err := rstate.Open(ctx, c, rstate.Options{Crawl: "two", Bucket: "b0", SeenMode: rstate.SeenExact}); err == nil ||
		!strings.Contains(err.Error(), `created in "bloom" seen mode`) {
		t.Fatalf("reopening a bloom bucket in exact mode = %v", err)
	}
}

// TestTwoNodesExactlyOnce: two Stores on one bucket, each with its own
// client (two nodes), discover the same URLs at once; each URL is accepted
// once in all.
func TestTwoNodesExactlyOnce(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			nodes := []*rstate.Store{
				open(t, srv.Client(), rstate.Options{Crawl: "two-" + mode, SeenMode: mode}),
				open(t, srv.Client(), rstate.Options{Crawl: "two-" + mode, SeenMode: mode}),
			}
			const n = 2000
			var mu sync.Mutex
			won := map[string]int{}
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := nodes[w%2]
					for i := 0; i < n; i += 20 {
						var batch []string
						for j := i; j < i+20; j++ {
							batch = append(batch, fmt.Sprintf("http://t/%d", (j*7+w*131)%n))
						}
						got, err := s.Discover(ctx, statetest.Reqs(batch...))
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for _, g := range got {
							won[g.URL]++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(won) != n {
				t.Fatalf("%d URLs accepted, want %d", len(won), n)
			}
			for u, c := range won {
				if c != 1 {
					t.Fatalf("%s accepted %d times", u, c)
				}
			}
		})
	}
}

// TestClusterKeySlots: on a real Redis Cluster every key a Store writes is
// in one slot (CLUSTER KEYSLOT), the slot slots.KeySlot computes; and the
// contract holds on the cluster with buckets spread over its masters.
func TestClusterKeySlots(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := cl.Client()
	for i, key := range []string{"", "a", "spider:x:{b1}:seen", "{}x", "x{}{y}", "{user1000}.following", "foo{bar}{zap}", "日本"} {
		want, err := c.ClusterKeySlot(ctx, key).Result()
		must(t, err)
		if got := slots.KeySlot(key); int64(got) != want {
			t.Errorf("KeySlot(%q) = %d, CLUSTER KEYSLOT says %d (case %d)", key, got, want, i)
		}
	}
	owner := "spider:ks:{b5}:owner"
	must(t, c.Set(ctx, owner, "n:1", 0).Err())
	var stores []*rstate.Store
	for b, mode := range []string{rstate.SeenExact, rstate.SeenBloom, rstate.SeenExact, rstate.SeenBloom} {
		opt := rstate.Options{Crawl: "ks", Bucket: rstate.BucketName(b + 4), SeenMode: mode}
		if b == 1 {
			opt.Fence = &rstate.Fence{Key: owner, Value: "n:1"}
		}
		s := open(t, c, opt)
		stores = append(stores, s)
		acc, err := s.Discover(ctx, statetest.Reqs("http://k/1", "http://k/2"))
		must(t, err)
		// A revisit record, a due entry and a failed mark: their keys too.
		o := crawlstate.Outcome{Class: "200", Fingerprint: 5, Stored: true, Schedule: "s", Due: time.Unix(100, 0), Failed: true}
		if _, err := s.Complete(ctx, acc[0], o, statetest.Reqs("http://k/3")); err != nil {
			t.Fatal(err)
		}
		u := acc[1]
		u.Attempt = 1
		must(t, s.UpdatePending(ctx, u))
	}
	// Every key written under the crawl's prefix belongs to a Store and
	// lies in that Store's slot.
	var written []string
	var mu sync.Mutex
	must(t, c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "spider:ks:*").Result()
		mu.Lock()
		written = append(written, keys...)
		mu.Unlock()
		return err
	}))
	if len(written) < 4*5 {
		t.Fatalf("only %d keys written: %v", len(written), written)
	}
	masters := map[string]bool{}
	for _, key := range written {
		if key == owner {
			continue
		}
		var s *rstate.Store
		for _, x := range stores {
			if strings.HasPrefix(key, x.Prefix()) {
				s = x
			}
		}
		if s == nil || !(slices.Contains(s.Keys(), key) || strings.HasPrefix(key, s.Prefix()+"call:")) {
			t.Errorf("key %q is not one of a Store's keys", key)
			continue
		}
		slot, err := c.ClusterKeySlot(ctx, key).Result()
		must(t, err)
		if want := slots.KeySlot(s.Prefix()); slot != int64(want) {
			t.Errorf("key %q in slot %d, its Store's slot is %d", key, slot, want)
		}
		masters[fmt.Sprint(slot*3/slots.Slots)] = true
	}
	for _, s := range stores {
		for _, key := range s.Keys() {
			if slot, _ := c.ClusterKeySlot(ctx, key).Result(); slot != int64(slots.KeySlot(s.Prefix())) {
				t.Errorf("declared key %q in slot %d", key, slot)
			}
		}
	}
	t.Logf("keys spread over %d of 3 masters", len(masters))

	t.Run("contract", func(t *testing.T) {
		statetest.Run(t, func(t *testing.T, name string, opt state.Options) statetest.Backend {
			s, err := rstate.Open(ctx, c, rstate.Options{
				Crawl: name, Bucket: rstate.BucketName(int(crc32.ChecksumIEEE([]byte(name)) % 4096)),
				SeenMode: opt.SeenMode, ExpectedURLs: opt.ExpectedURLs, FPRate: opt.FPRate,
				Relink: opt.Relink, MaxDepth: opt.MaxDepth,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return backend{s}
		})
	})
}

func TestOpenErrors(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	tests := []struct {
		name string
		opt  rstate.Options
		want string
	}{
		{"no crawl name", rstate.Options{}, "crawl name"},
		{"hash tag in the crawl name", rstate.Options{Crawl: "a{b}"}, "may hold only"},
		{"colon in the crawl name", rstate.Options{Crawl: "a:b"}, "may hold only"},
		{"bad bucket", rstate.Options{Crawl: "a", Bucket: "b}"}, "bucket"},
		{"long crawl name", rstate.Options{Crawl: strings.Repeat("x", 65)}, "1 to 64 bytes"},
		{"bad mode", rstate.Options{Crawl: "a", SeenMode: "fuzzy"}, "SeenMode"},
		{"bad rate", rstate.Options{Crawl: "a", FPRate: 1.5}, "FPRate"},
		{"filter too large", rstate.Options{Crawl: "a", SeenMode: rstate.SeenBloom, ExpectedURLs: 1 << 40}, "at most 2^32"},
		{"fence without value", rstate.Options{Crawl: "a", Fence: &rstate.Fence{Key: "spider:a:{b0}:owner"}}, "Key and a Value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := rstate.Open(ctx, c, tt.opt)
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open accepted %+v", tt.opt)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		addr := l.Addr().String()
		must(t, l.Close())
		down := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
		defer down.Close()
		_, err = rstate.Open(ctx, down, rstate.Options{Crawl: "a"})
		want := "cannot reach Redis at " + addr + ": is redis-server running? (spider crawl --redis URL)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open on a closed port = %v, want it to say %q", err, want)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s := open(t, c, rstate.Options{Crawl: "closed"})
		must(t, s.Close())
		if _, err := s.Discover(ctx, statetest.Reqs("http://a/")); !errors.Is(err, rstate.ErrClosed) {
			t.Fatalf("Discover after Close = %v, want ErrClosed", err)
		}
	})
}

// TestBloomShapeIsKept: a bloom bucket reopened with other sizing options
// keeps the filter it was created with, so no URL is forgotten.
func TestBloomShapeIsKept(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	s := open(t, c, rstate.Options{Crawl: "shape", SeenMode: rstate.SeenBloom, ExpectedURLs: 5000, FPRate: 1e-4})
	var urls []string
	for i := 0; i < 1000; i++ {
		urls = append(urls, fmt.Sprintf("http://s/%d", i))
	}
	_, err := s.Discover(ctx, statetest.Reqs(urls...))
	must(t, err)
	st1, err := s.Stats(ctx)
	must(t, err)
	s2 := open(t, c, rstate.Options{Crawl: "shape", SeenMode: rstate.SeenBloom, ExpectedURLs: 10_000_000, FPRate: 1e-9})
	st2, err := s2.Stats(ctx)
	must(t, err)
	if st1.BloomBits != st2.BloomBits || st1.BloomK != st2.BloomK || st2.Seen != 1000 {
		t.Fatalf("shape changed on reopen: %+v then %+v", st1, st2)
	}
	if got, err := s2.Discover(ctx, statetest.Reqs(urls...)); err != nil || len(got) != 0 {
		t.Fatalf("reopened filter accepted %d known URLs (%v)", len(got), err)
	}
	n, err := c.StrLen(ctx, s.Prefix()+"bloom").Result()
	must(t, err)
	if uint64(n)*8 != st1.BloomBits {
		t.Fatalf("filter string is %d bytes, want exactly its %d bits", n, st1.BloomBits)
	}
}

// TestStoredRecords: the pending records the scripts build (Seq spliced in,
// depth lowered) are byte for byte what frontier.Request.MarshalBinary
// gives, for field values of every varint size.
func TestStoredRecords(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	long := "http://l/" + strings.Repeat("x", 300)
	reqs := []frontier.Request{
		{URL: "http://a/"},
		{URL: long, Key: strings.Repeat("k", 200), Depth: 200, Priority: -70, Attempt: 1 << 20, Redirects: 3, Topic: "t"},
		{URL: "http://b/", Key: "b:80", Depth: -1, Priority: 1 << 40, Attempt: -5, Redirects: 1 << 30, Topic: strings.Repeat("é", 100)},
	}
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		s := open(t, c, rstate.Options{Crawl: "rec-" + mode, SeenMode: mode})
		must(t, c.Set(ctx, s.Prefix()+"seq", 1<<35, 0).Err()) // multi-byte Seqs
		acc, err := s.Discover(ctx, reqs)
		must(t, err)
		check := func(r frontier.Request) {
			t.Helper()
			raw, err := c.HGet(ctx, s.Prefix()+"pending", fmt.Sprint(r.Seq)).Bytes()
			must(t, err)
			want, _ := r.MarshalBinary()
			if string(raw) != string(want) {
				t.Fatalf("%s: pending record %x, want %x", mode, raw, want)
			}
		}
		for i, r := range acc {
			want := reqs[i]
			want.Seq = 1<<35 + uint64(i) + 1
			if r != want {
				t.Fatalf("%s: accepted %+v, want %+v", mode, r, want)
			}
			check(r)
		}
		low, err := s.Discover(ctx, []frontier.Request{{URL: long, Key: "z", Depth: 2, Priority: 1 << 50, Redirects: 300, Attempt: 9, Topic: "u"}})
		want := acc[1]
		want.Depth, want.Priority, want.Redirects = 2, 1<<50, 300
		if err != nil || len(low) != 1 || low[0] != want {
			t.Fatalf("%s: lowered %+v, %v; want %+v", mode, low, err, want)
		}
		check(low[0])
	}
}

// syncBuffer is a concurrency-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDamagedRecord: a pending record that cannot be decoded is reported
// by every reader and by Complete (which then writes nothing), and is
// skipped, with a warning, by a depth-lowering Discover.
func TestDamagedRecord(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	var logs syncBuffer
	s := open(t, c, rstate.Options{Crawl: "dmg", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	acc, err := s.Discover(ctx, []frontier.Request{{URL: "http://a/", Depth: 3}})
	must(t, err)
	must(t, c.HSet(ctx, s.Prefix()+"pending", fmt.Sprint(acc[0].Seq), "\x01\x7fgarbage").Err())
	if _, err := s.Current(ctx, acc[0]); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Current = %v, want a damaged-record error", err)
	}
	if err := s.LoadPending(ctx, func(frontier.Request) error { return nil }); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("LoadPending = %v, want a damaged-record error", err)
	}
	if _, err := s.Complete(ctx, acc[0], crawlstate.Outcome{Class: "200"}, statetest.Reqs("http://b/")); err == nil || !strings.Contains(err.Error(), "DAMAGED") {
		t.Errorf("Complete = %v, want a damaged-record error", err)
	}
	if n, _ := c.Exists(ctx, s.Prefix()+"counters").Result(); n != 0 {
		t.Error("a failed Complete counted its outcome")
	}
	got, err := s.Discover(ctx, []frontier.Request{{URL: "http://a/", Depth: 1}})
	if err != nil || len(got) != 0 {
		t.Fatalf("lowering a damaged record = %v, %v; want nothing", got, err)
	}
	if !strings.Contains(logs.String(), "cannot be decoded were not lowered") {
		t.Errorf("no warning logged: %s", logs.String())
	}
}
