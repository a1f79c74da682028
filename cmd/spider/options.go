package main

// The flags of the commands that crawl (spider crawl, master, worker) are
// bound into options structs, as Prometheus's flagConfig binds flags into
// each component's own options: the crawl settings every mode uses are one
// crawl.Config (crawlFlags, with the --config file's values as defaults),
// and each mode has a struct of its own whose bind method registers only
// that mode's flags. A command assembles the structs it takes
// (crawlOptions for spider crawl, masterOptions beside the crawl settings
// for spider master). Each mode's flags are registered through bindMode,
// which marks them with their help group and their mode: help prints a
// mode's flags together, in the order its bind registers them (help.go).

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/p2p"
)

// flagModeKey is the pflag annotation naming the mode a flag belongs to
// (one of modeOrder); the flags every mode takes have none.
const flagModeKey = "spider_mode"

// The modes whose flags help prints as blocks, in the order of modeOrder.
const (
	modeRedis    = "redis"         // the connection, the crawl's name, --expire-done: peer-to-peer, master–worker, layered with --redis
	modePeer     = "p2p"           // spider crawl --redis: a peer-to-peer node
	modeMaster   = "master–worker" // spider master: the scheduling node
	modeProtocol = "protocol"      // spider crawl --dedup protocol: a host of the design §0 protocol
	modeLayered  = "layered"       // spider crawl --mode layered
	modeTopics   = "topics"        // --topics: the multi-topic scheduler
	modeSingle   = "single node"   // spider crawl alone: the embedded crawl's server
)

// modeOrder is the order of the modes' blocks inside a help group, after
// the flags every mode takes.
var modeOrder = []string{modeRedis, modePeer, modeMaster, modeProtocol, modeLayered, modeTopics, modeSingle}

// bindMode registers on fs the flags bind defines, as the flags of mode
// printed in help group group (a key of flagGroups): help shows them
// together, in the order bind registers them. The flags are the ones bind
// defines (same names, defaults, help texts and variables); only their
// help annotations are added.
func bindMode(fs *pflag.FlagSet, mode, group string, bind func(*pflag.FlagSet)) {
	own := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	own.SortFlags = false // registration order
	bind(own)
	own.VisitAll(func(f *pflag.Flag) {
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[flagGroupKey] = []string{group}
		f.Annotations[flagModeKey] = []string{mode}
		fs.AddFlag(f)
	})
}

// modeRank is the place of f's mode in modeOrder plus one; 0 for a flag
// every mode takes.
func modeRank(f *pflag.Flag) int {
	if v := f.Annotations[flagModeKey]; len(v) > 0 {
		for i, m := range modeOrder {
			if m == v[0] {
				return i + 1
			}
		}
	}
	return 0
}

// crawlOptions is everything spider crawl takes: the crawl settings every
// mode uses (cfg) and one options struct per mode. newCrawlOptions binds
// them all to one flag set; runCrawl picks the mode from them.
type crawlOptions struct {
	// cfg holds the crawl settings: the defaults, then the --config file,
	// then the flags (crawlConfigFlags).
	cfg *crawl.Config
	// logLevel, quiet and pprof concern this process, in every mode.
	logLevel string
	quiet    bool
	pprof    string
	// redis is the connection of the peer-to-peer and the layered crawl
	// (a §0 host takes its Redis from --protocol-config); with --redis
	// alone the process is a peer-to-peer node (peer).
	redis redisFlags
	peer  peerOptions
	// layered is --mode layered; mixed is --dedup protocol.
	layered layeredOptions
	mixed   mixedOptions
	// serve is the single-node crawl's server (--addr).
	serve serveOptions
}

// newCrawlOptions starts spider crawl's flag set (crawlConfigFlags: the
// crawl settings, the --config file read from args) and binds every
// mode's options to it. The caller parses.
func newCrawlOptions(args []string, stderr io.Writer) (*crawlOptions, *pflag.FlagSet, error) {
	cfg, fs, err := crawlConfigFlags("crawl", crawlSynopsis, args, stderr)
	if err != nil {
		return nil, nil, err
	}
	o := &crawlOptions{cfg: cfg}
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line and no summary")
	bindMode(fs, modeRedis, "distributed", o.redis.bindEnding)
	bindMode(fs, modePeer, "distributed", o.peer.bind)
	bindMode(fs, modeLayered, "modes", o.layered.bind)
	bindMode(fs, modeProtocol, "distributed", o.mixed.bind)
	bindMode(fs, modeSingle, "output", o.serve.bind)
	fs.StringVar(&o.pprof, "pprof", "", "serve Go's profiler (net/http/pprof) on this separate address while crawling, e.g. 127.0.0.1:6060; keep it private")
	return o, fs, nil
}

// peerOptions are the flags of a peer-to-peer node (spider crawl --redis).
type peerOptions struct {
	nodeID  string
	weight  int
	buckets int
}

// bind registers --node-id, --weight and --buckets.
func (p *peerOptions) bind(fs *pflag.FlagSet) {
	fs.StringVar(&p.nodeID, "node-id", "", "with --redis: this node's name, unique in the crawl; default: the id kept in the data directory (DATA/NODE_ID, generated once as HOST-xxxxxx), so restarts keep it; a live node's id is refused")
	fs.IntVar(&p.weight, "weight", 100, fmt.Sprintf("with --redis: this node's virtual nodes on the ring, its share of the hosts (range 1 to %d)", p2p.MaxWeight))
	fs.IntVar(&p.buckets, "buckets", 4096, fmt.Sprintf("with --redis: logical buckets of hosts, the same on every node (range 1 to %d)", p2p.MaxBuckets))
}

// check range-checks --weight and --buckets: a usage error naming the flag.
// It is checked whatever the mode, as it always was.
func (p *peerOptions) check() error {
	if p.weight < 1 || p.weight > p2p.MaxWeight {
		return fmt.Errorf("%w: --weight %d is out of range: use 1 to %d virtual nodes", errUsage, p.weight, p2p.MaxWeight)
	}
	if p.buckets < 1 || p.buckets > p2p.MaxBuckets {
		return fmt.Errorf("%w: --buckets %d is out of range: use 1 to %d (the same on every node)", errUsage, p.buckets, p2p.MaxBuckets)
	}
	return nil
}

// options are the node's p2p.Options in crawl crawlName.
func (p *peerOptions) options(crawlName string) p2p.Options {
	return p2p.Options{Crawl: crawlName, NodeID: p.nodeID, Weight: p.weight, Buckets: p.buckets}
}

// serveOptions are the flags of the single-node crawl's server: the
// dashboard, search page, JSON API and /metrics while it crawls.
type serveOptions struct {
	addr         string
	allowedHosts []string
}

// bind registers --addr and --allowed-hosts.
func (s *serveOptions) bind(fs *pflag.FlagSet) {
	fs.StringVar(&s.addr, "addr", "", "serve the dashboard, search page, JSON API and /metrics on HOST:PORT while crawling (embedded crawls); control needs SPIDER_TOKEN")
	fs.Var(listFlag{&s.allowedHosts}, "allowed-hosts", "with --addr: host names the server answers to besides its listening address (see spider serve -h)")
}

// check splits and checks --allowed-hosts (splitHosts): a usage error.
func (s *serveOptions) check() error {
	hosts, err := splitHosts(s.allowedHosts)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	s.allowedHosts = hosts
	return nil
}
