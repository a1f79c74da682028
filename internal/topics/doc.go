// Package topics is the multi-topic priority scheduler PQ-MCSA of SPEC §4:
// a crawl's URLs belong to topics with priorities, and the scheduler
// decides which topic's URL is fetched next, inside the frontier's
// politeness (it is a frontier.Selector: it only chooses among the hosts
// whose delay has passed, so it never makes a host go faster).
//
// # Topics file (spider crawl --topics FILE)
//
//	period: 1m          # the daemon's accounting period
//	base_slice: 1s      # slice total of priority 0; priority p: (p+1)×base
//	slices: {2: 3s}     # a level's own crawl-time threshold
//	topics:
//	  - name: news
//	    priority: 2                       # 0 (lowest) … 9
//	    seeds: [https://news.example/]
//	    patterns: ["https://(example,news,"]   # SURT prefixes (urls.SURT)
//	    urls: [{url: https://news.example/today, priority: 5}]
//	    terms: [election, vote, 选举]      # relevance
//	    min_pages: 50                      # relevant pages per period
//	    recrawl: 5m                        # time-critical: revisit hubs
//	    hubs: [https://news.example/latest/]
//
// A URL belongs to the topic whose pattern is the longest prefix of its SURT
// form (a topic without patterns covers its seeds' hosts); the frontier
// carries the name in Request.Topic. URLs of no topic form the background
// task "(other)".
//
// # SPEC §4 structures
//
// Each topic is a task of granularity "topic", each entry of urls a task of
// granularity "url" (its UMAP entry is the URL's SURT) charged to its
// topic. Task holds the priority-queue entry (IDtask, IDtheme, P, G, TN) and
// the task control block QUEUE_MCB (ST slice total, SR slice remaining, SI
// state, CP saved context, TD delay = the recrawl period).
//
// # Scheduling (Select)
//
// Crawl time is the sum of a task's fetch durations (lease to finish).
//
//   - Priority and pre-emption: among the tasks with slice left that have a
//     URL ready, the highest priority is chosen. When it outranks the task
//     that got the previous URL, that task is pre-empted: it goes back to
//     ready with its context (SR, last URL, time) saved, and the pre-emption
//     is counted and time-stamped.
//   - Round robin: tasks of one level take turns; a task keeps its turn
//     while it has slice left, and its level moves on when the slice is
//     spent (the level's own threshold ST).
//   - Epochs, no starvation: a spent task waits for the next epoch, which
//     starts when no task with slice left has URLs queued; then every slice
//     is refilled. So in each epoch every topic with work gets its slice,
//     the highest priorities first.
//   - Work conservation: when the tasks with slice left have URLs but
//     politeness holds all their hosts, the expired task with the most
//     slice left takes the worker and is charged (an overdraft, at most one
//     slice, repaid in the next epoch).
//
// The daemon (Tick, every Config.Tick) scores each fetched page against its
// topic's terms (Scorer: share of the text covered by terms) and counts
// relevant pages per period: a topic that reached min_pages in the period
// gets one quantum less slice (down to min_slice), one that missed it gets
// one quantum more at the period's end (up to 4× its level's threshold), so
// that the topics' coverage evens out (SPEC §4 "Demon thread").
//
// Mode "fifo" keeps the accounting but leases in the traditional order, the
// baseline of the SPEC §4 experiment (bench/topics).
//
// # Recrawl
//
// A topic with recrawl > 0 is time-critical: every recrawl period its hubs
// are queued again although already seen (DueRecrawls), at the head of
// their hosts' queues (frontier.PushUrgent), and the new URLs they list are
// queued the same way, so new pages are found quickly.
//
// # Priorities changed at run time
//
// SetPriority changes a topic's priority while the crawl runs (spider
// control priority, PUT /api/topics/{topic}/priority): the task moves to its
// new level's round robin, its slice follows the level, its URL tasks keep
// their distance to it, and a pre-emption happens on the next Select. The
// change is saved with the task records; a restart keeps it unless the
// topics file's priority for that topic was edited since (then the file
// wins). Status shows both (priority, file_priority).
//
// # Persistence
//
// Save writes every task control block to an extendible hash table
// (internal/exthash, DATA/topics/tcb) in one atomic commit; Load restores
// them, so a restarted crawl resumes slices, counters and pre-emption
// history. WriteStatus writes DATA/topics/status.json for spider stats and
// spider status --data.
package topics
