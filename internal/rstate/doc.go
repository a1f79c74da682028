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
//	spider:<crawl>:{<bucket>}:sim      HASH    near-duplicate tables: dedup.SimTables key
//	                                           (10 bytes) → the pages filed under it, each
//	                                           its SimHash (8 bytes), URL length (2 bytes),
//	                                           URL; at most 16 KiB per key (near.go).
//	                                           With Options.DupTags these two stay empty:
//	spider:<crawl>:{<tag>}:dupfp       HASH    the crawl's fingerprints, spread over the
//	                                           tags by value (as fp)
//	spider:<crawl>:{<tag>}:dupsim      HASH    the crawl's near-duplicate tables, each
//	                                           table key under the tag of its FNV-1a hash
//	                                           (as sim); filed after the completion, or
//	                                           before the record by Dupes.File (then
//	                                           Complete has Outcome.Filed)
//	spider:<crawl>:{<bucket>}:call:<id> STRING the reply of one Discover or Complete call
//	                                           that accepted something (MessagePack), kept
//	                                           for ReplyTTL so that a client retry after a
//	                                           lost reply gets it instead of a second run
//	spider:<crawl>:{<bucket>}:links    HASH    with Options.Relink: dedup.KeyOf(URL) of a
//	                                           URL fetched at depth ≥ 1 → its kept-links
//	                                           record: uvarint depth now, uvarint depth it
//	                                           was fetched at, then its discovered requests
//	                                           (count, length-prefixed encodings; links.go)
//	spider:<crawl>:{<bucket>}:rv       HASH    dedup.KeyOf(URL) → its revisit record: the request
//	                                           as last completed with its Schedule (Seq: the
//	                                           one TakeDue made it pending under; revisit.go)
//	spider:<crawl>:{<bucket>}:due      ZSET    dedup.KeyOf(URL) by Due (Unix ms): TakeDue's index
//	spider:<crawl>:{<bucket>}:failed   SET     dedup.KeyOf(URL) whose last completion failed
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
// # Relinking (exact depth limits when levels overlap)
//
// With a depth limit, a URL must be fetched at its shortest link depth for
// the limit to keep exactly the pages a level-by-level crawl fetches. In
// a peer-to-peer crawl the nodes' levels overlap (each node's too, unless
// --strict-levels), and a master lets them overlap on purpose (the
// default; not with --strict-levels): a URL may be fetched at depth 4 before its depth-3 path is
// known. Options.Relink fixes that as state.Options.Relink does for the
// embedded store. Complete keeps the page's discovered requests, those one
// level beyond MaxDepth too (crawl.Visit.Beyond), in the links hash (for
// a URL of depth ≥ 1: a seed cannot be lowered), and discovers only those
// within MaxDepth. When a URL already fetched is discovered again at a
// smaller depth, the script lowers its record's depth (and in exact mode
// its seen entry) and replies with the record; the client shifts the kept
// requests that much shallower and discovers those within MaxDepth again:
// links now within the limit are accepted, pending ones lowered, fetched
// ones relinked in turn. The recursion ends because every step lowers a
// depth, which stays ≥ 0. A URL lowered while it was being fetched (its
// seen depth is below the completing request's) completes with its links
// shifted the same way. No URL is fetched twice for it.
//
// The relinked requests may belong to other buckets (the kept links are
// all of the page's), so the scripts never discover them themselves:
// DiscoverRelink and CompleteRelink return them for the caller to route
// (a peer-to-peer node sends other buckets' to their owners like any
// link), and Discover and Complete, for a single store (spider master),
// discover them in the same store, round after round. That also keeps
// bloom mode working: the Bloom bit positions are computed by the client
// (Lua has no 64-bit arithmetic), and in bloom mode the live hash forgets
// a URL once fetched, so the links record holds a fetched URL's depth.
//
// Each relink round is its own atomic script call. A round's reply is
// cached under its call key like any reply that changed something (a
// relink lowers a record), and under OneCall round i uses the call key
// suffixed ".i", so a retry after a lost reply gets every round's first
// reply: a relink is neither applied twice nor lost to the retry. A
// client that dies between a round and the next loses that round's
// shifted links (the lowered record stays lowered), as it loses the
// other-bucket links of a completion not yet dispatched; the pages are
// then missing from the crawl, never fetched twice.
//
// The cost in Redis is the kept records, about the out-links of every page
// fetched at depth ≥ 1 (BenchmarkRelinkMemory measures it per page), and
// one more HGET of the links hash per Bloom positive not in live in bloom
// mode.
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
