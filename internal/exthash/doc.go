// Package exthash is the cache-based extendible hash table of SPEC §4, on
// disk and crash-safe. spider uses it to keep each topic's task control
// block (internal/topics), so that a restarted crawl resumes the topics'
// slices and counters.
//
// # Structure (SPEC §4 names)
//
//	pseudo-key  = xxhash64(key)                 (a well-mixed string hash; the
//	                                             paper's ASCII formula is lost)
//	directory   = 2^GL bucket numbers            file "directory", pages 2…
//	bucket      = one 4 KiB page: LL, RU, BNP    file "buckets", page = bucket no
//	cache bucket= one page, memory-resident      file "directory", page 1
//	header      = GL, bucket count, records      file "directory", page 0
//
// A bucket of local depth LL is pointed to by the 2^(GL−LL) directory
// entries that share its low LL bits. LG (LL = GL) is derived; BNP is a
// flag in the bucket page saying that the cache bucket holds records of
// this bucket.
//
// Look-up: take the low GL bits of the pseudo-key, read the bucket the
// directory entry points to, search it; if the key is not there and BNP is
// set, search the cache bucket (in memory, no I/O).
//
// Insert: a record goes into its bucket while it fits. When the bucket is
// full and LL < GL (LG = 0), the bucket splits (no directory change but the
// pointers of the half with bit LL set). When LL = GL (LG = 1) a split would
// double the directory: the record goes to the cache bucket instead and the
// bucket's BNP flag is set — the paper's point is to absorb skewed keys
// without doubling. Only when the cache bucket is full too does the
// directory double (GL+1) and the bucket split; records of the split
// buckets move back from the cache bucket where they fit. Buckets never
// merge and the directory never shrinks.
//
// # Crash safety
//
// Every change (Put, Delete, or an Apply batch) is one commit: the images
// of the pages it changed (buckets, header, cache bucket, directory pages)
// are written to the log file "wal" with a checksum and fsynced, then
// written in place and the data files fsynced. Open replays a log whose
// checksum matches (idempotent) and ignores a torn one (its commit never
// touched the data files). So a crash at any point leaves the table as it
// was before or after the interrupted commit. TestCrashAtRandomPoints
// checks this with a file layer that crashes after a random write or sync
// and keeps only a random subset of the unsynced writes, some of them torn.
// Bucket and header pages carry CRC-32C checksums; Open and reads report
// damage as ErrCorrupt.
//
// # Why it backs the topics' task records and not the URL-seen set
//
// The seen set must change in the same transaction as the pending set and
// the counters (internal/state's crash-safety argument); moving it out of
// bbolt would need a two-store commit. Task records are few, small, updated
// on every slice change and read at start-up: a fixed-page hash table with
// one log write per commit fits them, and it is the use SPEC §4 names
// ("looking up task records").
package exthash
