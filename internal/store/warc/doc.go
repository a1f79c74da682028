// Package warc writes and reads WARC 1.1 files (ISO 28500:2017), the
// web-archiving format that replay tools (pywb, OpenWayback), indexers and
// other crawlers (Heritrix, wget, Browsertrix) share.
//
// # Writing
//
// A Writer writes rolling files PREFIX-00000.warc.gz, PREFIX-00001.warc.gz, …
// in a directory. Each file starts with a warcinfo record; every record is its
// own gzip member, the layout that lets an index point at a record by offset.
// WriteExchange stores one HTTP fetch as three records written together:
//
//   - request: application/http;msgtype=request, the request line and the
//     header fields as sent (Host, User-Agent, Accept-Encoding, …);
//   - response: application/http;msgtype=response, the status line and header
//     fields as received, then the body;
//   - metadata: application/warc-fields with "outlink: URL" lines, the fetch
//     time in milliseconds and the server IP;
//
// request and metadata point at the response with WARC-Concurrent-To. Every
// record has a WARC-Record-ID <urn:uuid:…> from crypto/rand, a WARC-Date in
// RFC 3339 UTC, an exact Content-Length and a WARC-Block-Digest; the response
// also has WARC-Payload-Digest. Digests are "sha1:" and the base-32 SHA-1, as
// customary.
//
// # The stored payload and the response header
//
// A WARC response record should hold the bytes as the server sent them, but a
// Go crawler only sees the body after its transport removed the chunked
// transfer coding and, often, the gzip or br content coding. The writer stores
// Exchange.Body as it is and rewrites the header fields that would otherwise
// describe bytes that are not in the record, keeping each original under an
// X-Orig- name so nothing is lost:
//
//   - Transfer-Encoding becomes X-Orig-Transfer-Encoding (Body is always
//     de-chunked);
//   - when Exchange.Decoded is set, Content-Encoding becomes
//     X-Orig-Content-Encoding;
//   - unless Exchange.Truncated is set, a Content-Length that differs from
//     len(Body) becomes X-Orig-Content-Length, and a Content-Length equal to
//     len(Body) is added whenever one of these rewrites happened and none is
//     left. A truncated body keeps the server's Content-Length and the record
//     gets WARC-Truncated: length instead.
//
// When nothing needs rewriting, Exchange.RawResponseHeader is stored byte for
// byte. WARC-Payload-Digest is the SHA-1 of Body, the payload as stored.
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
// A Reader iterates the records of a .warc.gz (any gzip member layout) or a
// plain .warc stream: Next returns each record's header fields and a reader of
// its block. Malformed input gives an error wrapping ErrMalformed or
// ErrTruncated, never a panic; a block whose WARC-Block-Digest (sha1) does not
// match gives ErrDigestMismatch at the end of the block.
package warc
