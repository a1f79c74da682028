// Command websim serves the deterministic synthetic web of package websim on loopback
// and computes its ground truth.
//
//	websim serve [flags]   serve the web; print the --resolve entries and seed URLs
//	websim truth [flags]   write the ground truth of a crawl as JSON
//	websim dump --out DIR  write the web as static files (bench/static.sh)
//	websim changes [flags] print the change distribution of pages (--change-day)
//
// Run "websim serve --help" or "websim truth --help" for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spider-crawler/spider/internal/websim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: websim <command> [flags]

commands:
  serve   serve the synthetic web on loopback; prints HOST:PORT:ADDR resolve entries
          (or writes them to --resolve-file) and the seed URLs, then serves until
          interrupted
  truth   write the ground truth (JSON) of a crawl of the web: same web flags as serve,
          plus --seeds, --max-depth, --scope, --agent, --follow-nofollow, --out
  dump    write the web as static files for a real web server: --out DIR, one
          directory per host (served on 127.0.0.x), robots.txt, .gz beside each file,
          a table of contents on every page, DIR/manifest.json
  changes print the distribution pages change by (--change-day): its classes and
          parameters (Cho & Garcia-Molina, VLDB 2000) and the shares drawn on this web

"websim <command> --help" lists the flags of one command.
`

// printFlags documents every flag of both commands.
func printFlags(w io.Writer) {
	fs := flag.NewFlagSet("websim", flag.ContinueOnError)
	fs.SetOutput(w)
	websim.RegisterFlags(fs)
	fmt.Fprintln(w, "\nflags of serve and truth (the web):")
	fs.PrintDefaults()
	fs = flag.NewFlagSet("websim", flag.ContinueOnError)
	fs.SetOutput(w)
	websim.RegisterTruthFlags(fs)
	fmt.Fprintln(w, "\nflags of truth only (the crawl rules; also --out FILE, --seed-count N):")
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nflags of serve only: --access-log FILE, --resolve-file FILE, --seed-count N, -v")
}

// run executes one command and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = runServe(ctx, args[1:], stdout, stderr)
	case "truth":
		err = runTruth(ctx, args[1:], stdout, stderr)
	case "dump":
		err = runDump(ctx, args[1:], stdout, stderr)
	case "changes":
		err = runChanges(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		printFlags(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "websim: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2 // the flag package already printed the error and the usage
	}
	fmt.Fprintln(stderr, "websim:", err)
	return 1
}

// usageError is a command-line parsing error.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// flagError wraps a FlagSet.Parse error (flag.ErrHelp stays as is).
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err}
}
