package rstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spider-crawler/spider/internal/cluster/slots"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
)

// Seen modes (Options.SeenMode), the same names as internal/state's.
const (
	SeenExact = crawlstate.SeenExact
	SeenBloom = crawlstate.SeenBloom
)

// Defaults of Options fields left at their zero value.
const (
	// DefaultExpectedURLs sizes one bucket's Bloom filter (3.6 MB at the
	// default rate). A crawl of N URLs over B buckets wants about N/B.
	DefaultExpectedURLs = 1_000_000
	DefaultFPRate       = crawlstate.DefaultFPRate
	DefaultBucket       = "b0"
)

// ReplyTTL is how long the server keeps the reply of a Discover or Complete
// that accepted something, keyed by a per-call id, so that a client retry
// after a lost reply (go-redis retries on a dropped connection) returns the
// first run's reply instead of running the script again and losing what it
// accepted.
const ReplyTTL = 20 * time.Second

// minRedisMajor is the oldest Redis major version the scripts run on
// (the #!lua shebang came with 7.0).
const minRedisMajor = 7

// ErrFenced is wrapped by the errors of writes (and of Open) when the fence
// key does not hold Options.Fence.Value: another node owns the bucket now.
// Nothing was written; stop working on the bucket.
var ErrFenced = errors.New("bucket is fenced: this node no longer owns it")

// ErrClosed is returned by the methods of a closed Store.
var ErrClosed = errors.New("crawl state is closed")

// Fence makes every write conditional on the bucket's lease: the write
// scripts first check that the string at Key equals Value.
type Fence struct {
	// Key is the lease key, e.g. spider:<crawl>:{b<n>}:owner. It must hash
	// to the Store's slot (share its {bucket} tag); Open checks.
	Key string
	// Value is this node's lease value, e.g. "node:token". Required.
	Value string
}

// Options configures Open. Crawl is required; the other fields have
// defaults.
type Options struct {
	// Crawl names the crawl: several crawls share one Redis without touching
	// each other's keys. Required; letters, digits, '.', '_' and '-', at most
	// 64 bytes.
	Crawl string
	// Bucket is the bucket's name and the keys' hash tag (see BucketName).
	// Same alphabet as Crawl. Default DefaultBucket ("b0").
	Bucket string
	// SeenMode is SeenExact (default) or SeenBloom; see the package
	// documentation. A bucket keeps the mode it was created with: opening
	// it with the other mode fails.
	SeenMode string
	// ExpectedURLs sizes the bucket's Bloom filter in bloom mode (default
	// DefaultExpectedURLs). Used only when the bucket is created.
	ExpectedURLs uint64
	// FPRate is the Bloom filter's false-positive rate at ExpectedURLs
	// (default 1e-6). Used only when the bucket is created.
	FPRate float64
	// Fence, when set, fences every write (see Fence and ErrFenced).
	Fence *Fence
	// Logger receives the opening summary and warnings. Nil discards.
	Logger *slog.Logger
	// Relink makes depth exact for crawls whose depth levels overlap (a
	// peer-to-peer crawl, whose nodes' levels overlap; a master under a
	// depth limit without crawl.Config.StrictLevels), as state.Options.Relink does for the
	// embedded store: Complete keeps the requests a URL discovered,
	// including those deeper than MaxDepth (which it does not accept), in
	// the bucket's links hash; when a URL already fetched is discovered
	// again at a smaller depth, its kept requests are discovered again
	// that much shallower (Discover, Complete) or returned for the caller
	// to route (DiscoverRelink, CompleteRelink). A URL is never fetched
	// twice for it. Both seen modes relink: in bloom mode the links record
	// holds a fetched URL's depth (the live hash forgets it). The cost is
	// the kept requests' encodings in Redis, about the out-links of every
	// page fetched at depth ≥ 1 (see the package documentation).
	Relink bool
	// MaxDepth is the largest depth accepted with Relink (negative: no
	// limit). Unused without Relink, where the caller filters depth.
	MaxDepth int
	// DupTags, when set, makes the exact and near-duplicate tables the
	// crawl's instead of the bucket's, spread over these hash tags (see
	// near.go), so that Complete finds the copies of a page on every
	// bucket's hosts. Every Store of a crawl must be given the same tags
	// in the same order (a store without them keeps its own tables and
	// sees none of the others'). Their keys are not in Keys: they are
	// shared by the crawl's buckets. Same alphabet as Bucket.
	DupTags []string
}

// Stats are a bucket's sizes.
type Stats struct {
	Pending     int64 // requests accepted and not completed
	Seen        int64 // requests ever accepted
	PagesStored int64 // completions with Outcome.Stored
	// BloomBits and BloomK are the filter's shape (bloom mode; else 0), and
	// EstimatedFPRate its false-positive rate at Seen URLs.
	BloomBits       uint64
	BloomK          int
	EstimatedFPRate float64
}

// Store is the crawl state of one bucket of one crawl in Redis. Its methods
// are safe for concurrent use, also by Stores of other processes on the same
// bucket (each write is one atomic script). It does not own the client.
type Store struct {
	rdb     redis.UniversalClient
	opt     Options
	log     *slog.Logger
	addr    string
	prefix  string
	keys    []string // KEYS of the scripts, kCall's entry a placeholder
	fence   string   // fence value, "" for none
	bloom   bool
	m       uint64
	k       int
	created time.Time
	dups    *dupTables // crawl-wide duplicate tables (Options.DupTags), nil for the bucket's own
	dupMu   sync.Mutex // one filing in dups at a time (near.go)

	callID string // random prefix of this Store's call ids
	calls  atomic.Uint64
	closed atomic.Bool
}

// BucketName returns the name of logical bucket n, "b<n>": the hash tag of
// the cluster's lease keys spider:<crawl>:{b<n>}:owner.
func BucketName(n int) string { return "b" + strconv.Itoa(n) }

// KeyPrefix returns the prefix of every key of a crawl's bucket,
// "spider:<crawl>:{<bucket>}:".
func KeyPrefix(crawl, bucket string) string {
	return "spider:" + crawl + ":{" + bucket + "}:"
}

func checkName(what, s string) error {
	if s == "" || len(s) > 64 {
		return fmt.Errorf("cannot open crawl state on Redis: %s %q must be 1 to 64 bytes", what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("cannot open crawl state on Redis: %s %q may hold only letters, digits, '.', '_' and '-'", what, s)
		}
	}
	return nil
}

func (o *Options) setDefaults() error {
	if err := checkName("crawl name", o.Crawl); err != nil {
		return err
	}
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if err := checkName("bucket", o.Bucket); err != nil {
		return err
	}
	switch o.SeenMode {
	case "":
		o.SeenMode = SeenExact
	case SeenExact, SeenBloom:
	default:
		return fmt.Errorf("cannot open crawl state on Redis: SeenMode %q, want %q or %q", o.SeenMode, SeenExact, SeenBloom)
	}
	if o.ExpectedURLs == 0 {
		o.ExpectedURLs = DefaultExpectedURLs
	}
	if o.FPRate == 0 {
		o.FPRate = DefaultFPRate
	}
	if !(o.FPRate > 0 && o.FPRate < 1) {
		return fmt.Errorf("cannot open crawl state on Redis: FPRate %v, want a probability in (0, 1)", o.FPRate)
	}
	if f := o.Fence; f != nil {
		if f.Key == "" || f.Value == "" {
			return errors.New("cannot open crawl state on Redis: Fence needs a Key and a Value")
		}
		if slots.KeySlot(f.Key) != slots.KeySlot(KeyPrefix(o.Crawl, o.Bucket)) {
			return fmt.Errorf("cannot open crawl state on Redis: fence key %q is not in the bucket's hash slot; give it the tag {%s}", f.Key, o.Bucket)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, t := range o.DupTags {
		if err := checkName("duplicate tables' tag", t); err != nil {
			return err
		}
	}
	return nil
}

// Open opens the state of bucket opt.Bucket of crawl opt.Crawl on the Redis
// behind client, creating it if it is new. It checks that Redis answers
// and is version 7 or later, that the bucket was created with the same
// SeenMode, and, with a Fence, that this node holds the bucket (else the
// error wraps ErrFenced). The client stays the caller's: Close does not
// close it.
func Open(ctx context.Context, client redis.UniversalClient, opt Options) (*Store, error) {
	if err := opt.setDefaults(); err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	s := &Store{
		rdb:    client,
		opt:    opt,
		log:    opt.Logger,
		addr:   addrOf(client),
		prefix: KeyPrefix(opt.Crawl, opt.Bucket),
		bloom:  opt.SeenMode == SeenBloom,
		callID: hex.EncodeToString(id[:]),
	}
	s.dups = newDupTables(opt.Crawl, opt.DupTags)
	s.keys = make([]string, numKeys)
	for i, name := range [numKeys]string{kMeta: "meta", kPending: "pending", kSeq: "seq", kSeen: "seen",
		kBloom: "bloom", kLive: "live", kCounters: "counters", kFP: "fp", kFence: "meta", kCall: "meta", kLinks: "links", kSim: "sim",
		kRv: "rv", kDue: "due", kFailed: "failed"} {
		s.keys[i] = s.prefix + name
	}
	if opt.Fence != nil {
		s.keys[kFence], s.fence = opt.Fence.Key, opt.Fence.Value
	}
	if _, ok := serversChecked.Load(s.addr); !ok || s.addr == unknownAddr {
		if err := client.Ping(ctx).Err(); err != nil {
			return nil, s.fail("cannot open crawl state on Redis", err)
		}
		if err := s.checkVersion(ctx); err != nil {
			return nil, err
		}
		serversChecked.Store(s.addr, true)
	}
	var m uint64
	var k int
	if s.bloom {
		var err error
		if m, k, err = bloomShape(opt.ExpectedURLs, opt.FPRate); err != nil {
			return nil, err
		}
	}
	v, err := initScript.Run(ctx, client, s.keys, s.fence, opt.SeenMode, m, k, time.Now().UTC().Format(time.RFC3339Nano)).Slice()
	if err != nil {
		return nil, s.fail(fmt.Sprintf("cannot open crawl state %s on Redis", s.prefix), err)
	}
	if err := s.loadMeta(v); err != nil {
		return nil, fmt.Errorf("cannot open crawl state %s on Redis: %w", s.prefix, err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		return nil, err
	}
	s.log.Info("crawl state opened on Redis", "addr", s.addr, "keys", s.prefix+"*", "mode", opt.SeenMode,
		"seen", st.Seen, "pending", st.Pending, "bloom_bits", s.m, "bloom_k", s.k)
	if s.bloom && st.EstimatedFPRate > 2*opt.FPRate {
		s.log.Warn("crawl state: the bucket's Bloom filter is fuller than planned; new URLs are lost more often",
			"keys", s.prefix+"*", "seen", st.Seen, "fp_rate", st.EstimatedFPRate)
	}
	return s, nil
}

// serversChecked holds the addresses (addrOf) whose server this process
// has already reached and found recent enough: a p2p node opens a store
// for each of thousands of buckets, and the PING and INFO of each were two
// of its round trips (the init script fails as clearly on a server gone
// since).
var serversChecked sync.Map

// checkVersion fails unless the server is Redis 7 or later.
func (s *Store) checkVersion(ctx context.Context) error {
	info, err := s.rdb.Info(ctx, "server").Result()
	if err != nil {
		return s.fail("cannot read the Redis server version", err)
	}
	for _, line := range strings.Split(info, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !ok {
			continue
		}
		major, _, _ := strings.Cut(v, ".")
		if n, err := strconv.Atoi(major); err == nil && n < minRedisMajor {
			return fmt.Errorf("cannot open crawl state on Redis at %s: server version %s, need %d.0 or later", s.addr, v, minRedisMajor)
		}
		return nil
	}
	return nil
}

// loadMeta reads the init script's reply: mode, bloom_m, bloom_k, created.
func (s *Store) loadMeta(v []any) error {
	str := func(i int) string {
		if i < len(v) {
			if x, ok := v[i].(string); ok {
				return x
			}
		}
		return ""
	}
	if mode := str(0); mode != s.opt.SeenMode {
		return fmt.Errorf("the bucket was created in %q seen mode; open it with SeenMode %q or use another crawl name", mode, mode)
	}
	created, err := time.Parse(time.RFC3339Nano, str(3))
	if err != nil {
		return fmt.Errorf("bad creation time %q in %smeta: %w", str(3), s.prefix, err)
	}
	s.created = created
	if !s.bloom {
		return nil
	}
	m, err1 := strconv.ParseUint(str(1), 10, 64)
	k, err2 := strconv.Atoi(str(2))
	if err1 != nil || err2 != nil || m == 0 || m%64 != 0 || m > MaxBloomBits || k < 1 || k > 64 {
		return fmt.Errorf("bad Bloom filter shape m=%q k=%q in %smeta", str(1), str(2), s.prefix)
	}
	s.m, s.k = m, k
	return nil
}

// addrOf names the server(s) behind c for error messages.
func addrOf(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	case *redis.Ring:
		var addrs []string
		for _, a := range c.Options().Addrs {
			addrs = append(addrs, a)
		}
		slices.Sort(addrs)
		return strings.Join(addrs, ",")
	}
	return unknownAddr
}

// unknownAddr is addrOf's answer for a client type it does not know.
const unknownAddr = "the configured address"

// isConnErr reports whether err means the server could not be reached.
func isConnErr(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// fail wraps a Redis error with what was being done and what to do.
func (s *Store) fail(what string, err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", what, err)
	case redis.HasErrorPrefix(err, "FENCED"):
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "ERR "), "FENCED ")
		return fmt.Errorf("%s: %s, not %q (%s): %w", what, msg, s.fence, s.keys[kFence], ErrFenced)
	case isConnErr(err):
		return fmt.Errorf("%s: cannot reach Redis at %s: is redis-server running? (spider crawl --redis URL): %w", what, s.addr, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// usable checks ctx and that s is open.
func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// callKeys returns the scripts' KEYS with a fresh reply-cache key.
func (s *Store) callKeys() []string {
	keys := slices.Clone(s.keys)
	keys[kCall] = s.newCallKey()
	return keys
}

func (s *Store) newCallKey() string {
	return s.prefix + "call:" + s.callID + "-" + strconv.FormatUint(s.calls.Add(1), 36)
}

// callCtxKey carries a reply-cache key chosen by OneCall.
type callCtxKey struct{ s *Store }

// OneCall returns a context under which every Discover or Complete of s
// uses one reply-cache key: a caller that retries a call after a lost
// reply (Redis restarted between running the script and answering) passes
// the same context each time and gets the first run's reply, for up to
// ReplyTTL, instead of a second run that finds its URLs already accepted
// and returns nothing.
func (s *Store) OneCall(ctx context.Context) context.Context {
	return context.WithValue(ctx, callCtxKey{s}, s.newCallKey())
}

// callKeysFor is callKeys, honouring OneCall.
func (s *Store) callKeysFor(ctx context.Context) []string {
	if k, ok := ctx.Value(callCtxKey{s}).(string); ok {
		keys := slices.Clone(s.keys)
		keys[kCall] = k
		return keys
	}
	return s.callKeys()
}

func checkRequests(reqs []frontier.Request) error {
	for _, r := range reqs {
		if r.URL == "" {
			return errors.New("cannot discover a request with an empty URL")
		}
	}
	return nil
}

// uvarintLen and varintLen are the sizes of binary.AppendUvarint and
// binary.AppendVarint.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func varintLen(v int) int {
	x := uint64(v) << 1
	if v < 0 {
		x = ^x
	}
	return uvarintLen(x)
}

// appendGroups appends the script arguments of reqs (see discover in
// luaLib): the URL key, the record with Seq 0 split around the Seq byte,
// the depth, the encoded Depth+Priority and Redirects, and in bloom mode
// the k bit positions.
func (s *Store) appendGroups(args []any, reqs []frontier.Request) []any {
	for _, r := range reqs {
		key := dedup.KeyOf(r.URL)
		r.Seq = 0
		enc, _ := r.MarshalBinary()
		ds := 1 + uvarintLen(uint64(len(r.URL))) + len(r.URL) + uvarintLen(uint64(len(r.Key))) + len(r.Key)
		ss := ds + varintLen(r.Depth) + varintLen(r.Priority)
		rs := ss + 1 + varintLen(r.Attempt)
		ts := rs + varintLen(r.Redirects)
		args = append(args, key.AppendBinary(make([]byte, 0, 16)), enc[:ss], enc[ss+1:], strconv.Itoa(r.Depth), enc[ds:ss], enc[rs:ts])
		if s.bloom {
			args = appendBitArgs(args, key, s.m, s.k)
		}
	}
	return args
}

// groupArgs is how many arguments appendGroups adds per request.
func (s *Store) groupArgs() int { return 6 + s.k }

// accepted turns the script's per-request items into the accepted
// requests: 0 is skipped, a number is the Seq of a new request, a string the
// lowered pending record; a one-element array is a fetched URL's kept-links
// record after a relink, whose requests (shifted, within MaxDepth) go to
// relink.
func (s *Store) accepted(reqs []frontier.Request, damaged any, items []any) (out, relink []frontier.Request, err error) {
	if len(items) != len(reqs) {
		return nil, nil, fmt.Errorf("unexpected script reply: %d items for %d requests", len(items), len(reqs))
	}
	if n, _ := damaged.(int64); n > 0 {
		s.log.Warn("crawl state: pending records that cannot be decoded were not lowered", "keys", s.prefix+"pending", "count", n)
	}
	for i, it := range items {
		switch x := it.(type) {
		case int64:
			if x == 0 {
				continue
			}
			r := reqs[i]
			r.Seq = uint64(x)
			out = append(out, r)
		case string:
			var r frontier.Request
			if err := r.UnmarshalBinary([]byte(x)); err != nil {
				return nil, nil, fmt.Errorf("lowered pending record of %q: %w", reqs[i].URL, err)
			}
			out = append(out, r)
		case []any:
			rec, ok := any(nil), false
			if len(x) == 1 {
				rec, ok = x[0], true
			}
			str, isStr := rec.(string)
			if !ok || !isStr {
				return nil, nil, fmt.Errorf("unexpected relink item for %q", reqs[i].URL)
			}
			more, err := s.relinked(str)
			if err != nil {
				return nil, nil, err
			}
			relink = append(relink, more...)
		default:
			return nil, nil, fmt.Errorf("unexpected script reply item %T", it)
		}
	}
	return out, relink, nil
}

func (s *Store) mode() string { return s.opt.SeenMode }

var replyTTLArg = strconv.Itoa(int(ReplyTTL / time.Second))

// Discover accepts the requests whose URL was never seen in this bucket:
// each is recorded as seen and pending with a fresh, increasing Seq, in one
// atomic script call. It returns the accepted requests (Seq set, input
// order), and among them any still-pending URL discovered at a smaller
// depth than before: that one keeps its Seq and now has the smaller depth,
// priority and redirect count (see Current for the stale copy the caller may
// still hold). The caller owns the slice. A URL repeated in reqs, or
// discovered by concurrent calls of any process, is accepted exactly once.
// Requests need a non-empty URL. With Options.Relink, a fetched URL
// discovered at a smaller depth than it was fetched at has its kept links
// discovered again that much shallower, in further script calls (see
// DiscoverRelink), and what they accept or lower is returned too. On error
// nothing was recorded, except when the reply was lost in transit (a
// connection error): then the call may have been applied; LoadPending
// finds what it accepted (a relink's later calls may then be missing).
func (s *Store) Discover(ctx context.Context, reqs []frontier.Request) ([]frontier.Request, error) {
	out, relink, err := s.DiscoverRelink(ctx, reqs)
	if err != nil {
		return nil, err
	}
	return s.settle(ctx, relink, out)
}

// Complete records the end of request r in one atomic script call: it
// deletes pending[r.Seq], adds one to the counter o.Class (and to
// PagesStored if o.Stored), looks up o.Fingerprint (recording o.URL, or
// r.URL, as its owner when new), then o.SimHash in the near-duplicate
// tables (near.go) — with o.Filed neither: the page was judged and filed
// by the process that wrote its record (Dupes.File), and Result.DuplicateOf
// and Near are o's —, and discovers the discovered requests as
// Discover does, however many. With Options.Relink it keeps them all (for
// a URL of depth ≥ 1) and discovers those within MaxDepth, shifted
// shallower if r's URL was lowered meanwhile (see CompleteRelink; the
// relinks are then further script calls, as at Discover). A copy of r
// fetched before its URL was lowered to a smaller depth still completes
// it. If r is no longer pending, Complete does nothing and returns an
// empty Result: it is idempotent. It fails if o.Class is empty,
// if a discovered request has no URL, if pending[r.Seq] holds another URL
// than r.URL, with ErrFenced when the bucket's lease is lost, or on a Redis
// error (then nothing was recorded, except as noted at Discover).
func (s *Store) Complete(ctx context.Context, r frontier.Request, o crawlstate.Outcome, discovered []frontier.Request) (crawlstate.Result, error) {
	res, relink, err := s.CompleteRelink(ctx, r, o, discovered, discovered)
	if err != nil {
		return crawlstate.Result{}, err
	}
	if res.New, err = s.settle(ctx, relink, res.New); err != nil {
		return crawlstate.Result{}, fmt.Errorf("cannot complete %q: %w", r.URL, err)
	}
	return res, nil
}

// UpdatePending overwrites the pending record of r (found by r.Seq) with r,
// e.g. to persist a bumped Attempt so that a retry count survives a
// restart. It returns an error wrapping crawlstate.ErrNotPending if r.Seq is not
// pending, an error if the pending record holds a different URL, and
// ErrFenced when the bucket's lease is lost. It is idempotent.
func (s *Store) UpdatePending(ctx context.Context, r frontier.Request) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	enc, err := r.MarshalBinary()
	if err != nil {
		return err
	}
	n, err := updateScript.Run(ctx, s.rdb, s.keys, s.fence, strconv.FormatUint(r.Seq, 10), r.URL, enc).Int64()
	if err != nil {
		if redis.HasErrorPrefix(err, "MISMATCH") {
			return fmt.Errorf("cannot update pending %q: pending record %d holds another URL", r.URL, r.Seq)
		}
		return s.fail(fmt.Sprintf("cannot update pending %q", r.URL), err)
	}
	if n == 0 {
		return fmt.Errorf("cannot update %q (seq %d): %w", r.URL, r.Seq, crawlstate.ErrNotPending)
	}
	return nil
}

// Current reports whether r is the live copy of a pending URL: pending under
// r.Seq at r.Depth. A copy whose URL was since lowered to a smaller depth,
// or that is no longer pending, is stale and should be dropped unfetched.
func (s *Store) Current(ctx context.Context, r frontier.Request) (bool, error) {
	if err := s.usable(ctx); err != nil {
		return false, err
	}
	enc, err := s.rdb.HGet(ctx, s.keys[kPending], strconv.FormatUint(r.Seq, 10)).Bytes()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, s.fail(fmt.Sprintf("cannot read pending %q", r.URL), err)
	}
	var p frontier.Request
	if err := p.UnmarshalBinary(enc); err != nil {
		return false, fmt.Errorf("cannot read pending %q: pending record %d is damaged: %w", r.URL, r.Seq, err)
	}
	return p.URL == r.URL && p.Depth == r.Depth, nil
}

// scanCount is the COUNT hint of LoadPending's HSCAN calls.
const scanCount = 1000

// LoadPending calls fn for every pending request of the bucket in Seq order
// (the order they were accepted), to refill the frontier on resume or when
// this node takes the bucket over. It reads the whole pending hash (HSCAN)
// into memory first, then sorts it: see the package documentation for the
// memory this takes. Writes made while it scans may or may not be seen. It
// stops at the first error of fn or of ctx and returns it (wrapped). fn runs
// after the reads, so it may call the Store.
func (s *Store) LoadPending(ctx context.Context, fn func(frontier.Request) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	var all []frontier.Request
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, s.keys[kPending], cursor, "", scanCount).Result()
		if err != nil {
			return s.fail("cannot load pending URLs", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			var r frontier.Request
			if err := r.UnmarshalBinary([]byte(kv[i+1])); err != nil {
				return fmt.Errorf("cannot load pending URLs: pending record %s is damaged: %w", kv[i], err)
			}
			all = append(all, r)
		}
		if cursor = next; cursor == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	slices.SortFunc(all, func(a, b frontier.Request) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	// HSCAN may return an element more than once.
	all = slices.CompactFunc(all, func(a, b frontier.Request) bool { return a.Seq == b.Seq })
	for _, r := range all {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return fmt.Errorf("cannot load pending URL %q: %w", r.URL, err)
		}
	}
	return nil
}

// Counters returns the bucket's outcome counters (class → count). The
// caller owns the map.
func (s *Store) Counters(ctx context.Context) (map[string]int64, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	m, err := s.rdb.HGetAll(ctx, s.keys[kCounters]).Result()
	if err != nil {
		return nil, s.fail("cannot read counters", err)
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cannot read counters: %s[%q] = %q is not a number", s.keys[kCounters], k, v)
		}
		out[k] = n
	}
	return out, nil
}

// Stats returns the bucket's sizes, read in one round trip.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	if err := s.usable(ctx); err != nil {
		return Stats{}, err
	}
	var (
		hlen *redis.IntCmd
		meta *redis.SliceCmd
	)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		hlen = p.HLen(ctx, s.keys[kPending])
		meta = p.HMGet(ctx, s.keys[kMeta], "seen", "pages")
		return nil
	})
	if err != nil {
		return Stats{}, s.fail("cannot read crawl state sizes", err)
	}
	st := Stats{Pending: hlen.Val(), BloomBits: s.m, BloomK: s.k}
	for i, dst := range []*int64{&st.Seen, &st.PagesStored} {
		if x, ok := meta.Val()[i].(string); ok {
			if *dst, err = strconv.ParseInt(x, 10, 64); err != nil {
				return Stats{}, fmt.Errorf("cannot read crawl state sizes: bad count %q in %s", x, s.keys[kMeta])
			}
		}
	}
	if s.bloom {
		st.EstimatedFPRate = estimatedFPRate(s.m, s.k, st.Seen)
	}
	return st, nil
}

// Keys returns the names of every key the Store writes, besides the
// short-lived reply keys (<prefix>call:<id>, see ReplyTTL): all share the
// bucket's hash tag. The caller owns the slice.
func (s *Store) Keys() []string {
	return []string{s.keys[kMeta], s.keys[kPending], s.keys[kSeq], s.keys[kSeen], s.keys[kBloom],
		s.keys[kLive], s.keys[kCounters], s.keys[kFP], s.keys[kLinks], s.keys[kSim],
		s.keys[kRv], s.keys[kDue], s.keys[kFailed]}
}

// Prefix returns the common prefix of the Store's keys (KeyPrefix).
func (s *Store) Prefix() string { return s.prefix }

// Created returns when the bucket's state was first created.
func (s *Store) Created() time.Time { return s.created }

// Sync returns nil at once: a write is in Redis when its call returns, and
// its durability is the server's persistence setting (see the package
// documentation: appendonly yes with appendfsync everysec).
func (s *Store) Sync() error { return nil }

// Close marks the Store closed; later calls of its methods return
// ErrClosed. It does not close the Redis client, which the caller owns.
// Calling it again returns nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
