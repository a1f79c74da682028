package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spider-crawler/spider/internal/fsck"
)

// errDamage is returned by fsck when it found damage and did not repair it.
var errDamage = errors.New("damage found")

func runFsck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("fsck", `fsck --data DIR [--repair] [--json]

Checks every file of a crawl data directory: the state (state/state.db), the
page files (pages/), records.jsonl, the search index (index/), the link graph
(graph/*.csr) and the ranks (rank/*.tsv). Prints one line per problem and a
summary; the exit status is 0 when nothing is wrong, 1 when damage was found
(or a repair failed). With --repair it cuts every file back to its last
consistent point, queues again in the state the URLs whose record or page was
lost (the next "spider crawl --data DIR" fetches them), resets a damaged
index and removes damaged graph/rank files (spider index / spider rank
rebuild them), rebuilds a state that cannot be read from records.jsonl
(keeping the old file as state/state.db.damaged), and lists what it could not
keep. It refuses to run while a crawl holds the directory (exit 3).`, stderr)
	data := fs.String("data", "spider-data", "data directory of a crawl")
	repair := fs.Bool("repair", false, "repair what is found (stop every spider process using DIR first)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: fsck takes no arguments, got %q", errUsage, fs.Args())
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	rep, err := fsck.Run(ctx, *data, fsck.Options{Repair: *repair, Logger: log})
	if rep != nil {
		if *asJSON {
			if rep.Findings == nil {
				rep.Findings = []fsck.Finding{} // [], not null, for a clean directory
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if jerr := enc.Encode(rep); jerr != nil {
				return jerr
			}
		} else {
			printFsck(stdout, rep)
		}
	}
	if err != nil {
		if errors.Is(err, fsck.ErrNotDataDir) {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		return err
	}
	if !rep.Clean() && !rep.Repaired {
		return fmt.Errorf("%w in %s: %d problem(s); run spider fsck --data %s --repair (with no crawl running)", errDamage, *data, len(rep.Findings), *data)
	}
	return nil
}

// printFsck writes the report as text: one line per finding, then what
// repair did, then a summary.
func printFsck(w io.Writer, rep *fsck.Report) {
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "%s\n", f)
	}
	for _, a := range rep.Actions {
		fmt.Fprintf(w, "repair: %s\n", a)
	}
	for _, u := range rep.Requeued {
		fmt.Fprintf(w, "requeued: %s\n", u)
	}
	for _, u := range rep.Dropped {
		fmt.Fprintf(w, "dropped: %s\n", u)
	}
	if rep.Forgotten > 0 {
		fmt.Fprintf(w, "forgotten: %d completed URLs known only by hash (accepted again when a page linking to them is fetched)\n", rep.Forgotten)
	}
	status := "clean"
	switch {
	case rep.Repaired:
		status = fmt.Sprintf("%d problem(s) repaired", len(rep.Findings))
	case !rep.Clean():
		status = fmt.Sprintf("%d problem(s) found", len(rep.Findings))
	}
	fmt.Fprintf(w, "fsck %s: %s; %d pages, %d records, %d URLs completed, %d pending, %d index segment(s)\n",
		rep.Dir, status, rep.Pages, rep.Records, rep.Completed, rep.Pending, rep.Segments)
}
