// Package partition maps hosts to logical buckets and buckets to crawl nodes (SPEC §3,
// §4 "two-level logical URL mapping").
//
// Level 1: Bucket(host, M) = xxhash64(host) mod M, with M ≫ the number of nodes
// (DefaultBuckets = 4096). All URLs of a host share a bucket, so politeness and
// de-duplication for a host live on one node (SPEC §2 S200).
//
// Level 2: a Ring maps buckets to nodes by consistent hashing with weighted virtual nodes
// (SPEC §3): member m with weight w owns w·K points on a 64-bit circle (K =
// DefaultPointsPerWeight unless set), point i of member "id" at xxhash64("id#i"); bucket
// b sits at xxhash64(b as 8 little-endian bytes) and belongs to the member of the first
// point clockwise. The ring gives the document's three properties:
//
//   - consistency: the table is a pure function of the member list (order and duplicates
//     of the input do not matter; members are sorted by ID), so every node that sees the
//     same list computes the same table;
//   - monotonicity: adding a member moves only buckets to it, removing one moves only its
//     buckets; no other bucket changes hands;
//   - balance: a member's expected share of buckets is its weight over the total weight.
//
// How close the observed share comes to the expected one has two limits. The ring's own
// (arc lengths) shrinks as 1/√(w·K): K = 128 keeps it near 1% for a weight of 40. The
// other is the granularity of M buckets: each bucket lands on one member, so a member of
// share p owns about Binomial(M, p) buckets, a relative spread of √((1−p)/(M·p)): 5.1%
// for p = 40/470 at M = 4096, whatever K is. Ring.Balanced removes that second limit by
// capping every member's bucket count near its quota (consistent hashing with bounded
// loads), at the price of moving a few more buckets than the minimum on a change; the
// tests measure both tables.
package partition

// LoadSpread says how evenly the two-level mapping (host → bucket → node)
// spreads the work of a peer-to-peer crawl: for each node, its share of the
// crawl's fetched pages (and of its queued URLs) against its share of the
// weights; MaxDev is the largest relative deviation over the nodes (0.05 =
// one node is 5% off its weight's share).
type LoadSpread struct {
	FetchedMaxDev float64 `json:"fetched_max_dev"`
	QueueMaxDev   float64 `json:"queue_max_dev"`
}
