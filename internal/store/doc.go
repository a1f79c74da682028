// Package store keeps what a crawl fetched on local disk, without a database:
// the page files of SPEC §3 and the crawl records. WARC 1.1 output for the
// rest of the web-archiving ecosystem lives in the sub-package store/warc.
//
// # Page files (SPEC §3 "page storage")
//
// A page directory holds data files PageData000000, PageData000001, … and one
// text index file PageIndex:
//
//	PageData000000   page bodies back to back, no framing
//	PageData000001   the next pages once PageData000000 reached the size cap
//	PageIndex        one line per page, in page-number order
//
// Each PageIndex line is the document's index entry
//
//	page number | page size | URL text size | crawl-time text size | URL text | crawl-time text
//
// written space-separated exactly like the document's example:
//
//	6 14328 22 25 http://www.seu.edu.cn Fri Mar 30 08:31:34 2012
//
// The example fixes two details the slide leaves implicit. The URL
// "http://www.seu.edu.cn" has 21 bytes and the time text 24, yet the sizes say
// 22 and 25: the original C++ program counted one terminator byte with each
// text (the 25 is exactly the length of C's ctime() output, which ends in a
// newline). Here each text size therefore counts the text plus the one byte
// that ends it in the line: the space after the URL and the newline after the
// crawl time. A reader can cut both texts by size alone, so the line stays
// unambiguous whatever the URL holds. The crawl-time text is ctime's layout,
// time.ANSIC ("Mon Jan _2 15:04:05 2006"): it reproduces the example, and for
// days 1–9 it pads with a space as ctime does ("Sat Mar  3 08:31:34 2012"),
// so the text is always 24 bytes. It is written in Options.Location (UTC by
// default) with one-second resolution, so Page.Crawled is truncated to the
// second. Page numbers start at 0 and equal the line's position in the index.
//
// The index line is kept exactly as the document has it; nothing is added to
// it. Where a page's bytes are follows from the line order and the sizes: a
// data file holds consecutive pages, and a page goes to the next data file only
// when it would push the current one past Options.DataFileSize (a page larger
// than the cap gets a file of its own; pages are never split). OpenPageFiles
// rebuilds the locations in memory by reading the index once and packing the
// page sizes into the data files in order, using each data file's actual
// length as its boundary: a page whose size no longer fits in the rest of the
// current file starts the next one only if the current file is used up
// exactly. Because the boundaries come from the files themselves, changing
// DataFileSize between runs is harmless, and no sidecar file has to be kept
// consistent with the other two. The price is one sequential read of PageIndex
// at open time and 16 bytes of memory per page.
//
// # Durability and recovery
//
// Every Append (pages and records) reaches the operating system through write
// system calls before it returns; nothing waits in a user-space buffer, so a
// process killed with SIGKILL right after Append returned loses nothing. The
// page body is written before its index line, so a crash can only leave a torn
// tail: page bytes without their index line, a partial last index line, or an
// index line whose bytes never reached the data file. Sync adds fsync (data
// files before the index, then the directory when files were created), which
// is what protects against power loss.
//
// Opening the store for writing repairs a torn tail by truncating back to
// the last complete page (or record) and logs what was cut at Warn level. A
// malformed line that is not the last one is not a torn tail but corruption:
// OpenPageFiles refuses it with ErrCorrupt unless Options.TruncateCorrupt is
// set. The records file instead skips (and counts and logs) a corrupt line in
// the middle while iterating.
//
// # One writer, any number of readers
//
// Repairing a tail is right only for the one process that owns the files: a
// torn tail may be the page a running crawl is appending right now, and
// cutting it under that crawl leaves it writing at offsets past the new end
// (NUL holes, "store file is corrupt" for good). So a crawl's data
// directory has one lock, LockDir (an flock on DATA/LOCK that names its
// holder), which every writer (the crawl, a worker, a layered crawl) takes
// before it opens any file for writing; a second writer is refused with
// ErrLocked and an error naming the holder's pid and command, having touched
// nothing. Every other command (export, stats, index, graph, serve) opens
// with Options.ReadOnly: nothing is created, repaired or truncated, a
// missing file is an error naming its path, and a torn tail is simply not
// read, so readers are safe beside a running crawl and on a read-only
// directory. Files are created 0600 and directories 0700 (FileMode,
// DirMode): crawl data is private to the user who crawled.
//
// # Checkpoints against power loss
//
// Append reaches the operating system, not the disk. The crawl makes its
// files durable in checkpoints, driven by its state (package state, whose
// Options.Checkpoint is the crawl's Sync): PageFiles.Sync, then
// Records.Sync, then the state's fsync, with no state commit in between.
// Since a URL's page and record are appended before the state commit that
// completes it, the state on disk after a power loss never completes a URL
// whose page or record is not on disk; what is lost is the work since the
// last checkpoint (by default at most 10 s), whose URLs are still pending in
// that state and are fetched again. See package state, "Durability", for the
// one caveat of its default NoSync commits and how a crawl detects it.
//
// # Page numbers are never reused
//
// A page number must name one URL's body for good: records (and the index
// built from them) hold page numbers. After a loss (a truncated PageData or
// PageIndex) the open cuts the index back to the last page whose bytes are
// there, so the next Append would issue numbers that old records still
// hold. The crawl's state keeps the highest number it completed
// (state.Store.PageNext); the crawl calls SkipTo with it, which appends
// empty placeholder pages under LostURL for the lost numbers. And every
// reader goes through PageFiles.ReadRecord, which checks that the page was
// stored under the record's URL (Record.PageURL) and returns ErrMismatch
// otherwise, so a record can never show another URL's body, whatever
// happened to the files.
//
// # Crawl records
//
// records.jsonl holds one JSON object per line, one line per fetch attempt
// outcome (Record), appended under the same durability rule.
package store
