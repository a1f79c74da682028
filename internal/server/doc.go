// Package server is spider's HTTP front: the search page, the crawl
// dashboard, a JSON API for both plus crawl control, /metrics and /healthz.
// It serves SPEC §1's last step ("the index answers keyword queries;
// PageRank orders results") to people, and shows a crawl's progress the
// way SPEC §3 reports it (the HTTP result table, per-node rates, queue
// depths).
//
// # What it reads
//
// The server depends on three small interfaces, declared here, not on the
// packages behind them; it links no Redis client and no distributed
// topology (internal/archtest enforces it):
//
//   - Searcher (internal/index behind an adapter in cmd/spider): Search
//     and Stats.
//   - CrawlView: a CrawlStatus snapshot. DirView tails a data directory's
//     records.jsonl (read-only, complete lines only, incrementally: a
//     crawl writing it is not disturbed) and counts outcomes, the host
//     table (the MaxHostRows hosts with the most pages: pages, errors, mean
//     latency) and the failed URLs by class (crawl.FailureClass, the CLI's
//     classes and hints); EngineView adds the queue depths, run state and
//     configuration of a crawl in this process (spider crawl --addr) and
//     each listed host's politeness clock (crawl.Scheduler.HostStates:
//     next allowed fetch, in flight, queued). The view of a distributed
//     crawl, read from Redis (its nodes, buckets, queues, crawl-wide report
//     and a master's published rules), is package redisview's View. Both
//     show a topic-focused crawl's topics (topics.go): EngineView from an
//     engine that is a TopicEngine, redisview.View from the coordinator's
//     topics.ClusterStatus, with each crawl node's load.
//   - Controller: pause, resume, stop, add seeds, topic priority.
//     EngineView implements it over crawl.Engine, redisview.View over the
//     crawl's control word and (topic priority) masterworker's overrides;
//     without one the control endpoints answer 501.
//
// # Routes
//
//	GET  /                        search page (q, p, signals=1); ETag, 304
//	GET  /dashboard               crawl dashboard
//	GET  /static/…                CSS and JavaScript (embedded; uPlot vendored in static/vendor/uplot)
//	GET  /api/search              hits as JSON (q, offset, limit, rank_weight, explain); ETag, 304
//	GET  /api/index               index statistics
//	GET  /api/crawl               CrawlStatus
//	POST /api/crawl/pause|resume|stop    bearer token
//	POST /api/crawl/seeds         bearer token; {"urls": [...]}
//	PUT  /api/topics/{topic}/priority    bearer token; {"priority": 0..9}
//	GET  /api/openapi.json        OpenAPI 3 description of the above
//	GET  /metrics  /healthz
//
// Both pages update without reloading: the search page re-queries
// /api/search as the query changes; the dashboard polls /api/crawl every
// second and draws pages/s as an SVG chart.
//
// # Cost per request
//
// Issue 10 asks for a search page p99 under 50 ms at 100 concurrent
// clients. What a search costs is the index's (internal/index: 1–10 ms of
// CPU for a miss on 100,000 pages); the server keeps the rest small and
// avoids repeating it:
//
//   - Response cache: the rendered bytes of every 200 answer of the search
//     page and /api/search, keyed by the normalised request (the query
//     trimmed, runs of white space made one space; page, signals; offset,
//     limit, rank_weight, explain). A hit is a map look-up and a write: no
//     search, no html/template, no JSON encoding. What is stored is the
//     answer as a hit shows it ("cached", no time in the index); the
//     first answer shows the search time and is rendered twice.
//   - Result cache: the SearchResult behind the page and the API (shared by
//     both), with singleflight, so that concurrent identical misses run
//     one search.
//   - Both are LRUs bounded in entries (Options.CacheSize) and the
//     response cache in bytes (Options.CacheBytes); both are emptied as
//     soon as the Searcher's Stats change (a new segment, a merge, an
//     incremental build), and an entry is served at most CacheTTL
//     (a new PageRank file, which Stats do not show).
//   - ETag (weak, xxhash of the body) with "Cache-Control: no-cache": a
//     browser revalidates and gets 304 without a body while the answer did
//     not change. Errors are never cached ("no-store").
//   - A bound on index searches running at once (Options.MaxSearches,
//     default 2×GOMAXPROCS): searches are CPU-bound, so more at once only
//     slow each other, and cache hits would queue behind them for the CPU.
//   - Counters: spider_search_cache_requests_total{cache="page"|"api"|
//     "result", result="hit"|"miss"}; the request counter's common label
//     set is resolved once per route. No per-request log line.
//
// bench/serveload measures all this against the real binary.
//
// # Safety
//
// Pages are html/template files parsed once from the embedded FS (never
// built by concatenation), so every crawled text — titles, snippets, URLs
// — is escaped, and a javascript: URL becomes "#ZgotmplZ". The JavaScript
// inserts crawled text with textContent only. Every answer carries a
// Content-Security-Policy that allows only this server's own script and
// style files (no inline script or style), X-Content-Type-Options: nosniff
// and frame-ancestors 'none'. Control endpoints need "Authorization:
// Bearer TOKEN"; the token is compared as SHA-256 digests in constant
// time and never logged. Without a configured token control is refused
// (403). Inputs are bounded (query length, offset, limit, body size,
// number of seeds) and a wrong one gets a 400 saying what to send.
package server
