package protocol

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/slots"
)

// Parts is the number of parts a node's growing sets are split into: a host's
// finish_URL, task_pool and URL_pool, a center's claims. A URL belongs to part
// PartOf(url). Each part has a Redis Cluster hash tag of its own, and the
// parts' tags are chosen so that their hash slots are spaced evenly over the 16384
// slots (partTag): a node's Redis that is a cluster whose masters own equal slot ranges
// holds an equal share of the parts — 4 of 12 on each of 3 masters, 3 on each of 4,
// 2 on each of 6.
const Parts = 12

// nodeKeys names the Redis keys of one node (a host or a center). Every key starts with
// "spider:proto:CRAWL:{TAG}:", where TAG is the node's address for its core keys (the
// queues, counters and pools that its transactions and scripts change together, so
// they share one slot of a Redis Cluster) and a part tag for its parts. Several nodes
// may share one Redis (or one cluster) in a small set-up, although the document gives
// each its own.
type nodeKeys struct {
	p     string        // core prefix
	parts [Parts]string // part prefixes
}

var keysCache sync.Map // crawl + "\x00" + addr → nodeKeys

func keysFor(crawl, addr string) nodeKeys {
	ck := crawl + "\x00" + addr
	if k, ok := keysCache.Load(ck); ok {
		return k.(nodeKeys)
	}
	k := nodeKeys{p: "spider:proto:" + crawl + ":{" + addr + "}:"}
	for i := range Parts {
		k.parts[i] = "spider:proto:" + crawl + ":{" + partTag(addr, i) + "}:"
	}
	keysCache.Store(ck, k)
	return k
}

// partTag returns the hash tag of part i of the node at addr: "ADDR#I.SALT" with the
// smallest SALT whose slot lies in the middle half of the i-th of Parts equal slot
// ranges. Aiming at the middle keeps a part on its range's master even when the
// ranges' boundaries are a slot or two off (redis-cli --cluster create gives 3
// masters 0–5460, 5461–10922, 10923–16383).
func partTag(addr string, i int) string {
	w := slots.Slots / Parts
	return slots.InRange(i*w+w/4, i*w+3*w/4, func(salt int) string {
		return addr + "#" + strconv.Itoa(i) + "." + strconv.Itoa(salt)
	})
}

// PartOf returns the part (0 to Parts-1) of a URL: its hash's first four hex digits
// modulo Parts.
func PartOf(rawURL string) int { return partOfHash(URLHash(rawURL)) }

func partOfHash(hash string) int {
	v, _ := strconv.ParseUint(hash[:4], 16, 32)
	return int(v % Parts)
}

// Transport lists (every node; core).
func (k nodeKeys) inbox() string      { return k.p + "inbox" }
func (k nodeKeys) inboxProc() string  { return k.p + "inbox:processing" }
func (k nodeKeys) outbox() string     { return k.p + "outbox" }
func (k nodeKeys) outboxSend() string { return k.p + "outbox:sending" }
func (k nodeKeys) received() string   { return k.p + "received" }
func (k nodeKeys) stats() string      { return k.p + "stats" }

// local_Redis (hosts): core.
func (k nodeKeys) seq() string { return k.p + "seq" }

// local_Redis (hosts): part i. finish_URL, task_pool and the leaving mark of a part
// share its slot (acceptLua changes them together), and so do task_pool:processing
// and URL_pool (completeScript); received:i and stats:i count what the part's scripts
// did (added to the core's by ReadHostState).
func (k nodeKeys) finishURL(i int) string { return k.parts[i] + "finish_URL" }
func (k nodeKeys) taskPool(i int) string  { return k.parts[i] + "task_pool" }
func (k nodeKeys) taskProc(i int) string  { return k.parts[i] + "task_pool:processing" }
func (k nodeKeys) urlPool(i int) string   { return k.parts[i] + "URL_pool" }
func (k nodeKeys) leaving(i int) string   { return k.parts[i] + "leaving" }
func (k nodeKeys) partReceived(i int) string {
	return k.parts[i] + "received"
}
func (k nodeKeys) partStats(i int) string { return k.parts[i] + "stats" }

// center_Redis (centers): core.
func (k nodeKeys) taskURL() string         { return k.p + "task_URL" }
func (k nodeKeys) taskURLSend() string     { return k.p + "task_URL:sending" }
func (k nodeKeys) localReducePool() string { return k.p + "local_reduce_pool" }
func (k nodeKeys) distReducePool() string  { return k.p + "dist_reduce_pool" }
func (k nodeKeys) numbers() string         { return k.p + "numbers" }
func (k nodeKeys) registered() string      { return k.p + "registered" }
func (k nodeKeys) left() string            { return k.p + "left" }
func (k nodeKeys) done() string            { return k.p + "done" }

// center_Redis (centers): parts. claims:i holds the claims of the URLs of part i;
// answered:NUMBER (an answer kept an hour for a repeated request) lives in the part of
// its number.
func (k nodeKeys) claims(i int) string { return k.parts[i] + "claims" }
func (k nodeKeys) answered(number string) string {
	return k.parts[slots.CRC16(number)%Parts] + "answered:" + number
}

// checkOldLayout refuses a node's Redis that holds its keys in the layout of spider
// before Redis Cluster support ("spider:proto:CRAWL:ADDR:stats", no braces): they
// would be ignored, and the crawl's state with them.
func checkOldLayout(ctx context.Context, rdb redis.UniversalClient, crawl, addr string) error {
	old := "spider:proto:" + crawl + ":" + addr + ":"
	n, err := rdb.Exists(ctx, old+"stats").Result()
	if err == nil && n == 0 {
		n, err = rdb.Exists(ctx, old+"received").Result()
	}
	if err != nil {
		return fmt.Errorf("cannot read the Redis of %s: %w", addr, err)
	}
	if n > 0 {
		return fmt.Errorf("the Redis of %s holds crawl %q in the key layout of an older spider (%s…): finish that crawl with that version, or remove its keys (spider drop --crawl %s) and start it again", addr, crawl, old, crawl)
	}
	return nil
}

// HostMembersCrawl names the cluster.Membership list of a network's hosts, kept in its center's Redis.
func HostMembersCrawl(crawl, net string) string { return "proto." + crawl + "." + net + ".hosts" }

// CenterMembersCrawl names the cluster.Membership list of live centers, kept in every center's Redis.
func CenterMembersCrawl(crawl string) string { return "proto." + crawl + ".centers" }
