// Package masterworker is the master–worker topology of SPEC §1: one master
// schedules (de-duplication, frontier, politeness across all workers) and
// any number of workers fetch. They talk only through Redis lists used as
// queues, with the roles the document gives them:
//
//	srq  scheduled URLs: the master appends at the tail, workers take from
//	     the head (LMOVE into their own processing list, so a URL a dead
//	     worker took is not lost: the master's reaper puts it back);
//	nrq  newly found data: each worker's result packet (outcome and the
//	     links it found), which the master pops, de-duplicates and
//	     schedules;
//	ans  (beyond the document) a worker's word that a task's answer has
//	     been read, sent before it processes the page: the master ends the
//	     host's turn then, so the host's delay counts from the answer, not
//	     from the result's round trip (answered.go);
//	trq  the shared tag queue: a worker takes a unique work number from it,
//	     so no two workers ever share a processing list. The hash "owners"
//	     keeps each number's holder (a random token per worker process): a
//	     worker declared dead while stalled, whose number another worker has
//	     taken since, finds on its next heartbeat that the number is no longer
//	     its own and takes a new one.
//
// What a real system needs beyond the document: every task carries a lease
// id and the master's epoch (results of a previous master run are
// ignored), workers heart-beat, and the master ends the crawl (key "done")
// when its frontier is drained: nothing queued and no task out.
//
// # Keys on Redis Cluster
//
// The queues and the master's bookkeeping share the hash tag {spider:NAME}
// ({spider:NAME}:mw:*), so every LMOVE, MULTI and script between srq, a
// worker's processing list, nrq and trq stays in one slot. They are few
// keys, and small: srq holds at most the master's --max-inflight tasks.
// What grows with the crawl is spread over Shards hash tags (ShardTag), by
// host: the master's crawl state (one rstate store per part,
// spider:NAME:{mw-I-K}:*) and the shared robots.txt answers
// (spider:NAME:{mw-I-K}:robots:URL, in the part of the robots.txt's host).
package masterworker

import (
	"fmt"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/rstate"
)

// keys names the Redis keys of one master–worker crawl.
type keys struct {
	crawl  string
	prefix string
}

func newKeys(crawl string) keys {
	return keys{crawl: crawl, prefix: cluster.TopologyPrefix(crawl, "mw")}
}

func (k keys) srq() string             { return k.prefix + "srq" }
func (k keys) nrq() string             { return k.prefix + "nrq" }
func (k keys) trq() string             { return k.prefix + "trq" }
func (k keys) trqInit() string         { return k.prefix + "trq-init" }
func (k keys) config() string          { return k.prefix + "config" }
func (k keys) epoch() string           { return k.prefix + "epoch" }
func (k keys) heartbeat() string       { return k.prefix + "heartbeat" }
func (k keys) done() string            { return k.prefix + "done" }
func (k keys) workers() string         { return k.prefix + "workers" }
func (k keys) owners() string          { return k.prefix + "owners" }
func (k keys) processing(w int) string { return fmt.Sprintf("%sproc:%d", k.prefix, w) }
func (k keys) stats() string           { return k.prefix + "stats" }

// The "answered" packets (answered.go): a worker's word that a task's
// answer has been read, so that the master ends the host's turn before the
// result arrives; and the epoch of the master that reads them (a worker
// sends them only for tasks of that epoch, so an older master that never
// pops the list does not let it grow).
func (k keys) ans() string              { return k.prefix + "ans" }
func (k keys) ansEpoch() string         { return k.prefix + "ans-epoch" }
func (k keys) workerStats(w int) string { return fmt.Sprintf("%swstats:%d", k.prefix, w) }

// The per-node keys of a topics crawl (SPEC §4 on a cluster, topics.go).
func (k keys) srqOf(w int) string  { return fmt.Sprintf("%ssrq:%d", k.prefix, w) } // crawl node w's own queue
func (k keys) workerLoads() string { return k.prefix + "wload" }                   // worker number → its NodeLoad JSON

func (k keys) layout() string { return k.prefix + "layout" }
func (k keys) hosts() string  { return k.prefix + "hosts" }

// robots is the key of a shared robots.txt answer: in a state part's tag
// chosen by a hash of the host (robotsShard), so the answers spread too.
func (k keys) robots(robotsURL string) string {
	return rstate.KeyPrefix(k.crawl, shardTags[robotsShard(robotsURL)]) + "robots:" + robotsURL
}

// The keys of a topics crawl (spider master --topics, design §4 on a
// cluster): the coordinator's canonical topics config (JSON), its status
// (JSON TopicStatus, rewritten every daemon tick) and the priority overrides
// (hash topic → priority, written by spider control priority). They share
// the crawl's tag like the queues.
func (k keys) topicsConfig() string   { return k.prefix + "topics:config" }
func (k keys) topicsStatus() string   { return k.prefix + "topics:status" }
func (k keys) topicsPriority() string { return k.prefix + "topics:priority" }
