// Package graph turns a crawl's records into link graphs compacted to
// integer ids (CSR) and keeps them on disk under DATA/graph/, for PageRank
// (package rank, SPEC §1 "build the out-link matrix").
//
// # Graphs
//
// Build reads records.jsonl and makes two graphs (rules on Build): the page
// graph, whose nodes are the pages fetched with a 2xx status and a stored
// body and whose edges follow links through redirects, and the host graph,
// whose nodes are host names and whose de-duplicated edges join hosts that
// link to each other. Ids follow the sorted node names, so the pages of one
// host get neighbouring ids (good locality for a pull iteration and for range
// partitions).
//
// # Files
//
// DATA/graph/pages.csr and DATA/graph/hosts.csr hold one Graph each, in the
// versioned binary layout documented on Encode: a header with the counts and
// the size of records.jsonl the graph came from, then the offsets, targets and
// id→name table, each section protected by a CRC-32C. Decode refuses a
// truncated, padded or damaged file with ErrCorrupt saying what failed.
// Load reuses the files while records.jsonl keeps the size they were built
// from, and rebuilds them (atomically: temporary file, fsync, rename) when a
// crawl appended records, when a file is missing or damaged, or on request.
package graph
