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
// packages behind them:
//
//   - Searcher (internal/index behind an adapter in cmd/spider): Search
//     and Stats.
//   - CrawlView: a CrawlStatus snapshot. DirView tails a data directory's
//     records.jsonl (read-only, complete lines only, incrementally: a
//     crawl writing it is not disturbed); EngineView adds the queue depths
//     and run state of a crawl in this process (spider crawl --addr);
//     RedisView reads a distributed crawl's nodes, buckets and queues from
//     Redis (masterworker.ReadStatus, p2p.ReadStatus).
//   - Controller: pause, resume, stop, add seeds, topic priority.
//     EngineView implements it over crawl.Engine; without one the control
//     endpoints answer 501.
//
// # Routes
//
//	GET  /                        search page (q, p, signals=1)
//	GET  /dashboard               crawl dashboard
//	GET  /static/…                CSS and JavaScript (embedded)
//	GET  /api/search              hits as JSON (q, offset, limit, rank_weight, explain)
//	GET  /api/index               index statistics
//	GET  /api/crawl               CrawlStatus
//	POST /api/crawl/pause|resume|stop    bearer token
//	POST /api/crawl/seeds         bearer token; {"urls": [...]}
//	PUT  /api/topics/{topic}/priority    bearer token; {"priority": n}
//	GET  /api/openapi.json        OpenAPI 3 description of the above
//	GET  /metrics  /healthz
//
// Both pages update without reloading: the search page re-queries
// /api/search as the query changes; the dashboard polls /api/crawl every
// second and draws pages/s as an SVG chart.
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
