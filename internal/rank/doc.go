// Package rank computes PageRank over a crawl's link graph (package graph)
// and stores the scores under the data directory: SPEC §1 "distributed
// PageRank (MapReduce)", with the damping, dangling-page and convergence
// rules the document leaves open fixed as below.
//
// # Formula
//
// From the uniform vector, every iteration computes
//
//	r'[v] = (1-d)·t[v] + d·(Σ_{u→v} r[u]/out(u) + D/N)
//
// with damping d (0.85 by default), teleport vector t (uniform, or spread
// over a chosen set of pages for the personalised, topic-sensitive variant)
// and D the rank held by dangling pages (no out-links), spread uniformly
// over all N nodes, so the ranks always sum to 1. It stops when the L1
// change Σ|r'-r| falls below the tolerance (1e-10) or after the iteration
// cap (100).
//
// # In memory
//
// Matrix.Compute pulls over the transposed CSR: node v sums the
// contributions of its in-links, sources ascending. Rows are cut into
// contiguous ranges of about equal edge counts, one goroutine each; every
// goroutine writes only its own rows and its own partial sums (dangling
// rank, L1 change), which are added in range order, so there are no atomics
// and the result does not depend on scheduling.
//
// # Map/reduce over Redis
//
// Master.Compute is the document's master: it cuts the sources into
// contiguous parts, uploads each part's out-links once per run, and each
// round uploads each part's rank slice and queues one task per part
// (pipelined). A worker (RunWorker) pops a task with a Lua script that also
// leases it (sorted set, deadline on the Redis clock), computes for every
// target the sum of rank/out-degree over the part's sources (the map step:
// the document's (id, rank) pairs, as sorted (id, sum) pairs plus the part's
// dangling rank), and stores the result with a second script. The master
// sums the results in part order (the reduce step; the order makes the sums
// independent of which worker answered first) and applies the formula
// above, so the two forms agree to rounding (L1 ≈ 1e-15 in the tests). Keys
// are listed on the keys type; all carry the hash tag {spider:NAME}.
//
// Surviving a worker crash: a task is leased, not given away. If its worker
// dies (or stalls) the lease expires after MasterConfig.Lease and the
// master's reaper, run while it waits for results, puts the task back on
// the queue for another worker, which fetches the part's out-links it has
// not cached. Results are stored with HSETNX under (run, round, part): a
// slow original and its replacement produce the same bytes and only the
// first is kept; a result for a round already reduced is dropped, and a
// re-queued task whose result is already in is skipped when claimed. The
// master holds a lock key renewed every third of its TTL, so a second
// master for the same crawl is refused (ErrMasterBusy). A master crash
// leaves the keys to expire (24 h); the next master clears the queues.
// Workers exit when the master marks its session done.
//
// # Files
//
// WriteScores writes DATA/rank/pages.tsv and DATA/rank/hosts.tsv atomically:
// one "<score %.17g>\t<key>" line per page URL or host name, best first
// (ties by key); ReadScores reads them back.
package rank
