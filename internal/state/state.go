// Package state is the crawl's durable state: which URLs were ever accepted
// (seen), which are still to crawl (pending), how crawled URLs ended
// (counters) and which content fingerprints were already stored (fp). It is
// one bbolt file in the data directory, so a crawl killed at any moment
// resumes where it stopped: LoadPending refills the frontier.
//
// # Layout
//
//	bucket    key                          value
//	pending   Seq, 8 bytes big endian      frontier.Request binary encoding
//	seen      dedup.Key of the URL (16 B)  its Seq and smallest depth, uvarints
//	recent    generation: its first Seq,   nested bucket: Seq (8 B) → the
//	          8 B big endian (one active,  URL's dedup.Key (16 B), then its
//	          at most one frozen)          seen value as in seen
//	fp        fingerprint, 8 B big endian  URL of the first page with it
//	counters  outcome class                count, 8 B big endian
//	links     dedup.Key of a fetched URL   with Options.Relink: its depth and
//	                                       discovered requests (relinkTx)
//	simhash   sequence number, 8 B big     the distance k (1 B), the SimHash
//	          endian (an append-only log   (8 B), the URL of a page filed in
//	          of the pages filed)          the near-duplicate tables (near.go)
//	revisit   dedup.Key of a URL with a    its revisit record: version, flags
//	          revisit schedule             (failed), Due, the request as last
//	                                       completed with its Schedule
//	                                       (revisit.go)
//	due       Due (8 B, Unix ms) + key     empty: the index TakeDue walks
//	failed    dedup.Key                    empty: last completion failed
//	meta      "_created", "_pending",      internal values (keys starting
//	          "_seen", "_pages",           with "_" are reserved); user keys
//	          "_txmark", "_merged",        set with SetMeta
//	          "_format" (stateFormat),
//	          "_pagenext", "_recordsend"
//	          (Outcome.PageNext and
//	          RecordsEnd: the largest),
//	          "_revisits", "_due",
//	          "_taken" (revisit.go);
//	          user keys
//
// A URL is accepted exactly once (Discover), stays in pending until
// Complete deletes it and adds its outcome to a counter in the same
// transaction, so every accepted URL is either pending or counted, never
// both, whenever the process dies.
//
// # Seen set
//
// An accepted URL is in exactly one of two places: the seen bucket, or the
// recent set. Discover appends a new URL to the active generation of the
// recent bucket (sequential keys, so it fills one leaf, like pending) and
// to an in-memory map that every lookup consults before the seen bucket.
// Inserting random 16-byte keys into seen one commit at a time would
// rewrite a 4 KiB leaf per URL once the tree is large. Instead, when the
// active generation holds max(Options.RecentSize, 1/Options.RecentShare of
// seen) entries (defaults 16 Ki and 1/8), it is frozen and a new one
// starts, and each later transaction that accepts q URLs also moves about
// q frozen entries, in key order, into seen (Mercator's merge of buffered
// fingerprints into the sorted set, spread over the commits). A merge thus
// rewrites each leaf of seen once per generation, and since generations
// grow with seen, the cost per new URL stays flat as the crawl grows. Meta
// "_merged" records the largest merged key of the frozen generation (its
// merged entries stay in its bucket until the last is merged, then the
// bucket is deleted), so every state on disk says where each URL is. Open
// rebuilds the map from the recent bucket. The map changes only inside
// write transactions; a transaction that rolls back is undone by the next
// one, which finds that the marker "_txmark" the first wrote is not on
// disk. See recent.go. A data directory written before the recent set
// existed gets an empty one at Open and works unchanged.
//
// # Seen test
//
// An in-memory Bloom filter over the seen keys, rebuilt from the seen bucket
// and the recent set at Open, answers first: a negative means new. On a
// positive, exact mode confirms with the recent set and the seen bucket (no
// URL is ever lost); bloom mode trusts the filter (no disk read, but a new
// URL is dropped with probability FPRate).
//
// The filter is saved to seen.bloom by Close and loaded by the next Open
// when the database has not changed since (a clean stop); otherwise Open
// rebuilds it from the seen bucket and the recent set, on all CPUs.
//
// # Durability
//
// By default commits skip fsync (bbolt NoSync): a commit's pages are in the
// operating system's page cache when it returns, so a killed process (even
// kill -9) loses nothing. Durability against power loss comes from
// checkpoints, which a background loop takes every SyncInterval (and Sync
// and Close take): Options.Checkpoint first fsyncs the files the crawl
// appended (page files, then records.jsonl), then the state is fsynced,
// and no commit runs from the start of the first fsync to the end of the
// last. The crawl appends a URL's page and record before the commit that
// completes it, so the state fsynced by a checkpoint completes only URLs
// whose pages and records were fsynced before it. What a power loss can
// lose is the work since the last checkpoint (at most SyncInterval, 10 s by
// default): those URLs are still pending in the fsynced state and are
// fetched again, and pages or records of them that did reach the disk are
// superseded (readers keep a URL's last record; a record whose page number
// was issued again is caught by store.PageFiles.ReadRecord). One caveat of
// NoSync remains: the operating system may write a later commit's pages
// back to disk on its own before the next checkpoint, so after a power
// loss the state can be ahead of the files (or, in bbolt's own words,
// corrupt). Open then still opens, but the crawl compares the records
// file's size with RecordsEnd and refuses a records file that lost
// completed records, naming spider fsck; bbolt corruption is ErrDamaged.
// With SyncCommits every commit is fsynced, and Checkpoint runs before
// each Complete's commit, so the files are always durable before the state
// that completes their URLs, at the cost of two fsyncs per completed URL.
package state

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/store"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Seen modes (Options.SeenMode): the contract's (crawlstate).
const (
	SeenExact = crawlstate.SeenExact
	SeenBloom = crawlstate.SeenBloom
)

// Defaults of Options fields left at their zero value.
const (
	DefaultExpectedURLs = 10_000_000
	DefaultFPRate       = crawlstate.DefaultFPRate
	DefaultSyncInterval = 10 * time.Second
	DefaultBatchDelay   = 500 * time.Microsecond
	DefaultLockTimeout  = time.Second
)

// File names inside the data directory.
const (
	DBFile       = "state.db"
	PIDFile      = "spider.pid"
	SnapshotFile = "seen.bloom" // Bloom filter saved by Close
)

var (
	bPending  = []byte("pending")
	bSeen     = []byte("seen")
	bFP       = []byte("fp")
	bCounters = []byte("counters")
	bMeta     = []byte("meta")
	bLinks    = []byte("links")
	bSim      = []byte("simhash")

	mCreated = []byte("_created")
	mPending = []byte("_pending")
	mSeen    = []byte("_seen")
	mPages   = []byte("_pages")
	mPageEnd = []byte("_pagenext")
	mRecEnd  = []byte("_recordsend")
	mFormat  = []byte("_format")
)

// stateFormat is the state format this package writes, kept in meta
// "_format": 2 has the recent bucket (a state without "_format" is format
// 1 and is upgraded at Open); 3 has the revisit schedule (the revisit,
// due and failed buckets, revisit.go) and pending requests in the version 2
// request encoding (Kind, Schedule), which a format-2 spider cannot read.
// Open upgrades an older format in place (the new buckets start empty).
// Open refuses a newer format: an older spider would not see the URLs a
// newer one keeps elsewhere, and would accept them again.
const stateFormat = 3

// ErrLocked is wrapped by Open when another process holds the data
// directory. It is store.ErrLocked, which the crawl's directory lock
// (store.LockDir) wraps, so errors.Is finds either with either.
var ErrLocked = store.ErrLocked

// ErrNotPending is wrapped by UpdatePending when the request is not (or no
// longer) pending: crawlstate.ErrNotPending.
var ErrNotPending = crawlstate.ErrNotPending

// Options configures Open. The zero value is usable.
type Options struct {
	// SeenMode is SeenExact (default: the seen bucket confirms Bloom filter
	// positives, no URL is lost) or SeenBloom (the filter alone decides; a
	// new URL is wrongly taken as seen with probability FPRate).
	SeenMode string
	// ExpectedURLs sizes the Bloom filter (default 10,000,000). If the store
	// already holds more than half of it, the filter is sized for twice the
	// stored count instead.
	ExpectedURLs uint64
	// FPRate is the Bloom filter's false-positive rate at ExpectedURLs
	// (default 1e-6).
	FPRate float64
	// SyncCommits makes every commit fsync. Default false: commits use bbolt
	// NoSync (safe against a killed process, not against a machine crash;
	// see the package documentation) and a background loop fsyncs every
	// SyncInterval.
	SyncCommits bool
	// SyncInterval is the period of the background fsync when SyncCommits
	// is false. Default 10 s; negative disables it (Sync and Close still
	// fsync).
	SyncInterval time.Duration
	// BatchDelay is how long a commit waits to group concurrent Discover,
	// Complete and UpdatePending calls into one transaction (bbolt
	// MaxBatchDelay). Default 0.5 ms: commits skip fsync by default, so
	// a short window keeps latency low; raise it with SyncCommits.
	BatchDelay time.Duration
	// LockTimeout is how long Open waits for another process to release the
	// data directory. Default 1 s.
	LockTimeout time.Duration
	// Logger receives the Bloom rebuild time and background errors. Nil
	// discards.
	Logger *slog.Logger
	// Checkpoint makes durable the files the state's completions describe
	// (the crawl's page files and records; nil: none). It is the first half
	// of every checkpoint: the background fsync, Sync and Close call it and
	// then fsync the state, with every commit held off from before the call
	// until the fsync returned, so the state on disk never completes a URL
	// whose page or record was appended after the files were fsynced. With
	// SyncCommits, Complete calls it before each commit. An error stops the
	// checkpoint (the state is not fsynced) and is returned (or logged by
	// the background loop).
	Checkpoint func() error
	// Relink makes depth exact for crawls whose depth levels overlap
	// (the default of crawl.Config; not with StrictLevels): Complete keeps the requests a URL
	// discovered, including those deeper than MaxDepth (which it does not
	// accept), in the links bucket; when a URL already fetched is
	// discovered again at a smaller depth, its kept requests are
	// discovered again that much shallower, so links now within MaxDepth
	// are accepted, pending ones lowered and fetched ones relinked in
	// turn. A URL is never fetched twice for it. A URL lowered while it
	// was being fetched (or while a retry was due) has its links shifted
	// the same way when it completes. The cost is the discovered
	// requests' encodings on disk, about the out-links of every page
	// fetched at depth ≥ 1, and a seen-bucket read on every Bloom positive
	// in bloom mode too.
	Relink bool
	// MaxDepth is the largest depth Complete accepts with Relink (negative:
	// no limit). Unused without Relink, where the caller filters depth.
	MaxDepth int
	// RecentSize is the least number of newly accepted URLs buffered in
	// the recent bucket (and in memory, 70 to 100 bytes each) before they
	// are merged into the seen bucket (see the package documentation).
	// Default DefaultRecentSize (16 Ki); negative is an error.
	RecentSize int
	// RecentShare: the buffer also grows to 1/RecentShare of the seen
	// bucket's size, so that merging costs the same per URL at any crawl
	// size: each merge rewrites every leaf of seen (about 80 keys each)
	// once, for 1/RecentShare of seen in new URLs. Default
	// DefaultRecentShare (8: about 1/8 × 100 bytes of memory per seen URL,
	// 125 MB at 10 M URLs). A larger share uses less memory, and merging
	// costs proportionally more CPU per new URL; negative is an error.
	RecentShare int
}

// Outcome and Result are the contract's (crawlstate): what Complete records
// and returns.
type (
	Outcome = crawlstate.Outcome
	Result  = crawlstate.Result
)

// Store is an open crawl state. Its methods are safe for concurrent use;
// concurrent writes are grouped into shared transactions.
type Store struct {
	dir   string
	db    *bolt.DB
	opt   Options
	log   *slog.Logger
	bloom *dedup.Bloom
	// bloomCap is the number of URLs bloom was sized for (see growBloom).
	// Both change only in Open and inside write transactions.
	bloomCap uint64
	exact    bool
	created  time.Time

	pending  atomic.Int64
	seen     atomic.Int64
	pages    atomic.Int64
	pageNext atomic.Int64 // meta _pagenext
	recEnd   atomic.Int64 // meta _recordsend

	// ckpt holds commits off during a checkpoint: every write transaction
	// runs under its read lock, a checkpoint under its write lock.
	ckpt sync.RWMutex

	recent recentSet // newly accepted URLs not yet merged into seen
	sim    simMem    // the near-duplicate tables (near.go)
	filed  filedSet  // pages File filed whose Complete has not committed (near.go)

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

func (o *Options) setDefaults() error {
	switch o.SeenMode {
	case "":
		o.SeenMode = SeenExact
	case SeenExact, SeenBloom:
	default:
		return fmt.Errorf("cannot open crawl state: SeenMode %q, want %q or %q", o.SeenMode, SeenExact, SeenBloom)
	}
	if o.ExpectedURLs == 0 {
		o.ExpectedURLs = DefaultExpectedURLs
	}
	if o.FPRate == 0 {
		o.FPRate = DefaultFPRate
	}
	if !(o.FPRate > 0 && o.FPRate < 1) {
		return fmt.Errorf("cannot open crawl state: FPRate %v, want a probability in (0, 1)", o.FPRate)
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.BatchDelay <= 0 {
		o.BatchDelay = DefaultBatchDelay
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case o.RecentSize < 0:
		return fmt.Errorf("cannot open crawl state: RecentSize %d, want a positive count (0: the default, %d)", o.RecentSize, DefaultRecentSize)
	case o.RecentSize == 0:
		o.RecentSize = DefaultRecentSize
	}
	switch {
	case o.RecentShare < 0:
		return fmt.Errorf("cannot open crawl state: RecentShare %d, want a positive divisor (0: the default, %d)", o.RecentShare, DefaultRecentShare)
	case o.RecentShare == 0:
		o.RecentShare = DefaultRecentShare
	}
	return nil
}

// Open opens (creating if needed) the crawl state in dir, loads the recent
// set from the recent bucket and restores the in-memory Bloom filter: from
// the snapshot saved by Close after a clean stop, else by walking the seen
// bucket and the recent set (about 1.5 µs per URL). A damaged recent
// bucket is an error. If another process has the directory open, Open fails after Options.LockTimeout with an error that
// names that process's pid and wraps ErrLocked. It writes its own pid to
// dir/spider.pid, removed by Close.
//
// A damaged state file (truncated, its meta pages invalid, or a page that
// makes bbolt fail while Open reads it) is an error naming the file and
// `spider fsck` that wraps ErrDamaged, never a panic. A missing or empty
// file is a new state: the caller checks beforehand whether that is right
// (a crawl refuses when its directory already holds records).
func Open(dir string, opt Options) (st *Store, err error) {
	if err := opt.setDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create data directory: %w", err)
	}
	path := filepath.Join(dir, DBFile)
	if info, err := os.Stat(path); err == nil && info.Size() > 0 {
		// Every page bbolt will read is checked first (one pass over the
		// mapped file, the meta pages and the file's length included):
		// bbolt asserts on a damaged page with a panic, and in its own
		// goroutines no recover can turn that into an error.
		if err := CheckFile(dir); err != nil {
			return nil, damaged(dir, err)
		}
	}
	// A damaged page can make bbolt fault on its memory map or panic while
	// Open reads the state: both become ErrDamaged.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bolt.DB
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				_ = db.Close()
			}
			st, err = nil, damaged(dir, fmt.Errorf("reading it failed: %v", r))
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		Timeout: opt.LockTimeout,
		NoSync:  !opt.SyncCommits,
		// Without SyncCommits, nothing but a checkpoint fsyncs the state:
		// bbolt's default fsync when it grows the file would make the
		// state durable ahead of the page files and records it completes
		// (a power loss before the first checkpoint then left a state
		// that completed URLs whose records were lost).
		NoGrowSync:   !opt.SyncCommits,
		FreelistType: bolt.FreelistMapType,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("cannot open crawl state in %s: data directory is in use by another spider process (pid %s); stop it or use another data directory: %w",
			dir, readPID(dir), ErrLocked)
	}
	if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
		return nil, damaged(dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open crawl state %s (is it a spider data directory?): %w", filepath.Join(dir, DBFile), err)
	}
	db.MaxBatchDelay = opt.BatchDelay
	s := &Store{dir: dir, db: db, opt: opt, log: opt.Logger, exact: opt.SeenMode == SeenExact, stop: make(chan struct{})}
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("cannot write pid file: %w", err)
	}
	if !opt.SyncCommits && opt.SyncInterval > 0 {
		s.wg.Add(1)
		go s.syncLoop()
	}
	return s, nil
}

// damaged wraps a damaged state file's error: it names the file and what
// to run (dir is DATA/state, so fsck's directory is its parent).
func damaged(dir string, err error) error {
	return fmt.Errorf("cannot open crawl state %s: it is damaged (%w); run spider fsck --data %s to see what is damaged and spider fsck --data %s --repair to rebuild it: %w",
		filepath.Join(dir, DBFile), err, filepath.Dir(dir), filepath.Dir(dir), ErrDamaged)
}

func readPID(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, PIDFile))
	if err != nil {
		return "unknown"
	}
	if pid := strings.TrimSpace(string(b)); pid != "" {
		return pid
	}
	return "unknown"
}

// init creates the buckets (and the recent bucket's first generation, also
// in a state written before it existed), loads the counts and the recent
// set, and restores the Bloom filter (from the snapshot written by Close,
// or by walking the seen bucket and the recent set).
func (s *Store) init() error {
	buckets := [][]byte{bPending, bSeen, bFP, bCounters, bMeta, bLinks, bRecent, bSim, bRevisit, bDue, bFailed}
	var fresh bool
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, name := range buckets {
			if tx.Bucket(name) == nil {
				fresh = true
			}
		}
		if meta := tx.Bucket(bMeta); meta != nil {
			v := meta.Get(mFormat)
			if f, err := strconv.Atoi(string(v)); v != nil && (err != nil || f > stateFormat) {
				return fmt.Errorf("state format %q, this spider reads formats up to %d: open it with the spider that wrote it, or crawl into a new data directory", v, stateFormat)
			} else if v == nil || f < stateFormat {
				fresh = true // write the format
			}
		}
		_, ok, err := readRecentLayout(tx)
		if err != nil {
			return damagedRecent(err)
		}
		fresh = fresh || !ok
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot read crawl state %s: %w", s.dir, err)
	}
	if fresh {
		err := s.db.Update(func(tx *bolt.Tx) error {
			for _, name := range buckets {
				if _, err := tx.CreateBucketIfNotExists(name); err != nil {
					return err
				}
			}
			if _, ok, err := readRecentLayout(tx); err != nil {
				return err
			} else if !ok {
				// The first generation starts at the next Seq.
				first := seqKey(tx.Bucket(bPending).Sequence() + 1)
				if _, err := tx.Bucket(bRecent).CreateBucket(first); err != nil {
					return err
				}
			}
			meta := tx.Bucket(bMeta)
			if err := meta.Put(mFormat, []byte(strconv.Itoa(stateFormat))); err != nil {
				return err
			}
			if meta.Get(mCreated) == nil {
				return meta.Put(mCreated, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("cannot initialise crawl state: %w", err)
		}
	}
	start := time.Now()
	var (
		storedSeen, storedPending int64
		seen, pending             int64
		source                    string
	)
	err = s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		created, err := time.Parse(time.RFC3339Nano, string(meta.Get(mCreated)))
		if err != nil {
			return fmt.Errorf("bad creation time in meta: %w", err)
		}
		s.created = created
		storedSeen, storedPending = getInt(meta, mSeen), getInt(meta, mPending)
		if err := s.loadRecent(tx); err != nil {
			return err
		}
		if err := s.loadSim(tx); err != nil {
			return err
		}
		if b := s.loadSnapshot(uint64(tx.ID()), storedSeen); b != nil {
			// Clean stop: the stored counts were current at Close.
			s.bloom, seen, pending, source = b, storedSeen, storedPending, "snapshot"
			s.bloomCap = bloomCapacity(b, s.opt.FPRate)
			return nil
		}
		pending = int64(tx.Bucket(bPending).Stats().KeyN)
		expected := bloomSize(uint64(max(storedSeen, 0)), s.opt.ExpectedURLs)
		s.bloom, s.bloomCap = dedup.NewBloom(expected, s.opt.FPRate), expected
		seen, err = rebuildBloom(s.bloom, tx.Bucket(bSeen))
		for k := range s.recent.m {
			s.bloom.AddKey(k)
		}
		seen += int64(len(s.recent.m))
		source = "seen bucket"
		return err
	})
	if err != nil {
		// What the file holds does not decode: the state is damaged.
		return damaged(s.dir, err)
	}
	// The counts are maintained in the same transactions as the data;
	// repair them if they ever disagree with the buckets.
	if storedSeen != seen || storedPending != pending {
		s.log.Warn("crawl state: repairing stored counts",
			"seen_stored", storedSeen, "seen", seen, "pending_stored", storedPending, "pending", pending)
		err := s.db.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bMeta)
			if err := putInt(meta, mSeen, seen); err != nil {
				return err
			}
			return putInt(meta, mPending, pending)
		})
		if err != nil {
			return fmt.Errorf("cannot repair crawl state counts: %w", err)
		}
	}
	s.seen.Store(seen)
	s.pending.Store(pending)
	s.setPace()
	err = s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bMeta)
		s.pages.Store(getInt(meta, mPages))
		s.pageNext.Store(getInt(meta, mPageEnd))
		s.recEnd.Store(getInt(meta, mRecEnd))
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot load crawl state: %w", err)
	}
	s.log.Info("crawl state opened", "dir", s.dir, "seen", seen, "pending", pending,
		"recent", len(s.recent.m), "bloom_bits", s.bloom.M(), "bloom_k", s.bloom.K(), "bloom_from", source, "took", time.Since(start))
	return nil
}

// The Bloom filter grows with the crawl. Sized for Options.ExpectedURLs
// from the start (10 million by default: 36 MB at FPRate 1e-6, every page
// of it touched by a few thousand URLs' random bits), it made a crawl of a
// few thousand pages a 110 MB process. It starts instead at the first of
// bloomSteps that holds twice the URLs seen (at most ExpectedURLs), and
// when the URLs seen pass the size it was made for, a write transaction
// rebuilds it one step up from the seen bucket and the recent set, as Open
// does (about 1.5 µs per URL over the CPUs: 0.05 s at the first step, 0.75
// s at the last); past the last step it is sized for ExpectedURLs at once,
// so a large crawl pays at most three short pauses in its first million
// URLs and then runs on the filter it always had. Beyond ExpectedURLs it
// does not grow during a run (the next Open sizes it for twice the URLs
// seen), as before.
var bloomSteps = []uint64{1 << 16, 1 << 18, 1 << 20}

// bloomSize returns the number of URLs a filter for a state holding seen
// URLs is sized for: the first of bloomSteps at least twice seen, else
// expected, else twice seen.
func bloomSize(seen, expected uint64) uint64 {
	for _, c := range bloomSteps {
		if c >= expected {
			break
		}
		if 2*seen <= c {
			return c
		}
	}
	return max(expected, 2*seen)
}

// bloomCapacity returns the number of insertions at which b's false
// positive rate reaches fpRate: n = −(m/k)·ln(1 − p^(1/k)).
func bloomCapacity(b *dedup.Bloom, fpRate float64) uint64 {
	m, k := float64(b.M()), float64(b.K())
	return uint64(-(m / k) * math.Log(1-math.Pow(fpRate, 1/k)))
}

// growBloom rebuilds the Bloom filter one size up (bloomSize) in the write
// transaction tx when the URLs seen have passed the size it was made for
// and it is smaller than Options.ExpectedURLs. The new filter holds every
// key of tx's view (the seen bucket and the recent set); the writer being
// alone, no key can be added meanwhile.
func (s *Store) growBloom(tx *bolt.Tx) error {
	seen := uint64(max(s.seen.Load(), 0))
	if s.bloomCap >= s.opt.ExpectedURLs || seen <= s.bloomCap {
		return nil
	}
	start := time.Now()
	size := bloomSize(seen, s.opt.ExpectedURLs)
	b := dedup.NewBloom(size, s.opt.FPRate)
	if _, err := rebuildBloom(b, tx.Bucket(bSeen)); err != nil {
		return err
	}
	for k := range s.recentIn(tx).m {
		b.AddKey(k)
	}
	s.bloom, s.bloomCap = b, size
	s.log.Info("crawl state: Bloom filter grown", "seen", seen, "sized_for", size, "bloom_bits", b.M(), "bloom_k", b.K(), "took", time.Since(start))
	return nil
}

// rebuildBloom adds every key of the seen bucket to b, spreading the
// filter updates (random memory accesses, the slow part) over all CPUs. It
// returns the number of keys.
func rebuildBloom(b *dedup.Bloom, seen *bolt.Bucket) (int64, error) {
	const chunk = 8192
	work := make(chan []dedup.Key, 4)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for keys := range work {
				for _, k := range keys {
					b.AddKey(k)
				}
			}
		}()
	}
	var n int64
	var err error
	keys := make([]dedup.Key, 0, chunk)
	c := seen.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		var key dedup.Key
		if key, err = dedup.KeyFromBytes(k); err != nil {
			err = fmt.Errorf("bad key in seen bucket: %w", err)
			break
		}
		keys = append(keys, key)
		n++
		if len(keys) == chunk {
			work <- keys
			keys = make([]dedup.Key, 0, chunk)
		}
	}
	work <- keys
	close(work)
	wg.Wait()
	return n, err
}

// Bloom snapshot file: written by Close, used by the next Open only if the
// database has not committed anything since (same transaction id), then
// deleted. After a crash the transaction ids differ and Open rebuilds.
//
//	magic "SPSS" | version uint32 (1) | txid uint64 | seen int64 | Bloom.WriteTo
const (
	snapshotMagic   = "SPSS"
	snapshotVersion = 1
)

func (s *Store) snapshotPath() string { return filepath.Join(s.dir, SnapshotFile) }

// loadSnapshot returns the snapshot filter if it is valid for txid and seen
// and not too full for the configured false-positive rate; else nil. The
// file is removed either way.
func (s *Store) loadSnapshot(txid uint64, seen int64) *dedup.Bloom {
	path := s.snapshotPath()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer func() {
		_ = f.Close()
		_ = os.Remove(path)
	}()
	r := bufio.NewReaderSize(f, 1<<20)
	hdr := make([]byte, 24)
	if _, err := io.ReadFull(r, hdr); err != nil || string(hdr[:4]) != snapshotMagic ||
		binary.LittleEndian.Uint32(hdr[4:]) != snapshotVersion {
		s.log.Warn("crawl state: ignoring unreadable Bloom snapshot", "path", path)
		return nil
	}
	if binary.LittleEndian.Uint64(hdr[8:]) != txid || int64(binary.LittleEndian.Uint64(hdr[16:])) != seen {
		s.log.Info("crawl state: Bloom snapshot is older than the database (unclean stop?); rebuilding")
		return nil
	}
	var b dedup.Bloom
	if _, err := b.ReadFrom(r); err != nil {
		s.log.Warn("crawl state: ignoring damaged Bloom snapshot", "err", err)
		return nil
	}
	// Keep the filter only if it still meets the configured rate at the
	// stored count: p = (1 - e^(-k·n/m))^k.
	p := math.Pow(1-math.Exp(-float64(b.K())*float64(seen)/float64(b.M())), float64(b.K()))
	if p > 2*s.opt.FPRate {
		s.log.Info("crawl state: Bloom snapshot too full for FPRate; rebuilding a larger filter", "fp_rate", p)
		return nil
	}
	return &b
}

// writeSnapshot saves the Bloom filter for a fast next Open. It writes a
// temporary file, fsyncs and renames it, so a crash never leaves a partial
// snapshot under the real name.
func (s *Store) writeSnapshot() error {
	var txid uint64
	if err := s.db.View(func(tx *bolt.Tx) error { txid = uint64(tx.ID()); return nil }); err != nil {
		return err
	}
	tmp := s.snapshotPath() + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	hdr := append([]byte(snapshotMagic), make([]byte, 20)...)
	binary.LittleEndian.PutUint32(hdr[4:], snapshotVersion)
	binary.LittleEndian.PutUint64(hdr[8:], txid)
	binary.LittleEndian.PutUint64(hdr[16:], uint64(s.seen.Load()))
	_, err = w.Write(hdr)
	if err == nil {
		_, err = s.bloom.WriteTo(w)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.snapshotPath())
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

func (s *Store) syncLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opt.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			err := s.checkpoint()
			if err != nil {
				s.log.Error("crawl state: background fsync failed", "err", err)
			}
			callSyncedHook(s, err)
		}
	}
}

func getInt(b *bolt.Bucket, key []byte) int64 {
	v := b.Get(key)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func putInt(b *bolt.Bucket, key []byte, v int64) error {
	return b.Put(key, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(v)))
}

func addInt(b *bolt.Bucket, key []byte, delta int64) error {
	if delta == 0 {
		return nil
	}
	return putInt(b, key, getInt(b, key)+delta)
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq) }

// deltas are the count changes of one transaction attempt, applied to the
// in-memory counts only after the commit succeeded.
type deltas struct{ pending, seen, pages int64 }

func (d deltas) write(meta *bolt.Bucket) error {
	if err := addInt(meta, mPending, d.pending); err != nil {
		return err
	}
	if err := addInt(meta, mSeen, d.seen); err != nil {
		return err
	}
	return addInt(meta, mPages, d.pages)
}

// batch runs fn in a shared write transaction (bbolt DB.Batch), never
// during a checkpoint.
func (s *Store) batch(fn func(*bolt.Tx) error) error {
	s.ckpt.RLock()
	defer s.ckpt.RUnlock()
	return s.db.Batch(fn)
}

// putMax stores v under key in meta if it is larger than what is there.
func putMax(meta *bolt.Bucket, key []byte, v int64) error {
	if v <= getInt(meta, key) {
		return nil
	}
	return putInt(meta, key, v)
}

// storeMax raises a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

func (s *Store) apply(d deltas) {
	s.pending.Add(d.pending)
	s.seen.Add(d.seen)
	s.pages.Add(d.pages)
}

func checkRequests(reqs []frontier.Request) error {
	for _, r := range reqs {
		if r.URL == "" {
			return errors.New("cannot discover a request with an empty URL")
		}
	}
	return nil
}

// discoverTx records the unseen requests of reqs as seen and pending in tx
// and returns them with fresh Seqs. mine holds the keys this caller put in
// the Bloom filter in earlier attempts of the same batched call (bbolt may
// run a batch function more than once): their filter bits may come from a
// rolled-back attempt, so they are always confirmed on disk.
func (s *Store) discoverTx(tx *bolt.Tx, reqs []frontier.Request, mine map[dedup.Key]struct{}, d *deltas) ([]frontier.Request, error) {
	if err := s.growBloom(tx); err != nil {
		return nil, err
	}
	pend, rs := tx.Bucket(bPending), s.recentIn(tx)
	var out []frontier.Request
	kb := make([]byte, 0, 16)
	for _, r := range reqs {
		key := dedup.KeyOf(r.URL)
		kb = key.AppendBinary(kb[:0])
		if s.bloom.TestKey(key) {
			_, retried := mine[key]
			// bloom mode takes a positive as seen, except for redirect
			// targets, which may lower a pending URL's depth (below).
			if !s.exact && !retried && r.Redirects == 0 && !s.opt.Relink {
				continue
			}
			if e, ok := s.lookup(tx, key, kb); ok {
				lowered, err := s.lowerTx(tx, key, kb, e, r, mine, d)
				if err != nil {
					return nil, err
				}
				out = append(out, lowered...)
				continue
			}
		}
		seq, err := pend.NextSequence()
		if err != nil {
			return nil, err
		}
		r.Seq = seq
		enc, err := r.MarshalBinary()
		if err != nil {
			return nil, err
		}
		if err := rs.add(key, kb, recentEntry{seq: seq, depth: uint64(r.Depth)}); err != nil {
			return nil, err
		}
		if err := pend.Put(seqKey(seq), enc); err != nil {
			return nil, err
		}
		s.bloom.AddKey(key)
		mine[key] = struct{}{}
		d.pending++
		d.seen++
		out = append(out, r)
	}
	return out, nil
}

// seenValue is a seen entry's value: the URL's Seq and the smallest depth it
// was discovered at, as uvarints.
func seenValue(seq uint64, depth int) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 12), seq)
	return binary.AppendUvarint(b, uint64(depth))
}

// lowerTx handles a URL seen before (seen entry e) discovered again as r.
// If r is shallower and the URL is still pending, the pending record takes
// r's depth, priority and redirect count (same Seq) and is returned, so
// that the URL is fetched at its shortest depth (a redirect target keeps
// its source's depth and may be found in the same level as a plain link one
// level deeper). If r is shallower and the URL was fetched, with Relink its
// seen depth is lowered and its kept links are discovered again (relinkTx);
// what that accepts or lowers is returned. Entries written before seen
// values existed are empty and never lowered.
func (s *Store) lowerTx(tx *bolt.Tx, key dedup.Key, kb []byte, e seenEntry, r frontier.Request, mine map[dedup.Key]struct{}, d *deltas) ([]frontier.Request, error) {
	pend := tx.Bucket(bPending)
	seq := e.seq
	if !e.hasDepth || uint64(r.Depth) >= e.depth {
		return nil, nil
	}
	enc := pend.Get(seqKey(seq))
	if enc == nil {
		if !s.opt.Relink {
			return nil, nil // already fetched at the greater depth
		}
		if err := s.setSeenDepth(tx, key, kb, e, r.Depth); err != nil {
			return nil, err
		}
		return s.relinkTx(tx, kb, r.Depth, mine, d)
	}
	var cur frontier.Request
	if err := cur.UnmarshalBinary(enc); err != nil {
		return nil, fmt.Errorf("pending record %d is damaged: %w", seq, err)
	}
	cur.Depth, cur.Priority, cur.Redirects = r.Depth, r.Priority, r.Redirects
	b, err := cur.MarshalBinary()
	if err != nil {
		return nil, err
	}
	if err := pend.Put(seqKey(seq), b); err != nil {
		return nil, err
	}
	if err := s.setSeenDepth(tx, key, kb, e, r.Depth); err != nil {
		return nil, err
	}
	return []frontier.Request{cur}, nil
}

// relinkTx discovers again, depth-shifted, the links kept for the fetched
// URL of seen key kb now that it has the smaller depth: a kept request
// found at the URL's old depth + k is discovered at depth + k (priority
// lowered alike), and accepted if within MaxDepth. The recursion through
// discoverTx ends because every step lowers a seen depth, which stays ≥ 0.
func (s *Store) relinkTx(tx *bolt.Tx, kb []byte, depth int, mine map[dedup.Key]struct{}, d *deltas) ([]frontier.Request, error) {
	rec := tx.Bucket(bLinks).Get(kb)
	if rec == nil {
		return nil, nil // no links kept: not HTML, an error, or fetched before Relink
	}
	oldDepth, kids, err := decodeLinks(rec)
	if err != nil {
		return nil, fmt.Errorf("links record of %x is damaged: %w", kb, err)
	}
	return s.discoverTx(tx, s.admit(frontier.ShiftDepth(kids, oldDepth-depth)), mine, d)
}

// admit returns the requests of reqs within MaxDepth (all when it is
// negative). It may return reqs itself.
func (s *Store) admit(reqs []frontier.Request) []frontier.Request {
	if s.opt.MaxDepth < 0 {
		return reqs
	}
	out := reqs[:0:0]
	for _, r := range reqs {
		if r.Depth <= s.opt.MaxDepth {
			out = append(out, r)
		}
	}
	return out
}

// encodeLinks is a links record: the depth the URL was fetched at and its
// discovered requests (frontier.AppendRequests).
func encodeLinks(depth int, kids []frontier.Request) ([]byte, error) {
	return frontier.AppendRequests(binary.AppendUvarint(nil, uint64(depth)), kids)
}

// decodeLinks reads an encodeLinks record.
func decodeLinks(b []byte) (depth int, kids []frontier.Request, err error) {
	d, n := binary.Uvarint(b)
	if n <= 0 || d > math.MaxInt32 {
		return 0, nil, errors.New("bad depth")
	}
	if kids, err = frontier.DecodeRequests(b[n:]); err != nil {
		return 0, nil, err
	}
	return int(d), kids, nil
}

// Relinks reports whether the store was opened with Options.Relink: its
// Complete then takes discovered requests beyond MaxDepth too, and keeps
// them.
func (s *Store) Relinks() bool { return s.opt.Relink }

// Current reports whether r is the live copy of a pending URL: pending under
// r.Seq at r.Depth. A copy whose URL was since lowered to a smaller depth,
// or that is no longer pending, is stale and should be dropped unfetched.
func (s *Store) Current(ctx context.Context, r frontier.Request) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var cur bool
	err := s.db.View(func(tx *bolt.Tx) error {
		enc := tx.Bucket(bPending).Get(seqKey(r.Seq))
		if enc == nil {
			return nil
		}
		var p frontier.Request
		if err := p.UnmarshalBinary(enc); err != nil {
			return fmt.Errorf("pending record %d is damaged: %w", r.Seq, err)
		}
		cur = p.URL == r.URL && p.Depth == r.Depth
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("cannot read pending %q: %w", r.URL, err)
	}
	return cur, nil
}

// Discover accepts the requests whose URL was never seen: each is recorded
// as seen and pending with a fresh, increasing Seq, in one transaction. It
// returns the accepted requests (Seq set, input order), and among them any
// still-pending URL discovered at a smaller depth than before: that one
// keeps its Seq and now has the smaller depth (see Current for the stale
// copy the caller may still hold). The caller owns the slice. A URL repeated in reqs, or discovered by concurrent calls, is
// accepted exactly once. Requests need a non-empty URL. On error nothing
// was recorded, though in bloom mode the URLs may be treated as seen until
// the next Open: treat errors as fatal to the crawl.
func (s *Store) Discover(ctx context.Context, reqs []frontier.Request) ([]frontier.Request, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	if err := checkRequests(reqs); err != nil {
		return nil, err
	}
	var (
		out  []frontier.Request
		d    deltas
		mine = make(map[dedup.Key]struct{}, len(reqs))
	)
	err := s.batch(func(tx *bolt.Tx) error {
		d = deltas{}
		var err error
		if out, err = s.discoverTx(tx, reqs, mine, &d); err != nil {
			return err
		}
		if err := s.mergeStep(tx, int(d.seen)); err != nil {
			return err
		}
		return d.write(tx.Bucket(bMeta))
	})
	if err != nil {
		return nil, fmt.Errorf("cannot record discovered URLs: %w", err)
	}
	s.apply(d)
	return out, nil
}

// Complete records the end of request r in one transaction: it deletes
// pending[r.Seq], adds one to the counter o.Class (and to PagesStored if
// o.Stored), looks up o.Fingerprint and then o.SimHash (near.go) — or,
// with o.Filed, makes File's filing of the page durable and returns
// o.DuplicateOf and o.Near —, and discovers the discovered requests as Discover does (with Options.Relink: keeps them, and discovers those
// within MaxDepth, shifted shallower if r's URL was lowered meanwhile). If
// r is no longer pending, Complete does nothing and returns an empty
// Result: it is idempotent. It fails if o.Class is empty,
// if pending[r.Seq] holds a different URL than r.URL, or on a storage error
// (then nothing was recorded).
func (s *Store) Complete(ctx context.Context, r frontier.Request, o Outcome, discovered []frontier.Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if o.Class == "" {
		return Result{}, fmt.Errorf("cannot complete %q: empty outcome class", r.URL)
	}
	if o.NearDistance < 0 || o.NearDistance > dedup.MaxNearDistance {
		return Result{}, fmt.Errorf("cannot complete %q: near-duplicate distance %d is outside 0 to %d", r.URL, o.NearDistance, dedup.MaxNearDistance)
	}
	if err := checkRequests(discovered); err != nil {
		return Result{}, err
	}
	owner := o.URL
	if owner == "" {
		owner = r.URL
	}
	if s.opt.SyncCommits && s.opt.Checkpoint != nil {
		// The commit is fsynced: what it completes must be durable first.
		if err := s.opt.Checkpoint(); err != nil {
			return Result{}, fmt.Errorf("cannot complete %q: the crawl's files could not be made durable: %w", r.URL, err)
		}
	}
	var (
		res       Result
		d         deltas
		mine      = make(map[dedup.Key]struct{}, len(discovered))
		completed bool
	)
	err := s.batch(func(tx *bolt.Tx) error {
		res, d, completed = Result{}, deltas{}, false
		pend := tx.Bucket(bPending)
		key := seqKey(r.Seq)
		v := pend.Get(key)
		if v == nil {
			if o.Filed {
				s.filed.dropOnCommit(tx, owner) // nothing to complete: forget its filing
			}
			return nil // already completed
		}
		var stored frontier.Request
		if err := stored.UnmarshalBinary(v); err != nil {
			return fmt.Errorf("pending record %d is damaged: %w", r.Seq, err)
		}
		if stored.URL != r.URL {
			return fmt.Errorf("pending record %d is %q, not %q: the request's Seq does not match its URL", r.Seq, stored.URL, r.URL)
		}
		if err := pend.Delete(key); err != nil {
			return err
		}
		d.pending--
		completed = true
		if err := addInt(tx.Bucket(bCounters), []byte(o.Class), 1); err != nil {
			return err
		}
		if o.Stored {
			d.pages++
		}
		if err := putMax(tx.Bucket(bMeta), mPageEnd, o.PageNext); err != nil {
			return err
		}
		if err := putMax(tx.Bucket(bMeta), mRecEnd, o.RecordsEnd); err != nil {
			return err
		}
		if o.Filed {
			// File judged the page before its record was written: no
			// second decision, its filing becomes durable here.
			res.DuplicateOf, res.Near = o.DuplicateOf, o.Near
			if err := s.fileTx(tx, owner); err != nil {
				return err
			}
		} else if o.Fingerprint != 0 {
			fp := tx.Bucket(bFP)
			fk := binary.BigEndian.AppendUint64(nil, o.Fingerprint)
			switch prev := fp.Get(fk); {
			case prev == nil:
				if err := fp.Put(fk, []byte(owner)); err != nil {
					return err
				}
			case string(prev) != owner && string(prev) != r.URL: // never a duplicate of itself
				res.DuplicateOf = string(prev)
			}
		}
		if !o.Filed && res.DuplicateOf == "" && o.SimHash != 0 && o.NearDistance > 0 {
			dup, err := s.nearTx(tx, o.SimHash, o.NearDistance, owner, r.URL)
			if err != nil {
				return err
			}
			res.DuplicateOf, res.Near = dup, dup != ""
		}
		if err := revisitTx(tx, r, o); err != nil {
			return err
		}
		kids := discovered
		if s.opt.Relink {
			var err error
			if kids, err = s.keepLinksTx(tx, r, kids); err != nil {
				return err
			}
		}
		news, err := s.discoverTx(tx, kids, mine, &d)
		if err != nil {
			return err
		}
		if err := s.mergeStep(tx, int(d.seen)); err != nil {
			return err
		}
		res.New = news
		return d.write(tx.Bucket(bMeta))
	})
	if err != nil {
		return Result{}, fmt.Errorf("cannot complete %q: %w", r.URL, err)
	}
	s.apply(d)
	if completed { // r was pending: the marks were written
		storeMax(&s.pageNext, o.PageNext)
		storeMax(&s.recEnd, o.RecordsEnd)
	}
	return res, nil
}

// keepLinksTx is Complete's part with Relink: if r's URL was lowered since
// r was handed out (its seen depth is below r.Depth), kids are shifted up
// by the difference; they are kept in the links bucket (for a URL deeper
// than 0, the only ones that can be lowered later), and those within
// MaxDepth are returned for discovery.
func (s *Store) keepLinksTx(tx *bolt.Tx, r frontier.Request, kids []frontier.Request) ([]frontier.Request, error) {
	key := dedup.KeyOf(r.URL)
	kb := key.AppendBinary(make([]byte, 0, 16))
	depth := r.Depth
	if e, ok := s.lookup(tx, key, kb); ok && e.hasDepth && e.depth < uint64(depth) {
		depth = int(e.depth)
	}
	kids = frontier.ShiftDepth(kids, r.Depth-depth)
	if depth > 0 && len(kids) > 0 {
		rec, err := encodeLinks(depth, kids)
		if err != nil {
			return nil, err
		}
		if err := tx.Bucket(bLinks).Put(kb, rec); err != nil {
			return nil, err
		}
	}
	return s.admit(kids), nil
}

// UpdatePending overwrites the pending record of r (found by r.Seq) with r,
// e.g. to persist a bumped Attempt so that a retry count survives a restart.
// It returns ErrNotPending if r.Seq is not pending, and an error if the
// pending record holds a different URL.
func (s *Store) UpdatePending(ctx context.Context, r frontier.Request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	enc, err := r.MarshalBinary()
	if err != nil {
		return err
	}
	var found bool
	err = s.batch(func(tx *bolt.Tx) error {
		found = false
		pend := tx.Bucket(bPending)
		key := seqKey(r.Seq)
		v := pend.Get(key)
		if v == nil {
			return nil
		}
		var stored frontier.Request
		if err := stored.UnmarshalBinary(v); err != nil {
			return fmt.Errorf("pending record %d is damaged: %w", r.Seq, err)
		}
		if stored.URL != r.URL {
			return fmt.Errorf("pending record %d is %q, not %q", r.Seq, stored.URL, r.URL)
		}
		found = true
		return pend.Put(key, enc)
	})
	if err != nil {
		return fmt.Errorf("cannot update pending %q: %w", r.URL, err)
	}
	if !found {
		return fmt.Errorf("cannot update %q (seq %d): %w", r.URL, r.Seq, ErrNotPending)
	}
	return nil
}

// loadChunk is how many pending records LoadPending reads per read
// transaction, so a long resume does not pin old pages.
const loadChunk = 4096

// LoadPending calls fn for every pending request in Seq order (the order
// they were accepted), to refill the frontier on resume. It stops at the
// first error of fn or of ctx and returns it (wrapped). fn runs outside any
// transaction, so it may call the Store.
func (s *Store) LoadPending(ctx context.Context, fn func(frontier.Request) error) error {
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch := make([]frontier.Request, 0, loadChunk)
		err := s.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bPending).Cursor()
			var k, v []byte
			if after == nil {
				k, v = c.First()
			} else if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
			for ; k != nil && len(batch) < loadChunk; k, v = c.Next() {
				var r frontier.Request
				if err := r.UnmarshalBinary(v); err != nil {
					return fmt.Errorf("pending record %x is damaged: %w", k, err)
				}
				batch = append(batch, r)
				after = append(after[:0], k...)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("cannot load pending URLs: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			if err := fn(r); err != nil {
				return fmt.Errorf("cannot load pending URL %q: %w", r.URL, err)
			}
		}
	}
}

// Counters returns the outcome counters (class → count). The caller owns
// the map.
func (s *Store) Counters(ctx context.Context) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bCounters).ForEach(func(k, v []byte) error {
			if len(v) == 8 {
				out[string(k)] = int64(binary.BigEndian.Uint64(v))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read counters: %w", err)
	}
	return out, nil
}

// PendingCount returns the number of pending requests.
func (s *Store) PendingCount() int64 { return s.pending.Load() }

// SeenCount returns the number of URLs ever accepted.
func (s *Store) SeenCount() int64 { return s.seen.Load() }

// PagesStored returns how many completed requests had Outcome.Stored.
func (s *Store) PagesStored() int64 { return s.pages.Load() }

// Created returns when the state was first created.
func (s *Store) Created() time.Time { return s.created }

// Dir returns the data directory.
func (s *Store) Dir() string { return s.dir }

func checkMetaKey(key []byte) error {
	if len(key) == 0 {
		return errors.New("cannot use an empty meta key")
	}
	if key[0] == '_' {
		return fmt.Errorf("cannot use meta key %q: keys starting with '_' are reserved for the store", key)
	}
	return nil
}

// Meta returns a copy of the value stored under key by SetMeta, or nil if
// there is none. Keys starting with '_' are reserved and rejected.
func (s *Store) Meta(ctx context.Context, key []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkMetaKey(key); err != nil {
		return nil, err
	}
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bMeta).Get(key); v != nil {
			out = bytes.Clone(v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read meta %q: %w", key, err)
	}
	return out, nil
}

// SetMeta stores value under key (e.g. the crawl's config fingerprint).
// Keys starting with '_' are reserved and rejected.
func (s *Store) SetMeta(ctx context.Context, key, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkMetaKey(key); err != nil {
		return err
	}
	v := bytes.Clone(value)
	if v == nil {
		v = []byte{}
	}
	s.ckpt.RLock()
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Put(key, v) })
	s.ckpt.RUnlock()
	if err != nil {
		return fmt.Errorf("cannot write meta %q: %w", key, err)
	}
	return nil
}

// Sync is a checkpoint: it calls Options.Checkpoint, then forces the
// committed state to stable storage (fsync), with no commit in between.
func (s *Store) Sync() error { return s.checkpoint() }

// checkpoint makes the files the state describes durable (Options.Checkpoint)
// and then the state, holding every commit off meanwhile (see the package
// documentation, "Durability").
func (s *Store) checkpoint() error {
	s.ckpt.Lock()
	defer s.ckpt.Unlock()
	if s.opt.Checkpoint != nil {
		if err := s.opt.Checkpoint(); err != nil {
			return fmt.Errorf("cannot checkpoint the crawl state: the crawl's files could not be made durable, so the state is not fsynced: %w", err)
		}
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("cannot fsync crawl state: %w", err)
	}
	return nil
}

// PageNext returns the largest Outcome.PageNext of every completed URL:
// page numbers below it were issued (0: no page was stored).
func (s *Store) PageNext() int64 { return s.pageNext.Load() }

// RecordsEnd returns the largest Outcome.RecordsEnd of every completed
// URL: the least size of an intact records file (0: unknown).
func (s *Store) RecordsEnd() int64 { return s.recEnd.Load() }

// Close stops the background fsync, fsyncs, saves the Bloom filter snapshot
// (a failure there is only logged: the next Open rebuilds), closes the
// database and removes the pid file. Calls after the first return the first call's result. Other
// methods must not be called after Close.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		var errs []error
		if err := s.checkpoint(); err != nil {
			errs = append(errs, err)
		}
		if err := s.writeSnapshot(); err != nil {
			s.log.Warn("crawl state: cannot save the Bloom filter snapshot; the next Open rebuilds it", "err", err)
		}
		if err := s.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cannot close crawl state: %w", err))
		}
		if err := os.Remove(filepath.Join(s.dir, PIDFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("cannot remove pid file: %w", err))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Marks are the largest Outcome.PageNext and Outcome.RecordsEnd of every
// completed URL (Store.PageNext, Store.RecordsEnd), and how many URLs were
// completed (the sum of the outcome counters).
type Marks struct {
	PageNext   int64
	RecordsEnd int64
	Completed  int64
}

// ReadMarks reads the marks of the state in dir without opening it for
// writing, so that a crawl can check its files against them before it
// opens anything for writing. A missing or empty state file has zero
// marks; a damaged one is an error wrapping ErrDamaged (never a panic).
func ReadMarks(dir string) (m Marks, err error) {
	path := filepath.Join(dir, DBFile)
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && info.Size() == 0 {
		return Marks{}, nil
	}
	if err != nil {
		return Marks{}, fmt.Errorf("cannot read crawl state: %w", err)
	}
	if err := checkBoltSize(path, info.Size()); err != nil {
		return Marks{}, damaged(dir, err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			m, err = Marks{}, damaged(dir, fmt.Errorf("reading it failed: %v", r))
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: DefaultLockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return Marks{}, fmt.Errorf("cannot read crawl state in %s: data directory is in use by another spider process (pid %s); stop it or use another data directory: %w",
			dir, readPID(dir), ErrLocked)
	}
	if err != nil {
		return Marks{}, damaged(dir, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bMeta); meta != nil {
			m = Marks{PageNext: getInt(meta, mPageEnd), RecordsEnd: getInt(meta, mRecEnd)}
		}
		if c := tx.Bucket(bCounters); c != nil {
			return c.ForEach(func(_, v []byte) error {
				if len(v) == 8 {
					m.Completed += int64(binary.BigEndian.Uint64(v))
				}
				return nil
			})
		}
		return nil
	})
	return m, err
}
