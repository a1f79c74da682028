// Package rstate is the crawl state on Redis: the same contract as the
// embedded store of internal/state (see its Store and the contract suite
// internal/state/statetest), for crawls whose nodes share one Redis or one
// Redis Cluster. A Store is the state of one bucket of one crawl; a node
// opens one Store per bucket it owns.
//
// Every write (Discover, Complete, UpdatePending and the initialisation in
// Open) is one Lua script call, cached on the server and sent with EVALSHA,
// so it is atomic: a URL is accepted exactly once even when several nodes
// discover it at the same moment, and a completed URL is deleted from the
// pending set in the same step that counts its outcome and accepts its
// links, however many (a Complete with 200 links is still one call). Reads
// (Current, LoadPending, Counters, Stats) are plain commands.
//
// # Key layout
//
// All keys of one Store share the Redis Cluster hash tag {<bucket>}, so every
// script touches a single slot and runs unchanged on Redis Cluster:
//
//	key                               type    content
//	spider:<crawl>:{<bucket>}:meta     HASH    mode ("exact"|"bloom"), created (RFC 3339),
//	                                           bloom_m, bloom_k (filter shape, fixed at
//	                                           creation), seen (URLs ever accepted),
//	                                           pages (completions with Outcome.Stored)
//	spider:<crawl>:{<bucket>}:pending  HASH    Seq (decimal) → frontier.Request binary encoding
//	spider:<crawl>:{<bucket>}:seq      STRING  INCR counter: the last Seq handed out
//	spider:<crawl>:{<bucket>}:seen     HASH    exact mode: dedup.KeyOf(URL), 16 bytes →
//	                                           "seq,depth" (depth: smallest it was found at)
//	spider:<crawl>:{<bucket>}:bloom    STRING  bloom mode: Bloom filter bits (SETBIT/GETBIT
//	                                           through BITFIELD)
//	spider:<crawl>:{<bucket>}:live     HASH    bloom mode: dedup.KeyOf(URL) → "seq,depth" for
//	                                           pending URLs only (deleted by Complete)
//	spider:<crawl>:{<bucket>}:counters HASH    outcome class → count
//	spider:<crawl>:{<bucket>}:fp       HASH    fingerprint, 8 bytes big endian → URL of the
//	                                           first page with it
//	spider:<crawl>:{<bucket>}:call:<id> STRING the reply of one Discover or Complete call
//	                                           that accepted something (MessagePack), kept
//	                                           for ReplyTTL so that a client retry after a
//	                                           lost reply gets it instead of a second run
//
// The lease code of the cluster writes spider:<crawl>:{b<n>}:owner; a Store
// opened with Options.Fence checks that key at the start of every write
// script. BucketName(n) gives the tag "b<n>" that matches it.
//
// Seqs are unique and increasing within one Store (one bucket of one crawl);
// two buckets hand out the same Seqs, so a request must go back to the
// Store of its own bucket.
//
// # Seen modes
//
// Exact mode keeps every accepted URL's 16-byte key in the seen hash: no
// URL is ever lost, at the cost of about 95 bytes of Redis memory per seen
// URL, plus about 145 bytes per pending URL of 55 bytes (BenchmarkMemory).
// Bloom mode keeps a Bloom filter in a Redis string instead: m bits and k
// hash functions sized from ExpectedURLs and FPRate (about 29 bits, 3.6
// bytes, per URL at 1e-6; 7.5 bytes per seen URL measured with the rest of
// the bucket's keys, and about 230 bytes per pending URL), the k bit
// positions computed by the client from dedup.KeyOf as internal/dedup does
// (Kirsch–Mitzenmacher double hashing); a new URL is wrongly taken as seen
// with probability about FPRate. Bloom mode costs CPU on the server: a
// known URL is k GETBIT calls (k = 20 at 1e-6) where exact mode makes one
// HGET, so its scripts run 3 to 5 times longer. Redis strings hold at most 2^32 bits, so
// one bucket's filter is at most 512 MiB; Open refuses a larger one. The
// filter's shape is fixed when the bucket is created: reopening with other
// ExpectedURLs or FPRate keeps the stored shape. Open allocates the whole
// filter when it creates the bucket (so a Redis short of memory fails
// there, not mid-crawl).
//
// Depth lowering (a still-pending URL discovered again at a smaller depth
// takes that depth, keeping its Seq; see state.Store.Discover) needs the
// URL's Seq and depth: exact mode reads them from the seen hash, bloom mode
// from the live hash, which holds only pending URLs, so bloom mode's memory
// grows with the pending set, not with the seen set. Unlike the embedded
// store, bloom mode lowers plain links as well as redirect targets (the
// live hash is in memory, so the check is cheap): the behaviour is the
// exact mode's.
//
// # Durability
//
// Sync is a no-op: persistence is the Redis server's. Run redis-server with
// the append-only file on (appendonly yes) and appendfsync everysec: a
// restarted server then replays every acknowledged write except at most the
// last second's (appendfsync always loses none, at a cost in throughput).
// Without persistence a Redis restart loses the crawl. The tests restart
// Redis with the AOF on and check that the crawl goes on.
//
// # Memory on the client
//
// LoadPending reads the bucket's whole pending hash (HSCAN) into memory and
// sorts it by Seq before calling fn: about the encoded size of each request
// plus 100 bytes. For a bucket with tens of millions of pending URLs that is
// gigabytes; split such a crawl into more buckets.
//
// Scripts use the Redis 7 shebang (#!lua), so Open requires Redis 7.0 or
// later.
package rstate
