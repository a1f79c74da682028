package store

import "path/filepath"

// Names of the folders of a data directory, relative to it. They are part
// of the on-disk format: existing data directories hold them, so they
// never change. DataDir's methods join them to a directory; packages that
// report paths relative to the data directory (spider fsck's findings)
// use the names themselves.
const (
	PagesDirName    = "pages"    // the page files: PageData… and PageIndex (PageFiles)
	StateDirName    = "state"    // the crawl state of the embedded back-end (bbolt)
	IndexDirName    = "index"    // the search index's segments and MANIFEST
	WARCDirName     = "warc"     // WARC 1.1 files written with --warc
	GraphDirName    = "graph"    // the link graphs (pages.csr, hosts.csr)
	RankDirName     = "rank"     // PageRank scores (pages.tsv, hosts.tsv)
	LayeredDirName  = "layered"  // a layered crawl's rounds, manifest and report
	ScheduleDirName = "schedule" // a §0 host's revisit schedule (the embedded state's format)
	TopicsDirName   = "topics"   // a --topics crawl's task control blocks and status
	SpillDirName    = "spill"    // the frontier's overflow (a cache, emptied on start)
)

// DataDir is a crawl's data directory (the --data flag), or a directory
// laid out as one (a layered task's output: pages/ and records.jsonl), as a
// path. Its methods name the directory's folders and files, so that every
// writer and reader spells them the same way: each returns filepath.Join
// of the directory and the name, byte for byte the path the packages
// spelled out before, and touches no file. The zero value is the current
// directory's names ("pages", "state", …), as filepath.Join("", name) is.
//
// The layout (docs/crawling.md, "Data directory"):
//
//	DATA/records.jsonl   Records: one line per completed URL
//	DATA/pages/          PageFiles: PageData000000…, PageIndex
//	DATA/state/          the embedded back-end's state.db
//	DATA/warc/           WARC files (--warc)
//	DATA/index/          the search index
//	DATA/graph/          the link graphs
//	DATA/rank/           PageRank scores
//	DATA/layered/        a layered crawl
//	DATA/schedule/       a §0 host's revisit schedule
//	DATA/topics/         a --topics crawl
//	DATA/spill/          the frontier's overflow
//	DATA/LOCK            the one writer's lock (LockDir)
//	DATA/NODE_ID         the node's id (NodeID); DATA/NODE_TOKEN (NodeToken)
type DataDir string

// Path returns the data directory itself.
func (d DataDir) Path() string { return string(d) }

// Join returns a path inside the data directory given relative to it
// (for files whose packages name them relative to the data directory,
// such as graph.PagesFile): filepath.Join(d, rel).
func (d DataDir) Join(rel ...string) string {
	return filepath.Join(append([]string{string(d)}, rel...)...)
}

// Records returns the crawl records file, DATA/records.jsonl.
func (d DataDir) Records() string { return filepath.Join(string(d), RecordsFileName) }

// Pages returns the page files' directory, DATA/pages (OpenPageFiles,
// OpenPageReader).
func (d DataDir) Pages() string { return filepath.Join(string(d), PagesDirName) }

// State returns the embedded crawl state's directory, DATA/state.
func (d DataDir) State() string { return filepath.Join(string(d), StateDirName) }

// Index returns the search index's directory, DATA/index.
func (d DataDir) Index() string { return filepath.Join(string(d), IndexDirName) }

// WARC returns the WARC files' directory, DATA/warc.
func (d DataDir) WARC() string { return filepath.Join(string(d), WARCDirName) }

// Graph returns the link graphs' directory, DATA/graph.
func (d DataDir) Graph() string { return filepath.Join(string(d), GraphDirName) }

// Rank returns the PageRank scores' directory, DATA/rank.
func (d DataDir) Rank() string { return filepath.Join(string(d), RankDirName) }

// Layered returns a layered crawl's directory, DATA/layered.
func (d DataDir) Layered() string { return filepath.Join(string(d), LayeredDirName) }

// Schedule returns a §0 host's revisit schedule directory, DATA/schedule.
func (d DataDir) Schedule() string { return filepath.Join(string(d), ScheduleDirName) }

// Topics returns a --topics crawl's directory, DATA/topics.
func (d DataDir) Topics() string { return filepath.Join(string(d), TopicsDirName) }

// Spill returns the frontier's overflow directory, DATA/spill.
func (d DataDir) Spill() string { return filepath.Join(string(d), SpillDirName) }

// Lock returns the writer's lock file, DATA/LOCK (LockDir).
func (d DataDir) Lock() string { return filepath.Join(string(d), LockFileName) }
