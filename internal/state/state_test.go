package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
)

var ctx = context.Background()

func openTest(t testing.TB, dir string, opt Options) *Store {
	t.Helper()
	if opt.ExpectedURLs == 0 {
		opt.ExpectedURLs = 100_000
	}
	if opt.BatchDelay == 0 {
		opt.BatchDelay = 200 * time.Microsecond
	}
	s, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func reqs(urls ...string) []frontier.Request {
	out := make([]frontier.Request, len(urls))
	for i, u := range urls {
		out[i] = frontier.Request{URL: u, Key: "k:80", Depth: 1}
	}
	return out
}

func urlsOf(rs []frontier.Request) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.URL
	}
	return out
}

func TestDiscover(t *testing.T) {
	for _, mode := range []string{SeenExact, SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			s := openTest(t, t.TempDir(), Options{SeenMode: mode})
			tests := []struct {
				in   []string
				want []string
			}{
				{[]string{"a", "b", "c"}, []string{"a", "b", "c"}},
				{[]string{"b", "d"}, []string{"d"}},
				{[]string{"e", "e", "f", "e"}, []string{"e", "f"}},
				{[]string{"a", "b", "c", "d", "e", "f"}, nil},
				{nil, nil},
			}
			var lastSeq uint64
			for i, tt := range tests {
				got, err := s.Discover(ctx, reqs(tt.in...))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(urlsOf(got), tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
					t.Fatalf("call %d: accepted %v, want %v", i, urlsOf(got), tt.want)
				}
				for _, r := range got {
					if r.Seq <= lastSeq {
						t.Fatalf("Seq %d not increasing after %d", r.Seq, lastSeq)
					}
					lastSeq = r.Seq
					if r.Key != "k:80" || r.Depth != 1 {
						t.Fatalf("request fields lost: %+v", r)
					}
				}
			}
			if s.SeenCount() != 6 || s.PendingCount() != 6 {
				t.Fatalf("seen %d pending %d, want 6 and 6", s.SeenCount(), s.PendingCount())
			}
		})
	}
	s := openTest(t, t.TempDir(), Options{})
	if _, err := s.Discover(ctx, []frontier.Request{{URL: ""}}); err == nil {
		t.Fatal("Discover accepted an empty URL")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Discover(cctx, reqs("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Discover with a cancelled context = %v", err)
	}
}

// TestDiscoverConcurrentExactlyOnce: 8 workers discover overlapping URL sets
// at once (grouped into shared transactions); every URL is accepted by
// exactly one of them.
func TestDiscoverConcurrentExactlyOnce(t *testing.T) {
	for _, mode := range []string{SeenExact, SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			s := openTest(t, t.TempDir(), Options{SeenMode: mode})
			const n, workers = 300, 8
			var mu sync.Mutex
			won := map[string]int{}
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 1))
					perm := r.Perm(n)
					for i := 0; i < n; i += 10 {
						var batch []string
						for _, j := range perm[i : i+10] {
							batch = append(batch, fmt.Sprintf("http://x/%d", j))
						}
						got, err := s.Discover(ctx, reqs(batch...))
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
			if s.SeenCount() != n || s.PendingCount() != n {
				t.Fatalf("counts seen=%d pending=%d, want %d", s.SeenCount(), s.PendingCount(), n)
			}
		})
	}
}

// TestSeenModes: with a tiny, overfull filter, bloom mode drops new URLs on
// false positives while exact mode confirms on disk and accepts all.
func TestSeenModes(t *testing.T) {
	tests := []struct {
		mode     string
		wantLoss bool
	}{
		{SeenExact, false},
		{SeenBloom, true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			s := openTest(t, t.TempDir(), Options{SeenMode: tt.mode, ExpectedURLs: 10, FPRate: 0.3})
			var in []string
			for i := 0; i < 2000; i++ {
				in = append(in, fmt.Sprintf("http://y/%d", i))
			}
			got, err := s.Discover(ctx, reqs(in...))
			if err != nil {
				t.Fatal(err)
			}
			if lost := len(in) - len(got); (lost > 0) != tt.wantLoss {
				t.Fatalf("%d of %d new URLs taken as seen", lost, len(in))
			}
		})
	}
}

func TestCompleteCountersAndIdempotence(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	acc, err := s.Discover(ctx, reqs("http://a/", "http://b/"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Complete(ctx, acc[0], Outcome{Class: "200", Stored: true}, reqs("http://c/", "http://b/", "http://c/"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(urlsOf(res.New), []string{"http://c/"}) {
		t.Fatalf("new %v, want [http://c/]", urlsOf(res.New))
	}
	again, err := s.Complete(ctx, acc[0], Outcome{Class: "200", Stored: true}, reqs("http://d/"))
	if err != nil {
		t.Fatal(err)
	}
	if len(again.New) != 0 {
		t.Fatalf("second Complete accepted %v; it must be a no-op", urlsOf(again.New))
	}
	if _, err := s.Complete(ctx, acc[1], Outcome{Class: "404"}, nil); err != nil {
		t.Fatal(err)
	}
	c, err := s.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c["200"] != 1 || c["404"] != 1 || len(c) != 2 {
		t.Fatalf("counters %v, want 200:1 404:1", c)
	}
	if s.PendingCount() != 1 || s.SeenCount() != 3 || s.PagesStored() != 1 {
		t.Fatalf("pending %d seen %d pages %d, want 1 3 1", s.PendingCount(), s.SeenCount(), s.PagesStored())
	}
	if _, err := s.Complete(ctx, acc[1], Outcome{}, nil); err == nil {
		t.Fatal("Complete accepted an empty class")
	}
	if _, err := s.Complete(ctx, frontier.Request{URL: "http://other/", Seq: res.New[0].Seq}, Outcome{Class: "200"}, nil); err == nil {
		t.Fatal("Complete accepted a Seq that belongs to another URL")
	}
}

func TestCompleteDuplicateContent(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	acc, _ := s.Discover(ctx, reqs("http://a/", "http://b/", "http://c/"))
	tests := []struct {
		r    frontier.Request
		o    Outcome
		want string
	}{
		{acc[0], Outcome{Class: "200", Fingerprint: 77}, ""},
		{acc[1], Outcome{Class: "200", Fingerprint: 77}, "http://a/"},
		{acc[2], Outcome{Class: "200", Fingerprint: 0}, ""},
	}
	for _, tt := range tests {
		res, err := s.Complete(ctx, tt.r, tt.o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.DuplicateOf != tt.want {
			t.Errorf("%s: DuplicateOf %q, want %q", tt.r.URL, res.DuplicateOf, tt.want)
		}
	}
}

func TestUpdatePendingSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	acc, _ := s.Discover(ctx, reqs("http://a/"))
	r := acc[0]
	r.Attempt = 3
	if err := s.UpdatePending(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdatePending(ctx, frontier.Request{URL: "http://zz/", Seq: 999}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("UpdatePending of an unknown seq = %v, want ErrNotPending", err)
	}
	if err := s.UpdatePending(ctx, frontier.Request{URL: "http://zz/", Seq: r.Seq}); err == nil {
		t.Fatal("UpdatePending accepted a mismatched URL")
	}
	must(t, s.Close())
	s = openTest(t, dir, Options{})
	var got []frontier.Request
	must(t, s.LoadPending(ctx, func(r frontier.Request) error { got = append(got, r); return nil }))
	if len(got) != 1 || got[0].Attempt != 3 {
		t.Fatalf("after restart %+v, want Attempt 3", got)
	}
}

func TestResume(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	var all []string
	for i := 0; i < 10_000; i++ {
		all = append(all, fmt.Sprintf("http://r/%05d", i))
	}
	acc, err := s.Discover(ctx, reqs(all...))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 4000; i += 8 {
				if _, err := s.Complete(ctx, acc[i], Outcome{Class: "200"}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	created := s.Created()
	must(t, s.SetMeta(ctx, []byte("config"), []byte("fp-123")))
	must(t, s.Close())

	s = openTest(t, dir, Options{})
	if s.PendingCount() != 6000 || s.SeenCount() != 10_000 {
		t.Fatalf("after reopen pending %d seen %d", s.PendingCount(), s.SeenCount())
	}
	if !s.Created().Equal(created) {
		t.Fatal("creation time changed on reopen")
	}
	var got []frontier.Request
	must(t, s.LoadPending(ctx, func(r frontier.Request) error { got = append(got, r); return nil }))
	if len(got) != 6000 {
		t.Fatalf("LoadPending gave %d, want 6000", len(got))
	}
	for i, r := range got {
		if r.URL != all[4000+i] || r.Seq != acc[4000+i].Seq {
			t.Fatalf("LoadPending item %d is %s seq %d, want %s seq %d (Seq order)", i, r.URL, r.Seq, all[4000+i], acc[4000+i].Seq)
		}
	}
	// The rebuilt Bloom filter and the seen bucket still know every URL.
	again, err := s.Discover(ctx, reqs(all[:50]...))
	if err != nil || len(again) != 0 {
		t.Fatalf("rediscovering known URLs accepted %d (%v)", len(again), err)
	}
	v, err := s.Meta(ctx, []byte("config"))
	if err != nil || string(v) != "fp-123" {
		t.Fatalf("Meta = %q, %v", v, err)
	}
	stop := errors.New("stop")
	n := 0
	err = s.LoadPending(ctx, func(frontier.Request) error {
		n++
		if n == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 10 {
		t.Fatalf("LoadPending did not stop at the callback error: %v after %d", err, n)
	}
}

func TestMeta(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{})
	if v, err := s.Meta(ctx, []byte("missing")); err != nil || v != nil {
		t.Fatalf("Meta(missing) = %q, %v", v, err)
	}
	for _, k := range []string{"", "_seen", "_x"} {
		if err := s.SetMeta(ctx, []byte(k), []byte("v")); err == nil {
			t.Errorf("SetMeta(%q) accepted a reserved key", k)
		}
		if _, err := s.Meta(ctx, []byte(k)); err == nil {
			t.Errorf("Meta(%q) accepted a reserved key", k)
		}
	}
	must(t, s.SetMeta(ctx, []byte("empty"), nil))
	if v, err := s.Meta(ctx, []byte("empty")); err != nil || v == nil || len(v) != 0 {
		t.Fatalf("Meta(empty) = %q, %v; want an empty non-nil value", v, err)
	}
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Options{})
	start := time.Now()
	_, err := Open(dir, Options{ExpectedURLs: 1000})
	if err == nil {
		t.Fatal("second Open of a locked directory succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("error %v does not wrap ErrLocked", err)
	}
	want := fmt.Sprintf("data directory is in use by another spider process (pid %d)", os.Getpid())
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Open took %v to fail", d)
	}
	must(t, s.Close())
	if _, err := os.Stat(filepath.Join(dir, PIDFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("pid file left after Close")
	}
	s2 := openTest(t, dir, Options{})
	must(t, s2.Sync())
}

func TestOpenOptionsValidation(t *testing.T) {
	for _, opt := range []Options{{SeenMode: "fuzzy"}, {FPRate: 2}, {FPRate: -1}} {
		if s, err := Open(t.TempDir(), opt); err == nil {
			_ = s.Close()
			t.Errorf("Open accepted %+v", opt)
		}
	}
	bad := filepath.Join(t.TempDir(), "d")
	must(t, os.MkdirAll(bad, 0o755))
	must(t, os.WriteFile(filepath.Join(bad, DBFile), []byte("this is not a bbolt file, it is just text"), 0o600))
	if s, err := Open(bad, Options{}); err == nil {
		_ = s.Close()
		t.Error("Open accepted a damaged database file")
	}
}

func TestBackgroundSync(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{SyncInterval: 5 * time.Millisecond})
	if _, err := s.Discover(ctx, reqs("http://a/")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	must(t, s.Close())
	must(t, s.Close()) // idempotent
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// logBuffer is a concurrency-safe log sink for checking what Open reports.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestBloomSnapshot(t *testing.T) {
	open := func(t *testing.T, dir string, opt Options) (*Store, *logBuffer) {
		t.Helper()
		var logs logBuffer
		opt.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		return openTest(t, dir, opt), &logs
	}
	tests := []struct {
		name     string
		tamper   func(t *testing.T, dir string) // between Close and the second Open
		opt      Options
		wantFrom string
	}{
		{"clean stop", func(*testing.T, string) {}, Options{}, "bloom_from=snapshot"},
		{"damaged", func(t *testing.T, dir string) {
			p := filepath.Join(dir, SnapshotFile)
			b, err := os.ReadFile(p)
			must(t, err)
			b[len(b)/2] ^= 0xff
			must(t, os.WriteFile(p, b, 0o600))
		}, Options{}, `bloom_from="seen bucket"`},
		{"stale after more commits", func(t *testing.T, dir string) {
			// Keep the snapshot, then change the database behind it.
			p := filepath.Join(dir, SnapshotFile)
			old, err := os.ReadFile(p)
			must(t, err)
			s, _ := open(t, dir, Options{})
			if got, err := s.Discover(ctx, reqs("http://late/")); err != nil || len(got) != 1 {
				t.Fatalf("Discover late = %d, %v", len(got), err)
			}
			must(t, s.Close())
			must(t, os.WriteFile(p, old, 0o600))
		}, Options{}, `bloom_from="seen bucket"`},
		{"too full for a stricter rate", func(*testing.T, string) {}, Options{ExpectedURLs: 100_000, FPRate: 1e-12}, `bloom_from="seen bucket"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := open(t, dir, Options{ExpectedURLs: 2000, FPRate: 1e-3})
			var urls []string
			for i := 0; i < 1000; i++ {
				urls = append(urls, fmt.Sprintf("http://s/%d", i))
			}
			if _, err := s.Discover(ctx, reqs(urls...)); err != nil {
				t.Fatal(err)
			}
			must(t, s.Close())
			if _, err := os.Stat(filepath.Join(dir, SnapshotFile)); err != nil {
				t.Fatalf("Close wrote no snapshot: %v", err)
			}
			tt.tamper(t, dir)
			opt := tt.opt
			if opt.ExpectedURLs == 0 {
				opt = Options{ExpectedURLs: 2000, FPRate: 1e-3}
			}
			s, logs := open(t, dir, opt)
			if !strings.Contains(logs.String(), tt.wantFrom) {
				t.Fatalf("Open log %q lacks %s", logs.String(), tt.wantFrom)
			}
			if _, err := os.Stat(filepath.Join(dir, SnapshotFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("snapshot not removed after Open")
			}
			all := append(urls, "http://late/")
			got, err := s.Discover(ctx, reqs(all...))
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "stale after more commits" {
				if len(got) != 0 {
					t.Fatalf("stale snapshot: %v accepted again", urlsOf(got))
				}
			} else if len(got) != 1 || got[0].URL != "http://late/" {
				t.Fatalf("after reopen accepted %v, want only http://late/", urlsOf(got))
			}
		})
	}
}

func TestDiscoverLowersPendingDepth(t *testing.T) {
	for _, mode := range []string{SeenExact, SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{SeenMode: mode, ExpectedURLs: 1000})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			deep := frontier.Request{URL: "http://a.test/x", Key: "a.test", Depth: 3, Priority: 3}
			got, err := s.Discover(ctx, []frontier.Request{deep})
			if err != nil || len(got) != 1 {
				t.Fatalf("Discover = %v, %v", got, err)
			}
			deep = got[0]
			// Found again deeper or equal: nothing changes.
			if got, _ := s.Discover(ctx, []frontier.Request{{URL: deep.URL, Key: "a.test", Depth: 3, Redirects: 1}}); len(got) != 0 {
				t.Fatalf("rediscovery at the same depth returned %v", got)
			}
			// Found as a redirect target at depth 2: lowered, same Seq.
			got, err = s.Discover(ctx, []frontier.Request{{URL: deep.URL, Key: "a.test", Depth: 2, Priority: 2, Redirects: 1}})
			if err != nil || len(got) != 1 || got[0].Seq != deep.Seq || got[0].Depth != 2 || got[0].Redirects != 1 {
				t.Fatalf("lowering: got %+v, %v", got, err)
			}
			if cur, _ := s.Current(ctx, deep); cur {
				t.Error("the depth-3 copy is still current after lowering")
			}
			if cur, _ := s.Current(ctx, got[0]); !cur {
				t.Error("the lowered copy is not current")
			}
			// Completing the stale copy is a no-op; the lowered one completes.
			if _, err := s.Complete(ctx, deep, Outcome{Class: "200"}, nil); err != nil {
				t.Fatal(err)
			}
			if n := s.PendingCount(); n != 1 {
				t.Fatalf("stale Complete removed the pending URL (pending %d)", n)
			}
			if _, err := s.Complete(ctx, got[0], Outcome{Class: "200"}, nil); err != nil {
				t.Fatal(err)
			}
			if n := s.PendingCount(); n != 0 {
				t.Fatalf("pending %d after completing the lowered copy", n)
			}
			// Once fetched, a shallower rediscovery changes nothing.
			if got, _ := s.Discover(ctx, []frontier.Request{{URL: deep.URL, Depth: 0, Redirects: 1}}); len(got) != 0 {
				t.Fatalf("rediscovery after completion returned %v", got)
			}
		})
	}
}
