package rstate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
)

// The kept-links record of a fetched URL (the links hash, Options.Relink):
//
//	uvarint depth   the URL's depth now (lowered by relinks)
//	uvarint base    the depth the URL was fetched at: the requests' depths
//	                are relative to it
//	uvarint count, then count × (uvarint length, frontier.Request encoding)
//
// The client encodes the requests (keptRequests) and decodes records
// (decodeKept); the scripts only prepend and rewrite the first uvarint,
// so a relink is one HSET of a record whose tail is unchanged. The format
// is hand-written, not MessagePack or JSON, because the scripts must edit
// its head in place and the request encoding is already binary.

// keptRequests encodes reqs as the tail of a kept-links record
// (frontier.AppendRequests); "" for none.
func keptRequests(reqs []frontier.Request) ([]byte, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	return frontier.AppendRequests(nil, reqs)
}

// decodeKept reads a kept-links record: the URL's depth, the depth its
// requests were found at, and the requests.
func decodeKept(b []byte) (depth, base int, reqs []frontier.Request, err error) {
	var hdr [2]int
	for i := range hdr {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > math.MaxInt32 {
			return 0, 0, nil, errors.New("bad depth")
		}
		hdr[i], b = int(v), b[n:]
	}
	if reqs, err = frontier.DecodeRequests(b); err != nil {
		return 0, 0, nil, err
	}
	return hdr[0], hdr[1], reqs, nil
}

// relinked turns a kept-links record returned by a script into the
// requests to discover again: shifted by base − depth levels shallower
// (frontier.ShiftDepth), those within MaxDepth.
func (s *Store) relinked(rec string) ([]frontier.Request, error) {
	depth, base, reqs, err := decodeKept([]byte(rec))
	if err != nil {
		return nil, fmt.Errorf("kept-links record in %s is damaged: %w", s.keys[kLinks], err)
	}
	return s.admit(frontier.ShiftDepth(reqs, base-depth)), nil
}

// within reports whether r is within Options.MaxDepth (always when it is
// negative, and without Relink, where the caller filters depth).
func (s *Store) within(r frontier.Request) bool {
	return !s.opt.Relink || s.opt.MaxDepth < 0 || r.Depth <= s.opt.MaxDepth
}

// admit returns the requests of reqs within MaxDepth; reqs itself when
// all are.
func (s *Store) admit(reqs []frontier.Request) []frontier.Request {
	for i, r := range reqs {
		if !s.within(r) {
			out := append([]frontier.Request(nil), reqs[:i]...)
			for _, r := range reqs[i+1:] {
				if s.within(r) {
					out = append(out, r)
				}
			}
			return out
		}
	}
	return reqs
}

// Relinks reports whether the store was opened with Options.Relink: its
// Complete then takes discovered requests beyond MaxDepth too, and keeps
// them (crawl.Scheduler passes Visit.Beyond to such a State).
func (s *Store) Relinks() bool { return s.opt.Relink }

// DiscoverRelink is Discover for a caller that routes requests between
// the stores of several buckets itself (a peer-to-peer node). It returns
// what Discover does, accepted; and, with Options.Relink, when a URL of
// this bucket that was already fetched is discovered at a smaller depth
// than it was fetched at, its kept links are not discovered here but
// returned in relink, shifted that much shallower and within MaxDepth,
// for the caller to discover in the store of each one's bucket (this one
// included) with DiscoverRelink again. The recursion ends: every relink
// lowers a URL's depth, which stays ≥ 0. The caller owns both slices.
// Without Relink, relink is empty. Under OneCall, a retry after a lost
// reply returns the first run's accepted and relink: a relink is applied
// once and never lost to a retry.
func (s *Store) DiscoverRelink(ctx context.Context, reqs []frontier.Request) (accepted, relink []frontier.Request, err error) {
	return s.discover(ctx, s.callKeysFor(ctx), reqs)
}

func (s *Store) discover(ctx context.Context, keys []string, reqs []frontier.Request) (accepted, relink []frontier.Request, err error) {
	if err := s.usable(ctx); err != nil {
		return nil, nil, err
	}
	if len(reqs) == 0 {
		return nil, nil, nil
	}
	if err := checkRequests(reqs); err != nil {
		return nil, nil, err
	}
	args := make([]any, 0, 6+len(reqs)*s.groupArgs())
	args = append(args, s.fence, s.mode(), s.k, replyTTLArg, s.relinkArg(), len(reqs))
	args = s.appendGroups(args, reqs)
	v, err := discoverScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return nil, nil, s.fail("cannot record discovered URLs", err)
	}
	if len(v) < 1 {
		return nil, nil, fmt.Errorf("cannot record discovered URLs: empty script reply")
	}
	accepted, relink, err = s.accepted(reqs, v[0], v[1:])
	if err != nil {
		return nil, nil, fmt.Errorf("cannot record discovered URLs: %w", err)
	}
	return accepted, relink, nil
}

func (s *Store) relinkArg() string {
	if s.opt.Relink {
		return "1"
	}
	return "0"
}

// CompleteRelink is Complete for a caller that routes requests between
// the stores of several buckets itself (a peer-to-peer node). keep are all
// the requests r's page discovered, of any bucket and any depth
// (crawl.Visit.Beyond included): with Options.Relink they are kept for
// r's URL (when its depth is ≥ 1), to be discovered again if the URL is
// later found at a smaller depth. local are the ones to discover in this
// store as Complete does (those of this bucket; any beyond MaxDepth are
// left out). If r's URL was lowered while r was in flight (its depth now
// below r.Depth), local is not discovered: relink then holds all of keep
// shifted to the URL's depth and within MaxDepth, for the caller to
// discover in each one's bucket's store (DiscoverRelink); relink also
// holds the kept links of fetched URLs that local lowered (see
// DiscoverRelink). Without Relink, keep is ignored and relink empty. The
// errors and the idempotence are Complete's; under OneCall a retry gets
// the first run's result.
func (s *Store) CompleteRelink(ctx context.Context, r frontier.Request, o crawlstate.Outcome, keep, local []frontier.Request) (res crawlstate.Result, relink []frontier.Request, err error) {
	return s.complete(ctx, s.callKeysFor(ctx), r, o, keep, s.admit(local))
}

// complete runs the complete script with the given KEYS.
func (s *Store) complete(ctx context.Context, keys []string, r frontier.Request, o crawlstate.Outcome, keep, local []frontier.Request) (crawlstate.Result, []frontier.Request, error) {
	if err := s.usable(ctx); err != nil {
		return crawlstate.Result{}, nil, err
	}
	if o.Class == "" {
		return crawlstate.Result{}, nil, fmt.Errorf("cannot complete %q: empty outcome class", r.URL)
	}
	sim, err := simArg(o)
	if err != nil {
		return crawlstate.Result{}, nil, fmt.Errorf("cannot complete %q: %w", r.URL, err)
	}
	if err := checkRequests(local); err != nil {
		return crawlstate.Result{}, nil, err
	}
	var kept []byte
	if s.opt.Relink {
		if err := checkRequests(keep); err != nil {
			return crawlstate.Result{}, nil, err
		}
		var err error
		if kept, err = keptRequests(keep); err != nil {
			return crawlstate.Result{}, nil, fmt.Errorf("cannot complete %q: %w", r.URL, err)
		}
	}
	owner := o.URL
	if owner == "" {
		owner = r.URL
	}
	var fp []byte
	if o.Fingerprint != 0 {
		fp = binary.BigEndian.AppendUint64(nil, o.Fingerprint)
	}
	stored := "0"
	if o.Stored {
		stored = "1"
	}
	fpArg, simArg := fp, sim
	if s.dups != nil || o.Filed {
		// Crawl-wide tables, filed after the script completed the URL
		// (near.go); or, with Filed, judged and filed already by the
		// process that wrote the record (Dupes.File).
		fpArg, simArg = nil, []byte{}
	}
	rv, due, failed, err := revisitArgs(r, o)
	if err != nil {
		return crawlstate.Result{}, nil, fmt.Errorf("cannot complete %q: %w", r.URL, err)
	}
	args := make([]any, 0, 19+len(local)*s.groupArgs())
	args = append(args, s.fence, s.mode(), s.k, replyTTLArg,
		strconv.FormatUint(r.Seq, 10), r.URL, strconv.Itoa(r.Depth), o.Class, stored, fpArg, owner,
		dedup.KeyOf(r.URL).AppendBinary(make([]byte, 0, 16)), s.relinkArg(), kept, len(local), simArg,
		rv, due, failed)
	args = s.appendGroups(args, local)
	v, err := completeScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		if redis.HasErrorPrefix(err, "MISMATCH") {
			return crawlstate.Result{}, nil, fmt.Errorf("cannot complete %q: pending record %d holds another URL: the request's Seq does not match its URL (is it from another bucket?)", r.URL, r.Seq)
		}
		return crawlstate.Result{}, nil, s.fail(fmt.Sprintf("cannot complete %q", r.URL), err)
	}
	if len(v) < 5 {
		return crawlstate.Result{}, nil, fmt.Errorf("cannot complete %q: short script reply", r.URL)
	}
	if done, _ := v[0].(int64); done == 0 {
		return crawlstate.Result{}, nil, nil
	}
	var res crawlstate.Result
	res.DuplicateOf, _ = v[1].(string)
	if near, _ := v[4].(int64); near == 1 {
		res.Near = true
	}
	if o.Filed {
		res.DuplicateOf, res.Near = o.DuplicateOf, o.Near
	} else if s.dups != nil {
		// The URL is completed: a failure here only leaves it out of the
		// tables (a later copy is not found at crawl time).
		s.dupMu.Lock()
		res.DuplicateOf, res.Near, err = s.dups.file(ctx, s.rdb, fp, sim, owner, r.URL)
		s.dupMu.Unlock()
		if err != nil {
			s.log.Warn("crawl state: a completed page is not filed in the crawl's duplicate tables", "url", r.URL, "err", err)
			res.DuplicateOf, res.Near = "", false
		}
	}
	var relink []frontier.Request
	if rec, _ := v[3].(string); rec != "" {
		if relink, err = s.relinked(rec); err != nil {
			return crawlstate.Result{}, nil, fmt.Errorf("cannot complete %q: %w", r.URL, err)
		}
	}
	news, more, err := s.accepted(local, v[2], v[5:])
	if err != nil {
		return crawlstate.Result{}, nil, fmt.Errorf("cannot complete %q: %w", r.URL, err)
	}
	res.New = news
	return res, append(relink, more...), nil
}

// settle discovers relink in this store until no relink is left (the
// single-store case: every bucket's URL belongs here), appending what it
// accepts or lowers to out. Round i of a call under OneCall uses the call
// key suffixed ".i", so a retry of the whole call replays every round.
func (s *Store) settle(ctx context.Context, relink, out []frontier.Request) ([]frontier.Request, error) {
	base, one := ctx.Value(callCtxKey{s}).(string)
	for round := 1; len(relink) > 0; round++ {
		keys := s.callKeys()
		if one {
			keys[kCall] = base + "." + strconv.Itoa(round)
		}
		got, more, err := s.discover(ctx, keys, relink)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		relink = more
	}
	return out, nil
}
