// Package warc writes and reads WARC 1.1 files (ISO 28500:2017), the
// web-archiving format that replay tools (pywb, OpenWayback), indexers and
// other crawlers (Heritrix, wget, Browsertrix) share.
//
// # Writing
//
// A Writer writes rolling files PREFIX-00000.warc.gz, PREFIX-00001.warc.gz, …
// in a directory. Each file starts with a warcinfo record, and every other
// record names it in WARC-Warcinfo-ID; every record is its own gzip member,
// the layout that lets an index point at a record by offset. The records are
// assembled and serialised by nlnwa/gowarc's record builder and marshaler
// (gowarc: the WARC library of the National Library of Norway's crawlers),
// which the tests also use to read every kind of record back under strict
// validation; the digests, and the files themselves (rolling, one write per
// exchange, fsync at checkpoints), are kept here, see Writer and
// recordOptions for why.
// WriteExchange stores one HTTP fetch as three records written together:
//
//   - request: application/http;msgtype=request, the request line and the
//     header fields as sent (Host, User-Agent, Accept-Encoding,
//     If-None-Match, …);
//   - response: application/http;msgtype=response, the status line and header
//     fields as received, then the payload as transferred; or a revisit
//     (below);
//   - metadata: application/warc-fields with "outlink: URL" lines, the fetch
//     time in milliseconds and the server IP;
//
// request and metadata point at the response with WARC-Concurrent-To. Every
// record has a WARC-Record-ID <urn:uuid:…> from crypto/rand, a WARC-Date in
// RFC 3339 UTC, an exact Content-Length and a WARC-Block-Digest; the response
// also has WARC-Payload-Digest. Digests are "sha1:" and the base-32 SHA-1, as
// customary (CDX indexes and deduplicating crawlers compare them).
//
// # The payload as received
//
// The response record holds the payload as it was transferred: a gzip- or
// br-encoded answer is stored as those bytes, under its own Content-Encoding
// field, and WARC-Payload-Digest is the digest of those bytes. Only the
// chunked transfer coding is removed (Go's transport undoes it before any
// caller sees the body); as wget and Heritrix do, the stored header then
// drops Transfer-Encoding and gets a Content-Length of the bytes stored. A
// Content-Length that disagrees with a complete stored body is set to its
// length too (a header synthesised from Exchange.ResponseHeader, or a caller
// that cut a body without saying so). A body cut by a size or time limit
// keeps the server's Content-Length and the record gets WARC-Truncated:
// length. Answers without a body by definition (1xx, 204, 304) keep their
// fields.
//
// # Revisit records
//
// A revisit record (WARC 1.1 §6.7) replaces the response record when the
// payload is already archived; its block is the response's header only:
//
//   - server-not-modified (Exchange.Revisit): the server answered a
//     conditional request 304 Not Modified; WARC-Refers-To-Target-URI and
//     WARC-Refers-To-Date name the capture the validators came from.
//   - identical-payload-digest (Options.Dedup): a 2xx payload, complete and
//     not empty, with the digest of one this Writer stored in full is written
//     as a revisit with WARC-Refers-To (the original record), -Target-URI,
//     -Date, the shared WARC-Payload-Digest and WARC-Truncated: length (the
//     payload left out, as Heritrix and gowarc mark it). The Writer remembers
//     the last Options.Dedup digests it stored in full; it starts with none,
//     so across a restart, and between the processes of a distributed crawl,
//     the first copy is stored in full again. The decision is by payload
//     digest and made in the writer: the crawl state learns of duplicate
//     pages (by text fingerprint) only after the records are written.
//
// # Durability
//
// WriteExchange compresses outside the lock and then hands the three gzip
// members to the operating system in one write system call before it
// returns, so a process killed right after loses nothing; Sync adds fsync. A
// crash during the write leaves a torn last member, which the Reader reports
// as ErrTruncated after the last complete record.
//
// # Reading
//
// The Reader is kept by hand: a small streaming reader whose errors say what
// is wrong with a file (torn tail, not WARC, digest), fuzzed
// (FuzzWARCReader); the tests read every file the Writer makes with gowarc
// under strict validation as well. A Reader iterates the records of a .warc.gz (any gzip member layout) or a
// plain .warc stream: Next returns each record's header fields and a reader of
// its block. Malformed input gives an error wrapping ErrMalformed or
// ErrTruncated, never a panic; a block whose WARC-Block-Digest (sha1) does not
// match gives ErrDigestMismatch at the end of the block.
package warc
