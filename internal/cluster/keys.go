package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spider-crawler/spider/internal/cluster/slots"
)

// The Redis key scheme of a crawl. Every key of crawl C starts with "spider:C:", so that
// several crawls share one Redis without touching each other (and "spider:C:*" finds all
// of one crawl's keys). Keys that one Lua script updates together share a Redis Cluster
// hash tag (the part in braces), so they live in one slot:
//
//	spider:C:{C.m}:members    sorted set: member ID → deadline (Redis server ms) of its
//	                          last heartbeat; a member past its deadline is expired
//	spider:C:{C.m}:info       hash: member ID → JSON record (weight, address, meta, load)
//	spider:C:{C.m}:epoch      string: member-list epoch, raised on every join, leave,
//	                          expiry or weight change
//	spider:C:{C.m}:events     pub/sub channel: the new epoch, published on every change
//	spider:C:{bN}:owner       string "NODE:TOKEN" with a TTL: the lease of bucket N
//	spider:C:{bN}:fence       string: the last fencing token issued for bucket N
//	spider:C:{bN}:NAME        the bucket's own data (pending URLs, seen filter, counters),
//	                          named by the crawl engine with Keys.Bucket(N, NAME)
//
// Membership keys carry the crawl in their tag ({C.m}) so that the membership of
// different crawls lands in different slots; a bucket's keys carry only the bucket ({bN})
// so that the buckets of a crawl spread over every master of a cluster.
//
// The topologies that coordinate through queues name their keys with the functions
// below, so that the hash tags are chosen here:
//
//	{spider:C}:KIND:NAME      TopologyPrefix: a topology's queues and bookkeeping, in one
//	                          slot (KIND mw, layered, rank, index), so one script or MULTI
//	                          may touch any of them
//	spider:C:{TAG}:NAME       SpreadPrefix: the large per-part data, under one of the n
//	                          tags of SpreadTags, spread evenly over a cluster's masters
//	spider:C:{C.p2p}:NAME     SpreadPrefix(C, C+".p2p"): the p2p queues

// ErrBadName is returned for a crawl name or node ID that cannot be used in keys.
var ErrBadName = errors.New("bad name")

// MaxNameLen bounds crawl names and node IDs.
const MaxNameLen = 128

// Keys names every Redis key of one crawl. The zero value is not usable; build it with
// NewKeys.
type Keys struct {
	crawl string
	base  string // "spider:C:"
	mtag  string // "spider:C:{C.m}:"
}

// NewKeys returns the key scheme of crawl. A crawl name is 1–128 characters from
// [A-Za-z0-9._-]; anything else returns an error wrapping ErrBadName.
func NewKeys(crawl string) (Keys, error) {
	if err := checkCrawl(crawl); err != nil {
		return Keys{}, err
	}
	base := "spider:" + crawl + ":"
	return Keys{crawl: crawl, base: base, mtag: base + "{" + crawl + ".m}:"}, nil
}

func checkCrawl(crawl string) error {
	if crawl == "" || len(crawl) > MaxNameLen {
		return fmt.Errorf("cannot use crawl name %q: %w: want 1–%d characters", crawl, ErrBadName, MaxNameLen)
	}
	for i := 0; i < len(crawl); i++ {
		c := crawl[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("cannot use crawl name %q: %w: only letters, digits, '.', '_' and '-' are allowed", crawl, ErrBadName)
		}
	}
	return nil
}

// CheckNodeID reports whether id can name a member: 1–128 bytes of printable ASCII other
// than space and the braces (which would change a key's hash tag). Errors wrap ErrBadName.
func CheckNodeID(id string) error {
	if id == "" || len(id) > MaxNameLen {
		return fmt.Errorf("cannot use node ID %q: %w: want 1–%d characters", id, ErrBadName, MaxNameLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || c == '{' || c == '}' {
			return fmt.Errorf("cannot use node ID %q: %w: only printable ASCII without spaces or braces", id, ErrBadName)
		}
	}
	return nil
}

// TopologyPrefix returns "{spider:C}:KIND:", the prefix of topology KIND's queues and
// bookkeeping for crawl C (KIND: mw, layered, rank, index). The tag {spider:C} keeps them
// in one Redis Cluster slot. It does not check crawl (CheckName or NewKeys do).
func TopologyPrefix(crawl, kind string) string { return "{spider:" + crawl + "}:" + kind + ":" }

// SpreadPrefix returns "spider:C:{TAG}:", the prefix of crawl C's keys under hash tag
// tag (one of SpreadTags, or another tag of the crawl's own). It does not check crawl.
func SpreadPrefix(crawl, tag string) string { return "spider:" + crawl + ":{" + tag + "}:" }

// SpreadTags returns the n hash tags slots.SpreadTag(prefix, i, n), i = 0…n-1: tag i's
// slot lies in the i-th of n equal slot ranges, so keys spread over the n tags land
// evenly on a cluster whose masters hold equal ranges. The same arguments always give
// the same tags (they are part of the key names).
func SpreadTags(prefix string, n int) []string {
	t := make([]string, n)
	for i := range t {
		t[i] = slots.SpreadTag(prefix, i, n)
	}
	return t
}

// Crawl returns the crawl name.
func (k Keys) Crawl() string { return k.crawl }

// Prefix returns "spider:C:", the prefix of every key of the crawl.
func (k Keys) Prefix() string { return k.base }

// Members returns the sorted set of live members (ID → heartbeat deadline in ms).
func (k Keys) Members() string { return k.mtag + "members" }

// Info returns the hash of member records (ID → JSON).
func (k Keys) Info() string { return k.mtag + "info" }

// Epoch returns the key of the member-list epoch.
func (k Keys) Epoch() string { return k.mtag + "epoch" }

// Events returns the pub/sub channel on which every member-list change publishes the new
// epoch.
func (k Keys) Events() string { return k.mtag + "events" }

// BucketTag returns bucket n's hash tag, "{bN}".
func BucketTag(n int) string { return "{b" + strconv.Itoa(n) + "}" }

// Bucket returns the key NAME of bucket n, "spider:C:{bN}:NAME". All keys of a bucket share
// its hash tag, so one Lua script may update them together in Redis Cluster.
func (k Keys) Bucket(n int, name string) string {
	return k.base + BucketTag(n) + ":" + name
}

// Owner returns the lease key of bucket n, "spider:C:{bN}:owner".
func (k Keys) Owner(n int) string { return k.Bucket(n, "owner") }

// Fence returns the fencing-token counter of bucket n, "spider:C:{bN}:fence".
func (k Keys) Fence(n int) string { return k.Bucket(n, "fence") }

// OwnerValue is the value of a held lease key: "NODE:TOKEN".
func OwnerValue(node string, token int64) string {
	return node + ":" + strconv.FormatInt(token, 10)
}

// ParseOwnerValue splits a lease value "NODE:TOKEN" at its last colon (node IDs may
// contain colons, tokens do not). It fails on a value without a colon, an empty node or
// a token that is not a positive decimal integer.
func ParseOwnerValue(v string) (node string, token int64, err error) {
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("cannot parse lease value %q: want NODE:TOKEN", v)
	}
	token, err = strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil || token <= 0 || strconv.FormatInt(token, 10) != v[i+1:] {
		return "", 0, fmt.Errorf("cannot parse lease value %q: the token is not a positive decimal integer", v)
	}
	return v[:i], token, nil
}
