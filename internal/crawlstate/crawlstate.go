// Package crawlstate is the contract between the crawl engine and its
// durable state: the State interface, what a completion records (Outcome)
// and returns (Result), and the errors and modes both back-ends share.
//
// Two packages implement it and import only it (never each other): state,
// the embedded back-end on bbolt, and rstate, the distributed one on Redis.
// The contract tests in state/statetest run one test body against both.
// Requests travel as frontier.Request, whose binary encoding
// (frontier.Request.MarshalBinary, frontier.EncodeRequests) both back-ends
// store.
package crawlstate

import (
	"context"
	"errors"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
)

// State is the crawl's durable state as the scheduling role uses it. Its
// methods are safe for concurrent use. A URL is, for the state, unseen,
// pending (accepted, not yet completed, under a sequence number Seq), or
// completed; a completed URL is never accepted again.
type State interface {
	// Discover accepts the requests whose URL was never seen: each is
	// recorded as seen and pending under a fresh, increasing Seq, atomically
	// for the whole call. It returns the accepted requests (Seq set, input
	// order; the caller owns the slice), and among them any still-pending
	// URL discovered at a smaller depth than before: that one keeps its Seq
	// and now has the smaller depth (see Current). A URL repeated in reqs,
	// or discovered by concurrent calls, is accepted exactly once. Requests
	// need a non-empty URL. On error nothing was recorded, though with
	// SeenBloom the URLs may be treated as seen until the state is opened
	// again: treat errors as fatal to the crawl.
	Discover(ctx context.Context, reqs []frontier.Request) ([]frontier.Request, error)

	// Complete records the end of request r atomically: r stops being
	// pending, the counter o.Class grows by one, o.Fingerprint is looked up
	// (Result.DuplicateOf) and recorded, then, when the fingerprint is new
	// and o.NearDistance > 0, o.SimHash is looked up in the near-duplicate
	// tables (Result.DuplicateOf with Result.Near) and, if no page is near,
	// filed there under the owner; and discovered is accepted as Discover
	// does (Result.New). All of it is one atomic step: the tables never
	// hold a URL that is not completed, nor miss one that is. With
	// o.Filed the lookup was made before (a Filer, by the process that
	// wrote the page's record): Complete looks nothing up, returns
	// o.DuplicateOf and o.Near as the Result's, and the back-end makes the
	// filing its own (see Filer). If r is no longer pending, Complete does
	// nothing and returns an empty Result: it is idempotent, so a
	// completion that may have been lost can be sent again. It fails if
	// o.Class is empty, if the pending record under r.Seq holds another URL
	// than r.URL, or on a storage error (then nothing was recorded).
	Complete(ctx context.Context, r frontier.Request, o Outcome, discovered []frontier.Request) (Result, error)

	// UpdatePending overwrites the pending record of r (found by r.Seq)
	// with r, e.g. to keep a bumped Attempt across a restart. It returns an
	// error wrapping ErrNotPending if r.Seq is not pending, and another
	// error if the pending record holds a different URL.
	UpdatePending(ctx context.Context, r frontier.Request) error

	// Current reports whether r is the live copy of a pending URL: pending
	// under r.Seq at r.Depth. A copy whose URL was since lowered to a
	// smaller depth, or that is no longer pending, is stale: the caller
	// drops it unfetched.
	Current(ctx context.Context, r frontier.Request) (bool, error)

	// LoadPending calls fn for every pending request in Seq order (the
	// order they were accepted), to refill the frontier on resume. It stops
	// at the first error of fn or of ctx and returns it (wrapped). fn may
	// call the State.
	LoadPending(ctx context.Context, fn func(frontier.Request) error) error

	// Counters returns the outcome counters (Outcome.Class → count). The
	// caller owns the map.
	Counters(ctx context.Context) (map[string]int64, error)

	// Sync makes everything recorded so far durable before it returns
	// (a checkpoint: fsync for the embedded back-end; Redis's own
	// persistence settings decide for the distributed one).
	Sync() error

	// Close releases the state after making it durable as Sync does.
	// Calls after the first return the first call's result; other methods
	// must not be called after Close.
	Close() error
}

// Outcome is how a fetch ended, recorded by State.Complete.
type Outcome struct {
	// Class is the counter to increment, e.g. "200", "404", "30x",
	// "too-many-redirects", "timeout", "robots", "error". Required.
	Class string
	// Fingerprint is the page's content fingerprint (dedup.Fingerprint);
	// 0 means none.
	Fingerprint uint64
	// URL is recorded as the owner of Fingerprint and SimHash; empty
	// means the request's URL.
	URL string
	// SimHash is the page's near-duplicate hash (dedup.PageSimHash); 0
	// means none (no page, or too little text to judge).
	SimHash uint64
	// NearDistance is the Hamming distance within which SimHash makes a
	// near-duplicate, 1 to dedup.MaxNearDistance; 0 switches the lookup
	// off. The tables are laid out per distance (dedup.SimTables): pages
	// completed under another distance are not found.
	NearDistance int
	// Stored reports that the page was written to the page store; the
	// embedded back-end counts it in its PagesStored.
	Stored bool
	// PageNext is the page store's next page number once this URL's page
	// was stored (its page number + 1; 0: none). The embedded back-end
	// keeps the largest, so that after a loss of pages a crawl continues
	// numbering after every page a completed URL points at.
	PageNext int64
	// RecordsEnd is the size of the records file just after this URL's
	// record was appended (0: unknown). The embedded back-end keeps the
	// largest: a records file shorter than that lost records of completed
	// URLs.
	RecordsEnd int64

	// Schedule is the URL's revisit schedule entry after this fetch
	// (package revisit's Entry encoding, opaque to the state). Non-empty:
	// Complete keeps a revisit record for the URL (the request as
	// completed, Seq and Attempt cleared, with Schedule set), replacing any
	// earlier one. Empty: any revisit record of the URL is removed (the URL
	// is done for good), unless Failed: a failure without a schedule keeps
	// a record (the request, Schedule empty) so that RetryFailed can make
	// it due.
	Schedule string
	// Due is when the URL is to be fetched again (a revisit, or a retry of
	// a failure); zero: not scheduled (its record, if any, is kept but
	// never made pending by TakeDue).
	Due time.Time
	// Failed marks the fetch as failed: RetryFailed makes the URL due
	// again. A later Complete without it clears the mark.
	Failed bool

	// Filed reports that the page's content was already judged (and, if
	// new, filed) by a Filer before its record was written: Complete then
	// makes no duplicate decision of its own and returns DuplicateOf and
	// Near as the Result's, so that the record, the counters and the logs
	// tell one story. Without Filed, Complete looks Fingerprint and
	// SimHash up itself, as described on State.Complete.
	Filed bool
	// DuplicateOf and Near are the Filer's decision (with Filed only):
	// the earlier page this one copies ("" for an original) and whether it
	// was found by SimHash.
	DuplicateOf string
	Near        bool
}

// Filer judges a page's content before its record is written: the
// decision that Outcome.Filed hands to Complete. The embedded state
// (internal/state Store) and the Redis duplicate tables (internal/rstate
// Dupes, Store with Options.DupTags) implement it.
type Filer interface {
	// File looks the page url up by its text's fingerprint fp and SimHash
	// sim (0: none) within k bits (0: exact only) and returns the earlier
	// page it copies: an exact duplicate (same fingerprint, another URL),
	// else with near the page whose SimHash is the nearest within k; ""
	// when the page is new, and then it is filed, so that a later copy
	// names it (also while its Complete has not run yet). A page is never
	// a duplicate of itself: entries of url (a refetch, a revisit) are
	// skipped, and when one is the nearest nothing is filed. It fails when
	// k is outside 0 to dedup.MaxNearDistance or the storage fails.
	File(ctx context.Context, url string, fp, sim uint64, k int) (dup string, near bool, err error)
}

// Result is what State.Complete returns.
type Result struct {
	// New holds the discovered requests that were accepted (not seen
	// before), with their Seq set, in input order. The caller owns it.
	New []frontier.Request
	// DuplicateOf is the URL of an earlier page with the same fingerprint,
	// or, with Near, of the nearest earlier page (ties: the first table
	// and key order) whose SimHash is within Outcome.NearDistance; "" when
	// the content is new (or no fingerprint or SimHash was given). Only
	// pages that were neither are filed in the near-duplicate tables, so
	// DuplicateOf names the first page of a cluster, or an exact copy's
	// owner.
	DuplicateOf string
	// Near reports that DuplicateOf was found by SimHash (the fingerprint
	// differs).
	Near bool
}

// Revisits is the revisit schedule both back-ends keep beside the State
// (same methods, same contract tests): the records Complete writes from
// Outcome.Schedule/Due/Failed, and the due index over them. A URL with a
// revisit record is still completed for Discover (never accepted again);
// it becomes pending only through TakeDue.
//
// A revisit's Complete obeys one more rule: a page is never a duplicate of
// itself. When the fingerprint or SimHash lookup finds the request's own
// URL (or Outcome.URL) as the owner, DuplicateOf stays empty and nothing is
// filed again.
type Revisits interface {
	// TakeDue makes up to max URLs whose Due is at or before now pending
	// again, earliest Due first, atomically for the whole call: each
	// leaves the due index and is pending under a fresh Seq (returned set),
	// with its revisit record's request (Depth, Topic, Kind, Schedule as
	// last completed; Attempt 0). A URL still pending is skipped. A crash
	// after TakeDue leaves each URL either due or pending, never neither.
	TakeDue(ctx context.Context, now time.Time, max int) ([]frontier.Request, error)

	// NextDue reports the earliest Due in the index; ok is false when no
	// URL is scheduled.
	NextDue(ctx context.Context) (next time.Time, ok bool, err error)

	// RetryFailed sets Due to now for every URL whose last Complete had
	// Outcome.Failed, and returns how many.
	RetryFailed(ctx context.Context, now time.Time) (int, error)

	// Scheduled reports how many URLs have a revisit record and how many
	// of those are in the due index.
	Scheduled(ctx context.Context) (records, due int64, err error)
}

// Rescheduler moves the revisit records of URLs already completed, outside
// any completion: a sitemap's <lastmod> for a URL already seen (whose
// Discover drops it) brings its next fetch forward. Both back-ends
// implement it beside Revisits (same contract tests).
type Rescheduler interface {
	// Reschedule calls fn for each URL of urls that has a revisit record
	// with a non-empty Schedule and is not pending (a URL TakeDue made
	// pending is being fetched: its Complete schedules it), with the
	// record's request (Schedule as last completed; Seq 0) and its
	// current Due (zero: none). When fn returns ok, the record's Schedule
	// becomes schedule and its Due due (zero: out of the due index); its
	// failed mark is kept. A URL with no record, listed twice (the first
	// wins), or whose record changed between the read and the write (a
	// Complete or TakeDue meanwhile: the write is skipped, never lost
	// over theirs) is left alone. fn must be a pure function of its
	// arguments: a back-end may call it more than once for a URL (a
	// transaction retried). It returns how many records changed, and
	// fails on a storage error (the records of one bucket, or the whole
	// call for the embedded back-end, are written atomically: on error
	// some buckets may be written and others not).
	Reschedule(ctx context.Context, urls []string, fn RescheduleFunc) (int, error)

	// ScheduleCounts reads the revisit schedule's figures at now (for
	// spider status and the dashboard).
	ScheduleCounts(ctx context.Context, now time.Time) (ScheduleCounts, error)
}

// RescheduleFunc decides a record's new Schedule and Due (Rescheduler).
type RescheduleFunc func(rec frontier.Request, due time.Time) (schedule string, newDue time.Time, ok bool)

// ScheduleCounts are the revisit schedule's figures an operator reads.
type ScheduleCounts struct {
	// Records are the URLs with a revisit record (pages to revisit,
	// failures to retry); Due of them are in the due index, Overdue of
	// those due at or before now (waiting for the frontier's share);
	// Failed are marked failed (their last fetch failed: retried on
	// their back-off, or by --retry-failed).
	Records, Due, Overdue, Failed int64
	// Next is the earliest Due (zero: none).
	Next time.Time
}

// ErrNotPending is wrapped by State.UpdatePending when the request is not
// (or no longer) pending.
var ErrNotPending = errors.New("request is not pending")

// Seen modes: how a back-end decides whether a URL was seen.
const (
	// SeenExact confirms Bloom filter positives against the stored set:
	// no URL is lost.
	SeenExact = "exact"
	// SeenBloom lets the filter alone decide: a new URL is wrongly taken
	// as seen with the filter's false-positive rate.
	SeenBloom = "bloom"
)

// DefaultFPRate is the Bloom filter's false-positive rate when none is
// given.
const DefaultFPRate = 1e-6
