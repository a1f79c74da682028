// Package statetest is the contract of the crawl state, written once and run
// against every back-end: the embedded one (internal/state, on bbolt) and the
// Redis one (internal/rstate). A back-end passes when
//
//	statetest.Run(t, func(t *testing.T, name string, opt state.Options) statetest.Backend { … })
//
// passes. The contract is the one documented on internal/state's Store:
// Discover accepts a URL exactly once (also under concurrent callers), a
// rediscovery of a still-pending URL at a smaller depth lowers it in place
// (same Seq; Current then reports the old copy stale, so it is not
// fetched; a copy already being fetched still completes the URL), Complete
// deletes the pending record, counts the
// outcome, checks the content fingerprint and discovers the page's links in
// one atomic step and is idempotent, UpdatePending rewrites a pending record
// or fails with state.ErrNotPending, LoadPending returns the pending
// requests in Seq order, and everything survives closing and reopening the
// store. With state.Options.Relink (back-ends that implement Relinker), a
// URL already fetched and found again at a smaller depth passes the
// smaller depth on to the links it had, those beyond MaxDepth included,
// and a URL lowered while in flight completes with its links shifted: the
// pages within the depth limit are those of a level-by-level crawl, none
// fetched twice. The revisit schedule (crawlstate.Revisits, revisit.go):
// TakeDue hands due URLs out earliest first, exactly once, never before
// their Due nor while pending; Complete replaces or removes a URL's record;
// RetryFailed requeues the failed; a revisited page is never a duplicate of
// itself; all of it survives a reopen. Back-ends that implement Filer
// judge a page before its record (File) with Complete's decision, see the
// pages filed and not yet completed, and Complete with Outcome.Filed
// returns that decision and makes the filing last.
package statetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// Backend is the crawl state as the engine uses it (the method set of
// crawl.State).
type Backend interface {
	Discover(ctx context.Context, reqs []frontier.Request) ([]frontier.Request, error)
	Complete(ctx context.Context, r frontier.Request, o state.Outcome, discovered []frontier.Request) (state.Result, error)
	UpdatePending(ctx context.Context, r frontier.Request) error
	Current(ctx context.Context, r frontier.Request) (bool, error)
	LoadPending(ctx context.Context, fn func(frontier.Request) error) error
	Counters(ctx context.Context) (map[string]int64, error)
	Sync() error
	Close() error
}

// Counts are the sizes a back-end keeps besides its counters.
type Counts struct {
	Pending     int64 // requests accepted and not completed
	Seen        int64 // requests ever accepted
	PagesStored int64 // completions with Outcome.Stored
}

// Counter is implemented by back-ends (or test adapters around them) that
// report Counts; Run then checks them after every step that changes them.
type Counter interface {
	Counts(ctx context.Context) (Counts, error)
}

// Opener opens the store called name with opt and returns it. Run gives
// every subtest its own names, each a short string of [a-z0-9-]. Opening a
// name again after Close of the earlier Backend must reach the same data, as
// a process restart would; different names must be independent. Only
// SeenMode, ExpectedURLs, FPRate, Relink and MaxDepth of opt matter to the
// contract; the
// opener maps them onto its back-end's options. The opener fails t on error
// and registers Close with t.Cleanup (Close must be idempotent).
type Opener func(t *testing.T, name string, opt state.Options) Backend

var modes = []string{state.SeenExact, state.SeenBloom}

// Run runs the contract against the back-end that open opens.
func Run(t *testing.T, open Opener) {
	r := &runner{open: open}
	t.Run("Discover", r.testDiscover)
	t.Run("DiscoverConcurrentExactlyOnce", r.testDiscoverConcurrent)
	t.Run("SeenModes", r.testSeenModes)
	t.Run("CompleteCountersAndIdempotence", r.testComplete)
	t.Run("CompleteDuplicateContent", r.testDuplicateContent)
	t.Run("CompleteNearDuplicates", r.testNearDuplicates)
	t.Run("CompleteNearDuplicatesConcurrent", r.testNearConcurrent)
	t.Run("FileThenComplete", r.testFile)
	t.Run("FileConcurrentExactlyOne", r.testFileConcurrent)
	t.Run("UpdatePending", r.testUpdatePending)
	t.Run("LoadPendingOrderAndReopen", r.testResume)
	t.Run("LowerPendingDepth", r.testLowerDepth)
	t.Run("Current", r.testCurrent)
	t.Run("SyncAndClose", r.testSyncClose)
	t.Run("RelinkFetchedURL", r.testRelinkFetched)
	t.Run("RelinkWhileInFlight", r.testRelinkInFlight)
	t.Run("RelinkRedirect", r.testRelinkRedirect)
	t.Run("RevisitTakeDueOrder", r.testTakeDueOrder)
	t.Run("RevisitTakeDueExactlyOnce", r.testTakeDueExactlyOnce)
	t.Run("RevisitReplace", r.testRevisitReplace)
	t.Run("RevisitRetryFailed", r.testRetryFailed)
	t.Run("RevisitNotDuplicateOfItself", r.testNotDuplicateOfItself)
	t.Run("RevisitReopen", r.testRevisitReopen)
	t.Run("RevisitReschedule", r.testReschedule)
}

// runner hands out store names that are unique within one Run.
type runner struct {
	open Opener
	mu   sync.Mutex
	n    int
}

// name returns a fresh store name derived from the subtest's name.
func (r *runner) name(t *testing.T) string {
	r.mu.Lock()
	r.n++
	n := r.n
	r.mu.Unlock()
	base := strings.ToLower(t.Name())
	if i := strings.Index(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	var b strings.Builder
	for _, c := range base {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:40]
	}
	return fmt.Sprintf("%s-%d", strings.Trim(s, "-"), n)
}

func small(mode string) state.Options {
	return state.Options{SeenMode: mode, ExpectedURLs: 100_000, FPRate: 1e-6}
}

// Reqs returns requests for urls with Key "k:80" and Depth 1.
func Reqs(urls ...string) []frontier.Request {
	out := make([]frontier.Request, len(urls))
	for i, u := range urls {
		out[i] = frontier.Request{URL: u, Key: "k:80", Depth: 1}
	}
	return out
}

// URLs returns the URLs of rs.
func URLs(rs []frontier.Request) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.URL
	}
	return out
}

// LoadAll returns every pending request of b in LoadPending order.
func LoadAll(t testing.TB, b Backend) []frontier.Request {
	t.Helper()
	var out []frontier.Request
	if err := b.LoadPending(context.Background(), func(r frontier.Request) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkCounts compares b's Counts with want when b is a Counter; a
// negative field of want is not checked.
func checkCounts(t *testing.T, b Backend, want Counts) {
	t.Helper()
	c, ok := b.(Counter)
	if !ok {
		return
	}
	got, err := c.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if (want.Pending >= 0 && got.Pending != want.Pending) || (want.Seen >= 0 && got.Seen != want.Seen) ||
		(want.PagesStored >= 0 && got.PagesStored != want.PagesStored) {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (r *runner) testDiscover(t *testing.T) {
	ctx := context.Background()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			s := r.open(t, r.name(t), small(mode))
			tests := []struct {
				in   []string
				want []string
			}{
				{[]string{"a", "b", "c"}, []string{"a", "b", "c"}},
				{[]string{"b", "d"}, []string{"d"}},
				{[]string{"e", "e", "f", "e"}, []string{"e", "f"}}, // duplicates inside one call
				{[]string{"a", "b", "c", "d", "e", "f"}, nil},
				{nil, nil},
			}
			var lastSeq uint64
			for i, tt := range tests {
				in := Reqs(tt.in...)
				for j := range in {
					in[j].Priority, in[j].Attempt, in[j].Topic = 2, 1, "news"
				}
				got, err := s.Discover(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(URLs(got), tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
					t.Fatalf("call %d: accepted %v, want %v", i, URLs(got), tt.want)
				}
				for _, g := range got {
					if g.Seq <= lastSeq {
						t.Fatalf("Seq %d not increasing after %d", g.Seq, lastSeq)
					}
					lastSeq = g.Seq
					want := frontier.Request{URL: g.URL, Key: "k:80", Depth: 1, Priority: 2, Seq: g.Seq, Attempt: 1, Topic: "news"}
					if g != want {
						t.Fatalf("accepted %+v, want %+v", g, want)
					}
				}
			}
			checkCounts(t, s, Counts{Pending: 6, Seen: 6})
			if got := LoadAll(t, s); len(got) != 6 {
				t.Fatalf("%d pending, want 6", len(got))
			}
			if _, err := s.Discover(ctx, []frontier.Request{{URL: "http://ok/"}, {URL: ""}}); err == nil {
				t.Fatal("Discover accepted an empty URL")
			}
			if got := LoadAll(t, s); len(got) != 6 {
				t.Fatalf("a failed Discover recorded something: %d pending, want 6", len(got))
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := s.Discover(cctx, Reqs("x")); !errors.Is(err, context.Canceled) {
				t.Fatalf("Discover with a cancelled context = %v, want context.Canceled", err)
			}
		})
	}
}

// testDiscoverConcurrent: 8 callers discover overlapping URL sets at once;
// every URL is accepted by exactly one of them.
func (r *runner) testDiscoverConcurrent(t *testing.T) {
	ctx := context.Background()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			s := r.open(t, r.name(t), small(mode))
			const n, workers = 300, 8
			var mu sync.Mutex
			won := map[string]int{}
			seqs := map[uint64]bool{}
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					perm := rng.Perm(n)
					for i := 0; i < n; i += 10 {
						var batch []string
						for _, j := range perm[i : i+10] {
							batch = append(batch, fmt.Sprintf("http://x/%d", j))
						}
						got, err := s.Discover(ctx, Reqs(batch...))
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for _, g := range got {
							won[g.URL]++
							seqs[g.Seq] = true
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(won) != n || len(seqs) != n {
				t.Fatalf("%d URLs accepted with %d distinct Seqs, want %d", len(won), len(seqs), n)
			}
			for u, c := range won {
				if c != 1 {
					t.Fatalf("%s accepted %d times", u, c)
				}
			}
			checkCounts(t, s, Counts{Pending: n, Seen: n, PagesStored: 0})
			if got := LoadAll(t, s); len(got) != n {
				t.Fatalf("%d pending, want %d", len(got), n)
			}
		})
	}
}

// testSeenModes: with a tiny, overfull filter, bloom mode drops new URLs on
// false positives while exact mode accepts all.
func (r *runner) testSeenModes(t *testing.T) {
	tests := []struct {
		mode     string
		wantLoss bool
	}{
		{state.SeenExact, false},
		{state.SeenBloom, true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			s := r.open(t, r.name(t), state.Options{SeenMode: tt.mode, ExpectedURLs: 10, FPRate: 0.3})
			var in []string
			for i := 0; i < 2000; i++ {
				in = append(in, fmt.Sprintf("http://y/%d", i))
			}
			got, err := s.Discover(context.Background(), Reqs(in...))
			if err != nil {
				t.Fatal(err)
			}
			if lost := len(in) - len(got); (lost > 0) != tt.wantLoss {
				t.Fatalf("%d of %d new URLs taken as seen", lost, len(in))
			}
		})
	}
}

func (r *runner) testComplete(t *testing.T) {
	ctx := context.Background()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			s := r.open(t, r.name(t), small(mode))
			acc, err := s.Discover(ctx, Reqs("http://a/", "http://b/"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Complete(ctx, acc[0], state.Outcome{Class: "200", Stored: true}, Reqs("http://c/", "http://b/", "http://c/"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(URLs(res.New), []string{"http://c/"}) || res.New[0].Seq <= acc[1].Seq {
				t.Fatalf("new %+v, want [http://c/] with a fresh Seq", res.New)
			}
			checkCounts(t, s, Counts{Pending: 2, Seen: 3, PagesStored: 1})
			again, err := s.Complete(ctx, acc[0], state.Outcome{Class: "200", Stored: true}, Reqs("http://d/"))
			if err != nil {
				t.Fatal(err)
			}
			if len(again.New) != 0 || again.DuplicateOf != "" {
				t.Fatalf("second Complete returned %+v; it must be a no-op", again)
			}
			if _, err := s.Complete(ctx, acc[1], state.Outcome{Class: "404"}, nil); err != nil {
				t.Fatal(err)
			}
			c, err := s.Counters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c["200"] != 1 || c["404"] != 1 || len(c) != 2 {
				t.Fatalf("counters %v, want 200:1 404:1", c)
			}
			checkCounts(t, s, Counts{Pending: 1, Seen: 3, PagesStored: 1})
			if got := LoadAll(t, s); !slices.Equal(URLs(got), []string{"http://c/"}) {
				t.Fatalf("pending %v, want [http://c/]", URLs(got))
			}
			if _, err := s.Complete(ctx, res.New[0], state.Outcome{}, nil); err == nil {
				t.Fatal("Complete accepted an empty class")
			}
			if _, err := s.Complete(ctx, frontier.Request{URL: "http://other/", Seq: res.New[0].Seq}, state.Outcome{Class: "200"}, nil); err == nil {
				t.Fatal("Complete accepted a Seq that belongs to another URL")
			}
			if _, err := s.Complete(ctx, res.New[0], state.Outcome{Class: "200"}, []frontier.Request{{URL: ""}}); err == nil {
				t.Fatal("Complete accepted a discovered request with an empty URL")
			}
			if got := LoadAll(t, s); len(got) != 1 {
				t.Fatalf("a failed Complete changed the pending set: %v", URLs(got))
			}
			// A page with many links is still one atomic step.
			var links []string
			for i := 0; i < 200; i++ {
				links = append(links, fmt.Sprintf("http://c/%d", i))
			}
			res, err = s.Complete(ctx, res.New[0], state.Outcome{Class: "200"}, Reqs(links...))
			if err != nil || len(res.New) != 200 {
				t.Fatalf("Complete with 200 links accepted %d, %v", len(res.New), err)
			}
			checkCounts(t, s, Counts{Pending: 200, Seen: 203, PagesStored: 1})
		})
	}
}

func (r *runner) testDuplicateContent(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	acc, err := s.Discover(ctx, Reqs("http://a/", "http://b/", "http://c/", "http://d/", "http://e/"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		r    frontier.Request
		o    state.Outcome
		want string
	}{
		{acc[0], state.Outcome{Class: "200", Fingerprint: 77}, ""},
		{acc[1], state.Outcome{Class: "200", Fingerprint: 77}, "http://a/"},
		{acc[2], state.Outcome{Class: "200", Fingerprint: 0}, ""},
		{acc[3], state.Outcome{Class: "200", Fingerprint: 1 << 63, URL: "http://final/"}, ""}, // owner is o.URL
		{acc[4], state.Outcome{Class: "200", Fingerprint: 1 << 63}, "http://final/"},
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

func (r *runner) testUpdatePending(t *testing.T) {
	ctx := context.Background()
	name := r.name(t)
	s := r.open(t, name, small(state.SeenExact))
	acc, err := s.Discover(ctx, Reqs("http://a/"))
	if err != nil {
		t.Fatal(err)
	}
	u := acc[0]
	u.Attempt = 3
	must(t, s.UpdatePending(ctx, u))
	if err := s.UpdatePending(ctx, frontier.Request{URL: "http://zz/", Seq: 999}); !errors.Is(err, state.ErrNotPending) {
		t.Fatalf("UpdatePending of an unknown Seq = %v, want state.ErrNotPending", err)
	}
	if err := s.UpdatePending(ctx, frontier.Request{URL: "http://zz/", Seq: u.Seq}); err == nil || errors.Is(err, state.ErrNotPending) {
		t.Fatalf("UpdatePending with a mismatched URL = %v, want a mismatch error", err)
	}
	must(t, s.Close())
	s = r.open(t, name, small(state.SeenExact))
	got := LoadAll(t, s)
	if len(got) != 1 || got[0] != u {
		t.Fatalf("after reopen %+v, want %+v", got, u)
	}
	if _, err := s.Complete(ctx, u, state.Outcome{Class: "200"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdatePending(ctx, u); !errors.Is(err, state.ErrNotPending) {
		t.Fatalf("UpdatePending after Complete = %v, want state.ErrNotPending", err)
	}
}

// testResume: pending requests come back in Seq order after a reopen, the
// seen set still knows every URL, and LoadPending stops at fn's error.
func (r *runner) testResume(t *testing.T) {
	ctx := context.Background()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			name := r.name(t)
			s := r.open(t, name, small(mode))
			const total, done = 3000, 1200
			var all []string
			for i := 0; i < total; i++ {
				all = append(all, fmt.Sprintf("http://r/%05d", i))
			}
			var acc []frontier.Request
			for i := 0; i < total; i += 500 { // several calls: Seqs must keep increasing across them
				got, err := s.Discover(ctx, Reqs(all[i:i+500]...))
				if err != nil {
					t.Fatal(err)
				}
				acc = append(acc, got...)
			}
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < done; i += 8 {
						if _, err := s.Complete(ctx, acc[i], state.Outcome{Class: "200", Stored: i%2 == 0}, nil); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			must(t, s.Sync())
			must(t, s.Close())

			s = r.open(t, name, small(mode))
			checkCounts(t, s, Counts{Pending: total - done, Seen: total, PagesStored: done / 2})
			got := LoadAll(t, s)
			if len(got) != total-done {
				t.Fatalf("LoadPending gave %d, want %d", len(got), total-done)
			}
			for i, g := range got {
				if g != acc[done+i] {
					t.Fatalf("LoadPending item %d is %+v, want %+v (Seq order)", i, g, acc[done+i])
				}
			}
			c, err := s.Counters(ctx)
			if err != nil || c["200"] != done {
				t.Fatalf("counters after reopen %v, %v", c, err)
			}
			again, err := s.Discover(ctx, Reqs(all...))
			if err != nil || len(again) != 0 {
				t.Fatalf("rediscovering known URLs after reopen accepted %d (%v)", len(again), err)
			}
			fresh, err := s.Discover(ctx, Reqs("http://r/new"))
			if err != nil || len(fresh) != 1 || fresh[0].Seq <= acc[total-1].Seq {
				t.Fatalf("a new URL after reopen: %+v, %v; want a Seq above %d", fresh, err, acc[total-1].Seq)
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
		})
	}
}

func (r *runner) testLowerDepth(t *testing.T) {
	ctx := context.Background()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			s := r.open(t, r.name(t), small(mode))
			deep := frontier.Request{URL: "http://a.test/x", Key: "a.test", Depth: 3, Priority: 3, Attempt: 2, Topic: "t"}
			got, err := s.Discover(ctx, []frontier.Request{deep})
			if err != nil || len(got) != 1 {
				t.Fatalf("Discover = %v, %v", got, err)
			}
			deep = got[0]
			// Found again deeper or equal: nothing changes.
			if got, err := s.Discover(ctx, []frontier.Request{{URL: deep.URL, Key: "a.test", Depth: 3, Redirects: 1}}); err != nil || len(got) != 0 {
				t.Fatalf("rediscovery at the same depth returned %v, %v", got, err)
			}
			// Found as a redirect target at depth 2: lowered, same Seq; the
			// pending record keeps its Key, Attempt and Topic.
			got, err = s.Discover(ctx, []frontier.Request{{URL: deep.URL, Key: "other", Depth: 2, Priority: 1, Redirects: 1}})
			want := frontier.Request{URL: deep.URL, Key: "a.test", Depth: 2, Priority: 1, Seq: deep.Seq, Attempt: 2, Redirects: 1, Topic: "t"}
			if err != nil || len(got) != 1 || got[0] != want {
				t.Fatalf("lowering: got %+v, %v; want %+v", got, err, want)
			}
			if p := LoadAll(t, s); len(p) != 1 || p[0] != want {
				t.Fatalf("pending after lowering %+v, want %+v", p, want)
			}
			if cur, err := s.Current(ctx, deep); err != nil || cur {
				t.Errorf("the depth-3 copy: Current = %v, %v; want false", cur, err)
			}
			if cur, err := s.Current(ctx, got[0]); err != nil || !cur {
				t.Errorf("the lowered copy: Current = %v, %v; want true", cur, err)
			}
			// A copy that was fetched completes the URL even if the URL was
			// lowered meanwhile (Current filters the copies not yet fetched;
			// one already being fetched must not leave the URL pending, or
			// it would be fetched twice).
			if _, err := s.Complete(ctx, deep, state.Outcome{Class: "200"}, nil); err != nil {
				t.Fatal(err)
			}
			if p := LoadAll(t, s); len(p) != 0 {
				t.Fatalf("pending %v after completing the deeper copy", URLs(p))
			}
			if cur, err := s.Current(ctx, got[0]); err != nil || cur {
				t.Errorf("the lowered copy after completion: Current = %v, %v; want false", cur, err)
			}
			// Completing the other copy now is a no-op.
			if res, err := s.Complete(ctx, got[0], state.Outcome{Class: "200"}, Reqs("http://a.test/y")); err != nil || len(res.New) != 0 {
				t.Fatalf("second Complete = %+v, %v; want a no-op", res, err)
			}
			if c, _ := s.Counters(ctx); c["200"] != 1 {
				t.Fatalf("counters %v, want one 200", c)
			}
			// Once fetched, a shallower rediscovery changes nothing.
			if got, err := s.Discover(ctx, []frontier.Request{{URL: deep.URL, Depth: 0, Redirects: 1}}); err != nil || len(got) != 0 {
				t.Fatalf("rediscovery after completion returned %v, %v", got, err)
			}
			// Discovered twice in one call, the second time shallower: accepted
			// once, then lowered in the same call.
			got, err = s.Discover(ctx, []frontier.Request{{URL: "http://a.test/z", Depth: 4}, {URL: "http://a.test/z", Depth: 1, Redirects: 1}})
			if err != nil || len(got) != 2 || got[0].Seq != got[1].Seq || got[0].Depth != 4 || got[1].Depth != 1 {
				t.Fatalf("accept-then-lower in one call: %+v, %v", got, err)
			}
			if p := LoadAll(t, s); len(p) != 1 || p[0] != got[1] {
				t.Fatalf("pending %+v, want %+v", p, got[1])
			}
		})
	}
}

func (r *runner) testCurrent(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	acc, err := s.Discover(ctx, Reqs("http://a/", "http://b/"))
	if err != nil {
		t.Fatal(err)
	}
	other := acc[0]
	other.URL = "http://b/"
	missing := acc[0]
	missing.Seq = 1 << 40
	tests := []struct {
		name string
		r    frontier.Request
		want bool
	}{
		{"live copy", acc[0], true},
		{"other URL under the Seq", other, false},
		{"unknown Seq", missing, false},
		{"another depth", frontier.Request{URL: "http://a/", Seq: acc[0].Seq, Depth: 5}, false},
	}
	for _, tt := range tests {
		if cur, err := s.Current(ctx, tt.r); err != nil || cur != tt.want {
			t.Errorf("%s: Current = %v, %v; want %v", tt.name, cur, err, tt.want)
		}
	}
	if _, err := s.Complete(ctx, acc[0], state.Outcome{Class: "200"}, nil); err != nil {
		t.Fatal(err)
	}
	if cur, err := s.Current(ctx, acc[0]); err != nil || cur {
		t.Errorf("completed: Current = %v, %v; want false", cur, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Current(cctx, acc[1]); !errors.Is(err, context.Canceled) {
		t.Errorf("Current with a cancelled context = %v", err)
	}
}

func (r *runner) testSyncClose(t *testing.T) {
	ctx := context.Background()
	name := r.name(t)
	s := r.open(t, name, small(state.SeenBloom))
	if _, err := s.Discover(ctx, Reqs("http://a/")); err != nil {
		t.Fatal(err)
	}
	must(t, s.Sync())
	must(t, s.Close())
	must(t, s.Close()) // idempotent
	s = r.open(t, name, small(state.SeenBloom))
	if got, err := s.Discover(ctx, Reqs("http://a/", "http://b/")); err != nil || !slices.Equal(URLs(got), []string{"http://b/"}) {
		t.Fatalf("after reopen accepted %v, %v; want [http://b/]", URLs(got), err)
	}
}
