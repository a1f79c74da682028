// Package index is spider's search engine: the inverted index of SPEC §1
// ("Distributed index build" and "Search"), built from a crawl's data
// directory and queried with BM25 combined with PageRank.
//
// # Documents
//
// A document is the last record of a URL in DATA/records.jsonl whose status
// is 200, whose media type is HTML and whose body is in DATA/pages. The body
// (stored as UTF-8 by the fetcher) is parsed by package parse; pages with
// meta robots noindex are left out. Title and text are analysed by package
// analysis (gse/jieba word segmentation for Chinese, stop words and
// Snowball stemming for English) into terms with positions.
//
// # Segments, manifest, merges
//
// An index directory (DATA/index) holds immutable segment files and a
// MANIFEST naming the live ones, oldest first, plus the checkpoint of the
// incremental build (bytes of records.jsonl indexed). A segment has a
// versioned header, sections for stored fields, document lengths, URL
// hashes, deletions, postings (doc-id deltas, frequencies and position
// deltas as varints) and a sorted term dictionary with a block index, and a
// footer with every section's CRC-32C (see format.go). A newer segment
// overrides older ones: a URL it holds or deletes is hidden in older
// segments, which is how "last record wins" works across incremental runs.
// Writer commits a segment with its checkpoint in one atomic manifest
// replacement; its background merger merges runs of adjacent segments when
// there are more than WriterOptions.MaxSegments, dropping overridden
// documents. Writers lock the directory (one at a time); readers need no
// lock.
//
// Index maps segments read-only (mmap) and shares them between concurrent
// searches; it re-reads the manifest when it changes (checked at most once
// per Options.ReloadInterval), so a running `spider serve` sees pages that
// `spider index` adds while a crawl runs. Segments replaced by a merge stay
// mapped until the searches using them finish.
//
// # Queries and ranking
//
// Words (implicit AND), AND, OR, NOT and -word, "phrases" (positions),
// site:host and parentheses; see parseQuery. Each matching page gets
//
//	score = BM25(k1=1.2, b=0.75) + w × ln(1 + PageRank × R)
//
// with the PageRank scores of rank.PagesFile (R = number of ranked pages, w =
// Request.RankWeight, default 1).
//
// Queries that only need all their words (one word, or words joined by
// AND) are evaluated document-at-a-time with dynamic pruning (topk.go):
// long postings lists get a skip index (per 128 postings: offset, last
// document, largest tf, shortest document), built in the background when a
// segment is opened (Options.NoWarm: on first use); a block whose BM25
// bound plus the largest PageRank term cannot beat the current k-th hit is
// not decoded, the other words of a conjunction jump over blocks, and a
// page's PageRank is looked up only when it could enter the top k. Results
// and totals are identical to scoring every posting (Options.Exhaustive,
// the reference of the property test). Other queries (OR, NOT, phrases,
// site:) score every matching posting.
//
// Snippets are the 32-word window of the stored text with the most
// distinct query terms, terms marked. The window is chosen from the
// terms' positions in the postings, not by analysing the page: the stored
// text (DEFLATE stored blocks) is then read and cut into words
// (analysis.Words, no stemming) only up to the window's end.
//
// The Chinese dictionaries of package analysis load only when Han text is
// first analysed (a page at build time, a query or a snippet at search
// time): English-only builds and searches never load them.
//
// # Distributed build (SPEC §1)
//
// RunMapper and RunDistWriter implement the paper's build over Redis: map
// tasks (ranges of a node's records) are taken from a tag queue trq by
// mappers running where the pages are, leased (a dead mapper's task is
// redone), and their (term, page, frequency, positions) packets are written
// by one single writer. See dist.go for the keys and protocol.
package index
