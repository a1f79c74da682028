// Package layered is the layered crawl of SPEC §2: a breadth-first crawl
// by rounds, each heavy step a map over domain-hash groups followed by a
// reduce, with two noise-URL passes and a cache-based de-duplication
// between rounds.
//
// # One round (depth r)
//
//	S100  round 0's input is the seeds           DATA/layered/round-000/in.txt
//	S200  map: the input is split by a hash of each URL's registrable
//	      domain (GroupOf) into Options.Groups tasks; each task crawls its
//	      URLs with its own crawl.Fetcher into its own directory
//	      round-RRR/pass-PP/group-GGGG/{pages/,records.jsonl,links.jsonl}
//	S301/S302 (in the same map task) the DOM pass: each HTML page is split
//	      into blocks (parse.Blocks) and the links found only in blocks
//	      whose link-text ratio exceeds Options.NoiseThreshold are noise;
//	      the task's result.json lists, per page, the links kept and removed
//	      reduce: redirect targets of other groups become pass PP+1 of the
//	      same round (same depth); S600: the task's pages and records are
//	      appended to the one page store (DATA/pages, DATA/records.jsonl),
//	      so `spider index` and `spider rank` see them as a plain crawl's
//	S311–S313 map: the distinct links of the round, grouped by the same
//	      hash, are clustered by domain block (package denoise); reduce:
//	      the blocks' results are merged; S314: round-RRR/clean.json
//	S400  reduce: every clean link occurrence goes through the cache of
//	      dedup.Cache (visit list, cache list by weight, then the full
//	      stored URL set DATA/layered/urls.db); new URLs are the next
//	      round's input round-(r+1)/in.txt, depth r+1
//	S500  next round while r+1 < Options.Rounds and there is input
//	S600  the last merge; reports: round-RRR/report.json and report.json
//
// # Why a Fetcher per group task, not an Engine per round
//
// A group task crawls its URLs one request at a time with its own
// crawl.Fetcher, taking the group's hosts in turn, each no sooner than the
// delay (or its Crawl-delay, or a back-off) after its previous request:
// the patent gives a domain's URLs to one node, so the task is the only
// client of its hosts and needs no shared frontier. An Engine per round
// would bring a crawl state whose seen set would refuse the next round's
// URLs, and would crawl past the round. The Fetcher still does robots.txt,
// HTTP, parsing, filters and storage exactly as in a plain crawl.
//
// # Resuming
//
// DATA/layered/manifest.json says which round, pass and phase the crawl is
// in and which tasks' pages are merged. A task that finished has a
// result.json and is not run again; an interrupted task reads its
// links.jsonl (one line per URL finished, written after the page and the
// record) and fetches only the rest. The URLs of a step (a pass's redirect
// targets, a round's new URLs) enter the URL set in one bbolt transaction
// with a marker naming the step, after the step's input file was written,
// so a restart either redoes the step from scratch or takes its output.
// A kill between merging a task's pages and saving the manifest merges that
// task again: its records then appear twice (readers keep the last), as
// after a kill of the plain crawl.
//
// # Revisits
//
// Every fetch is judged by the crawl's revisit policy on the coordinator and
// kept in the revisit schedule of the embedded back-end (DATA/layered/schedule);
// once the rounds are done, revisit rounds fetch the due URLs again as
// KindRevisit tasks (revisit.go), until stopped with crawl.Config.Continuous.
//
// # Distributed form
//
// With Options.Redis the map tasks (fetch and cluster) are leased on Redis
// under {spider:NAME}:layered:* (one hash tag, so Redis Cluster keeps them
// in one slot): the coordinator (the process that created the crawl, or one
// whose data directory holds it; key coord, a lease it renews) RPUSHes
// tasks on todo; every process, the coordinator included, BLMOVEs a task
// into its own processing list proc:W, runs it, and in one MULTI sets
// out:TASK (its output, gzip JSON with the fetched records and bodies),
// removes it from proc:W and RPUSHes its ID on done. Workers heart-beat
// (hb:W with a TTL); the coordinator hands out again the processing list
// of a worker whose heartbeat expired. The coordinator runs every reduce
// and the merge into its own page store, then sets finished.
package layered
