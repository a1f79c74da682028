// Command spider is a polite, resumable web crawler and search engine.
// Each subcommand lives in its own file with a run function that defines
// and parses its flags (pflag); cli.go builds the cobra command tree over
// them (dispatch, help, shell completion, man pages).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands are spider's subcommands, in the order help lists them. Each
// run function defines its flags (newFlagSet), parses args (parseArgs) and
// works; the cobra tree (cli.go) dispatches to it. Set in init: completion
// and man build the cobra tree, which reads this table.
var commands []command

func init() {
	commands = []command{
		{"crawl", "crawl the web from seed URLs (embedded store, resumable)", runCrawl},
		{"master", "schedule a master–worker crawl over Redis (docs/design.md §1)", runMaster},
		{"worker", "fetch for a master–worker crawl over Redis", runWorker},
		{"center", "run a network center of the two-tier de-dup protocol (docs/design.md §0)", runCenter},
		{"status", "show a crawl's progress, queues, workers and revisit schedule (from Redis, or a data directory)", runStatus},
		{"crawls", "list the crawls on a Redis: topology, state, nodes, URLs done, keys, memory", runCrawls},
		{"drop", "remove a finished crawl's keys from Redis (or give them a time to live)", runDrop},
		{"control", "pause, resume or stop a distributed crawl, or add seeds to it, on every node within a second", runControl},
		{"index", "build the search index from a crawl (embedded or over Redis)", runIndex},
		{"search", "query the search index", runSearch},
		{"rank", "compute PageRank over the crawl's link graph (in memory or over Redis)", runRank},
		{"serve", "serve the search page, crawl dashboard, JSON API and /metrics", runServe},
		{"stats", "summarise a crawl's data directory", runStats},
		{"export", "write a crawl's records as JSON lines or WARC", runExport},
		{"fsck", "check a data directory for damage and repair it (--repair)", runFsck},
		{"robots", "check a URL against a robots.txt file", runRobots},
		{"completion", "print a shell completion script: bash, zsh or fish", runCompletion},
		{"man", "write a man page for spider and each command into a directory", runMan},
		{"version", "print the version", runVersion},
	}
}

// version is set with -ldflags "-X main.version=…" by release builds.
var version = "0.1.0-dev"

func main() {
	// go-redis prints its own lines about failed dials to stderr; every
	// command already reports such a failure as an error saying what to do
	// (or logs its retries), so its lines are only noise before that.
	redis.SetLogger(quietRedisLog{})
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// quietRedisLog drops go-redis's internal log lines.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// run executes the command line args and returns the exit code (see the
// table below). The cobra tree (cli.go) finds the command; the command's run
// function parses its own flags, so the exit codes and messages are those
// of exitCode whatever the command.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] { // the Go flag package's single-dash spellings
		case "-help":
			args = append([]string{"--help"}, args[1:]...)
		case "-version":
			args = append([]string{"--version"}, args[1:]...)
		}
	}
	var ran ranCommand
	root := newRootCommand(stdout, stderr, &ran, isCompletion(args))
	root.SetArgs(args)
	err := root.Execute()
	if ran.name == "" { // cobra's own error: an unknown command, a bad root flag
		if err == nil {
			return 0
		}
		fmt.Fprintf(stderr, "spider: %v\nRun \"spider --help\" for the commands.\n", strings.TrimSuffix(err.Error(), "\n"))
		return 2
	}
	return exitCode(ran.name, ran.err, stderr)
}

// exitCode maps a command's error to the exit code and prints it.
func exitCode(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.Is(err, errUsage), errors.Is(err, crawl.ErrNoCrawl):
		fmt.Fprintf(stderr, "spider %s: %v\n", name, err)
		return 2
	case errors.As(err, new(resourceError)), errors.Is(err, store.ErrLocked), errors.Is(err, cluster.ErrNodeIDInUse):
		fmt.Fprintf(stderr, "spider %s: %v\n", name, err)
		return 3
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "spider: interrupted; run the same command again to resume")
		return 130
	}
	fmt.Fprintf(stderr, "spider %s: %v\n", name, err)
	if errors.Is(err, syscall.ENOSPC) {
		fmt.Fprintln(stderr, "spider: the disk holding the data directory is full; free space (or move --data) and run the same command again: it resumes where it stopped")
	}
	return 1
}

// Exit codes (the same for every subcommand): 0 success; 1 the work ran but
// failed; 2 usage error (errUsage, and a --data directory that holds no
// crawl: crawl.ErrNoCrawl); 3 a resource problem: the data directory
// is locked by another process (store.ErrLocked), a node id is held by a
// live node (cluster.ErrNodeIDInUse) or Redis cannot be reached
// (resourceError); 130 interrupted.
var errUsage = errors.New("usage error")

// resourceError marks a failure of something the command needs but does
// not own (Redis unreachable): exit code 3. Its message is the wrapped one.
type resourceError struct{ error }

func (e resourceError) Unwrap() error { return e.error }

// signalContext is cancelled by the first SIGINT/SIGTERM; a second one exits
// at once, unless the command took it with secondInterrupt (then the third
// does).
func signalContext() (context.Context, func()) {
	base, cancel := context.WithCancel(context.Background())
	in := &interrupts{stopped: make(chan struct{})}
	ctx := context.WithValue(base, interruptsKey{}, in)
	ch := make(chan os.Signal, 3)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-in.stopped:
			return
		}
		if second := in.take(); second != nil {
			<-ch
			close(second)
		}
		<-ch
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(ch); close(in.stopped); cancel() }
}

// interrupts is what signalContext shares with its command: whether the
// command handles the second interrupt itself.
type interrupts struct {
	mu      sync.Mutex
	second  chan struct{} // closed by the second interrupt; nil: not taken
	stopped chan struct{} // closed when the command is over
}

type interruptsKey struct{}

func (in *interrupts) take() chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.second
}

// secondInterrupt makes the second SIGINT/SIGTERM of the command's
// signalContext close the returned channel instead of exiting (the third
// exits at once): for a command whose first Ctrl-C starts a graceful end
// that a second one cuts short (spider worker). It returns nil for a
// context signalContext did not make.
func secondInterrupt(ctx context.Context) <-chan struct{} {
	in, ok := ctx.Value(interruptsKey{}).(*interrupts)
	if !ok {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.second == nil {
		in.second = make(chan struct{})
	}
	return in.second
}

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	fmt.Fprintln(stdout, "spider", version)
	return nil
}
