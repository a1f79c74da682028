// Package frontier is the crawler's in-memory URL frontier: the structure
// that decides which URL is fetched next, so that the crawl follows URL
// priorities and is polite to every server (SPEC §3, "Mercator frontier").
//
// # Structure
//
//	      Push(r)
//	         │
//	┌────────▼────────┐ prioritizer: r.Priority → front queue min(p, F-1)
//	│ F front queues  │ FIFO each; beyond MemoryBudget, per-queue FIFO
//	│ 0 (high) … F-1  │ spill files on disk (read back in FIFO order)
//	└────────┬────────┘
//	         │ router: draws front queues by smooth weighted round robin
//	         │ (weight of queue i = Weights[i], default F-i), appends the
//	         │ URL to the back queue of its key, creating one if the key
//	         │ has none and fewer than B back queues exist
//	┌────────▼────────┐
//	│ ≤ B back queues │ one key (host:port or IP) per back queue, FIFO;
//	│ key → queue map │ table key → back queue
//	└────────┬────────┘
//	         │ min-heap over back queues keyed by the earliest time the key
//	         │ may start its next request (ties: higher priority at the
//	         │ queue head, then older queue)
//	┌────────▼────────┐
//	│ Next (selector) │ takes the heap top when its time ≤ now and its key
//	└─────────────────┘ holds fewer than PerKey leases; else waits
//
// The heap holds only back queues that have URLs and a free lease slot, so
// its top is always the next URL that may be started.
//
// # Selector
//
// With Config.Selector set, Next offers the Selector every back queue whose
// key may start a request now (at most MaxCandidates, visited from the heap
// top) and leases the head of the one it chooses; politeness is unchanged
// because only ready keys are offered. The multi-topic scheduler
// (internal/topics) is such a Selector. PushUrgent puts URLs at the head of
// their keys' back queues (a topic's hub revisits). The frontier counts the
// URLs of each Request.Topic in memory for the Selector (TopicQueued).
// A Selector that is also an Admitter may hold ready keys back (Admit):
// when it admits none, Next leases nothing and waits for Wake, a lease's
// end, a push or the next key's time, instead of spinning.
//
// # Why B is bounded
//
// A back queue is created on demand for a key when the router meets the key
// and at most Config.BackQueues (B, default 1024) back queues exist; it is
// freed when it is empty and its key has no lease out. URLs of keys without
// a back queue wait in the front queues. This is Mercator's design and is
// what makes priorities work across hosts: when a back queue frees, the
// router refills from the front queues in priority-weighted order, so
// high-priority URLs get their hosts scheduled first, while the weighting
// keeps low priorities from starving. With an unbounded B every URL would be
// routed at once and priorities would only order URLs inside a host.
// Mercator recommends B ≈ 3× the number of workers as a minimum; the default
// is larger because a politeness delay of about 1 s lets each host take one
// request per second, so B also caps the crawl rate at about B / Delay.
// When fewer keys than B have URLs, every URL is routed at once and a key's
// URLs are fetched in the order they were routed.
//
// # Politeness
//
// Each key has a delay: max(Config.Delay, SetKeyDelay). With PerKey == 1 the
// next request to a key starts no earlier than the previous lease's Done plus
// the delay, so the server sees gaps of at least the delay whatever the
// network latency. With Config.DelayFromStart the delay is counted from the
// previous request's start instead (DoneInfo.Started: the fetch after a
// robots.txt under the same lease), still one request at a time: a key
// then serves one request per max(delay, latency), the start-to-start
// rule of Scrapy's DOWNLOAD_DELAY. With PerKey > 1, up to PerKey leases
// run at once and their starts are at least the delay apart. DoneInfo.Delay (Retry-After,
// back-off) pushes the key's next start to at least Done + that delay.
//
// # Memory
//
// At most Config.MemoryBudget URLs are held in memory (plus requests put
// back by Done with Retry, at most one per outstanding lease). A URL in
// memory costs one 48-byte slot (the URL string header, a pointer to the
// shared per-key state, Seq, and the small fields packed) plus the URL
// bytes; keys and topics are interned. Beyond the budget, URLs are appended
// to per-priority spill files (FIFO segments of length-prefixed Request
// encodings, written through a buffer) and read back, in FIFO order, once
// memory falls under half the budget. The spill is a cache: the durable
// truth is internal/state, so the spill files are deleted by New and Close.
package frontier
