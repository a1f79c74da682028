package state

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
	bolt "go.etcd.io/bbolt"
)

// crashEnv, when set to a directory, turns TestCrashSafety into the child
// process that crawls a synthetic URL graph in that directory until killed.
const crashEnv = "SPIDER_STATE_CRASH_CHILD_DIR"

// crashURL and crashID map node i of the synthetic graph to its URL.
func crashURL(i int) string { return "http://g/" + strconv.Itoa(i) }

func crashID(url string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(url, "http://g/"))
	if err != nil {
		panic(err)
	}
	return i
}

// crashChildren are the links of node i: a tree (2i+1, 2i+2) plus one
// cross link that is usually already seen.
func crashChildren(i int) []frontier.Request {
	const universe = 1 << 22
	var out []frontier.Request
	for _, c := range []int{2*i + 1, 2*i + 2, (i*7919 + 13) % universe} {
		if c < universe {
			out = append(out, frontier.Request{URL: crashURL(c), Key: "g:80", Depth: 1})
		}
	}
	return out
}

var crashClasses = []string{"200", "404", "30x", "timeout"}

// crashProgressStep is how often (in completions) the crash child reports its progress.
const crashProgressStep = 25

// runCrashChild crawls until killed: 4 workers Complete pending URLs with
// their children, sometimes bumping Attempt with UpdatePending first.
func runCrashChild(dir string) {
	// A small recent set, so that kills land before, during and after
	// merges into seen.
	s, err := Open(dir, Options{ExpectedURLs: 1 << 20, SyncInterval: 20 * time.Millisecond, BatchDelay: time.Millisecond,
		RecentSize: 300, RecentShare: 4})
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(3)
	}
	var (
		mu    sync.Mutex
		queue []frontier.Request
	)
	if s.SeenCount() == 0 {
		// The seed becomes pending; LoadPending below queues it.
		if _, err := s.Discover(ctx, []frontier.Request{{URL: crashURL(0), Key: "g:80"}}); err != nil {
			fmt.Println("seed failed:", err)
			os.Exit(3)
		}
	}
	if err := s.LoadPending(ctx, func(r frontier.Request) error { queue = append(queue, r); return nil }); err != nil {
		fmt.Println("load failed:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	var completed atomic.Int64
	for w := 0; w < 4; w++ {
		go func() {
			r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(w)))
			for {
				mu.Lock()
				if len(queue) == 0 {
					mu.Unlock()
					time.Sleep(time.Millisecond) // idle: another worker's completion refills the queue
					continue
				}
				req := queue[0]
				queue = queue[1:]
				mu.Unlock()
				id := crashID(req.URL)
				if r.IntN(10) == 0 {
					req.Attempt++
					if err := s.UpdatePending(ctx, req); err != nil {
						fmt.Println("update failed:", err)
						os.Exit(4)
					}
				}
				res, err := s.Complete(ctx, req, Outcome{Class: crashClasses[id%len(crashClasses)], Fingerprint: uint64(id) + 1, Stored: id%2 == 0}, crashChildren(id))
				if err != nil {
					fmt.Println("complete failed:", err)
					os.Exit(4)
				}
				mu.Lock()
				queue = append(queue, res.New...)
				mu.Unlock()
				// The parent kills at a point of the progress, which it reads here.
				if n := completed.Add(1); n%crashProgressStep == 0 {
					fmt.Println("progress", n)
				}
			}
		}()
	}
	select {}
}

// crashSnapshot is what the parent reads from the raw database.
type crashSnapshot struct {
	pending   map[string]uint64 // URL → Seq
	completed map[string]bool
	seen      int
	counters  int64
	inSeen    int  // entries of the seen bucket (merged)
	merging   bool // a frozen generation was partly merged
}

// checkCrashInvariants opens the raw bbolt file and checks: every accepted
// URL is pending or completed, never both; seen holds exactly those URLs;
// the counters add up to the completed URLs; the stored counts match.
func checkCrashInvariants(t *testing.T, dir string) crashSnapshot {
	t.Helper()
	db, err := bolt.Open(dir+"/"+DBFile, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatalf("raw open after kill: %v", err)
	}
	defer db.Close()
	snap := crashSnapshot{pending: map[string]uint64{}, completed: map[string]bool{}}
	err = db.View(func(tx *bolt.Tx) error {
		pend, fp, counters, meta := tx.Bucket(bPending), tx.Bucket(bFP), tx.Bucket(bCounters), tx.Bucket(bMeta)
		if pend == nil {
			return nil // killed before the buckets existed
		}
		var maxSeq uint64
		if err := pend.ForEach(func(k, v []byte) error {
			var r frontier.Request
			if err := r.UnmarshalBinary(v); err != nil {
				return fmt.Errorf("pending %x: %w", k, err)
			}
			if seq := binary.BigEndian.Uint64(k); seq != r.Seq {
				return fmt.Errorf("pending key %d holds Seq %d", seq, r.Seq)
			}
			if _, dup := snap.pending[r.URL]; dup {
				return fmt.Errorf("%s pending twice", r.URL)
			}
			snap.pending[r.URL] = r.Seq
			maxSeq = max(maxSeq, r.Seq)
			return nil
		}); err != nil {
			return err
		}
		if pend.Sequence() < maxSeq {
			return fmt.Errorf("bucket sequence %d below pending Seq %d", pend.Sequence(), maxSeq)
		}
		if err := fp.ForEach(func(k, v []byte) error {
			url := string(v)
			if uint64(crashID(url))+1 != binary.BigEndian.Uint64(k) {
				return fmt.Errorf("fingerprint %x owned by %s", k, url)
			}
			if _, ok := snap.pending[url]; ok {
				return fmt.Errorf("%s is both pending and completed", url)
			}
			snap.completed[url] = true
			return nil
		}); err != nil {
			return err
		}
		if err := counters.ForEach(func(_, v []byte) error {
			snap.counters += int64(binary.BigEndian.Uint64(v))
			return nil
		}); err != nil {
			return err
		}
		all, err := logicalSeen(tx)
		if err != nil {
			return err
		}
		snap.seen = len(all)
		snap.inSeen = tx.Bucket(bSeen).Stats().KeyN
		if l, ok, err := readRecentLayout(tx); err == nil && ok && l.merged != nil {
			snap.merging = true
		}
		for url := range snap.pending {
			if _, ok := all[dedup.KeyOf(url)]; !ok {
				return fmt.Errorf("pending %s missing from seen", url)
			}
		}
		for url := range snap.completed {
			if _, ok := all[dedup.KeyOf(url)]; !ok {
				return fmt.Errorf("completed %s missing from seen", url)
			}
		}
		if snap.seen != len(snap.pending)+len(snap.completed) {
			return fmt.Errorf("seen %d ≠ pending %d + completed %d", snap.seen, len(snap.pending), len(snap.completed))
		}
		if snap.counters != int64(len(snap.completed)) {
			return fmt.Errorf("counters sum %d ≠ completed %d", snap.counters, len(snap.completed))
		}
		if getInt(meta, mPending) != int64(len(snap.pending)) || getInt(meta, mSeen) != int64(snap.seen) {
			return fmt.Errorf("stored counts pending=%d seen=%d, buckets %d %d", getInt(meta, mPending), getInt(meta, mSeen), len(snap.pending), snap.seen)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("invariant broken after kill: %v", err)
	}
	return snap
}

// logicalSeen is the seen set of a raw database: the seen bucket and the
// recent bucket's unmerged entries (key → Seq). It checks that every
// accepted URL is in exactly one of them: an unmerged recent entry is not in
// the seen bucket, a merged one is, under the same Seq.
func logicalSeen(tx *bolt.Tx) (map[dedup.Key]uint64, error) {
	all := map[dedup.Key]uint64{}
	seen := tx.Bucket(bSeen)
	if err := seen.ForEach(func(k, v []byte) error {
		key, err := dedup.KeyFromBytes(k)
		if err != nil {
			return err
		}
		seq, _ := binary.Uvarint(v) // 0 for the empty values of old versions
		all[key] = seq
		return nil
	}); err != nil {
		return nil, err
	}
	l, ok, err := readRecentLayout(tx)
	if err != nil || !ok {
		return all, err
	}
	if err := walkRecent(tx, l, func(key dedup.Key, e recentEntry, _ bool) error {
		if _, dup := all[key]; dup {
			return fmt.Errorf("unmerged recent entry %d is also in seen", e.seq)
		}
		all[key] = e.seq
		return nil
	}); err != nil {
		return nil, err
	}
	if l.merged != nil {
		err := tx.Bucket(bRecent).Bucket(seqKey(l.gen)).ForEach(func(k, v []byte) error {
			key, e, err := decodeRecent(k, v)
			if err != nil {
				return err
			}
			if string(v[:16]) > string(l.merged) {
				return nil
			}
			if seq, ok := all[key]; !ok || seq != e.seq {
				return fmt.Errorf("merged recent entry %d is not in seen", e.seq)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return all, nil
}

// TestCrashSafety SIGKILLs a child process that Discovers and Completes in a
// loop, at random moments, 12 times; after each kill the state must satisfy
// the invariants, reopen cleanly and have lost no committed work.
func TestCrashSafety(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		runCrashChild(dir)
		return
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	var prev crashSnapshot
	merging := 0
	const rounds = 12
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashSafety$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Every third round kills at once (during Open or resume); the others
		// wait for the child to run, then kill it mid-work at a random point of
		// its progress (25 to 300 completions into the run), whatever the
		// machine's speed.
		if round%3 != 2 {
			target := int64(crashProgressStep * (1 + r.IntN(12)))
			timeout := time.After(60 * time.Second) // bounds a stuck child; not a synchronisation
			for started := false; ; {
				var l string
				var ok bool
				select {
				case l, ok = <-lines:
				case <-timeout:
					_ = cmd.Process.Kill()
					t.Fatalf("round %d: child did not reach %d completions in 60 s", round, target)
				}
				var n int64
				_, perr := fmt.Sscanf(l, "progress %d", &n)
				switch {
				case ok && l == "ready":
					started = true
					continue
				case ok && started && perr == nil:
				default:
					_ = cmd.Process.Kill()
					t.Fatalf("round %d: child said %q", round, l)
				}
				if n >= target {
					break
				}
			}
		} else {
			// Time is the subject: a random instant of the child's start-up (Open,
			// the Bloom filter's rebuild, LoadPending), which reports no progress.
			time.Sleep(time.Duration(r.IntN(100)) * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		for l := range lines {
			if l != "ready" && !strings.HasPrefix(l, "progress ") {
				t.Fatalf("round %d: child failed: %s", round, l)
			}
		}
		snap := checkCrashInvariants(t, dir)
		if len(snap.completed) < len(prev.completed) || snap.seen < prev.seen {
			t.Fatalf("round %d: committed work lost: completed %d→%d, seen %d→%d",
				round, len(prev.completed), len(snap.completed), prev.seen, snap.seen)
		}
		for url := range prev.completed {
			if !snap.completed[url] {
				t.Fatalf("round %d: completed %s lost", round, url)
			}
		}
		prev = snap
		if snap.merging {
			merging++
		}
		s, err := Open(dir, Options{ExpectedURLs: 1 << 20})
		if err != nil {
			t.Fatalf("round %d: Open after kill: %v", round, err)
		}
		if s.PendingCount() != int64(len(snap.pending)) || s.SeenCount() != int64(snap.seen) {
			t.Fatalf("round %d: store counts pending=%d seen=%d, want %d %d", round, s.PendingCount(), s.SeenCount(), len(snap.pending), snap.seen)
		}
		must(t, s.Close())
		t.Logf("round %d: pending %d completed %d seen %d (merged %d, merge in progress %v)",
			round, len(snap.pending), len(snap.completed), snap.seen, snap.inSeen, snap.merging)
	}
	if len(prev.completed) == 0 {
		t.Fatal("the child never completed a URL; the test exercised nothing")
	}
	if prev.inSeen == 0 || merging == 0 {
		t.Fatalf("no kill interrupted a merge of recent URLs (merged %d, rounds killed mid-merge %d); the test exercised no merge", prev.inSeen, merging)
	}
}
