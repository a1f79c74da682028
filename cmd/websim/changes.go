package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/spider-crawler/spider/internal/websim"
)

// runChanges prints the change distribution of the web's pages: the classes of
// websim.ChangeClasses with their parameters and the shares drawn on this web.
func runChanges(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("websim changes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := websim.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("cannot use %q: websim changes takes flags only", fs.Arg(0))
	}
	w, err := websim.New(*cfg)
	if err != nil {
		return err
	}
	c := w.Config()
	s := w.SummarizeChanges(c.Hosts)
	fmt.Fprintf(stdout, "change distribution of the pages (index, sections, articles) of %d hosts × %d pages; Cho & Garcia-Molina, \"The Evolution of the Web and Implications for an Incremental Crawler\", VLDB 2000, Figure 2(a):\n", c.Hosts, c.PagesPerHost)
	fmt.Fprintln(stdout, "class (mean change interval)  share  drawn   mean interval, log-uniform in (days)")
	for i, cl := range websim.ChangeClasses {
		fmt.Fprintf(stdout, "%-29s %5.1f%% %5.1f%%  [%g, %g]\n", cl.Name, 100*cl.Share, 100*s.ClassShares[i], cl.MinDays, cl.MaxDays)
	}
	fmt.Fprintf(stdout, "changes: a Poisson process per page (exponential gaps) at its rate, seeded by (seed, host, page)\n")
	fmt.Fprintf(stdout, "expected share of pages changed after one day: %.1f%%; unchanged over 120 days (drawn): %.1f%%; changes per page per day: %.3f\n",
		100*s.ChangedWithinDay, 100*s.UnchangedFourMonths, s.MeanChangesPerPageDay)
	if c.ChangeDay > 0 {
		fmt.Fprintf(stdout, "one model day lasts %s; articles disappearing (404/410) at their 1st-3rd change: %.1f%% of the changing ones; gone by day 120: %.2f%% of all pages\n",
			c.ChangeDay, 100*c.DisappearShare, 100*s.DisappearedFourMonths)
	} else {
		fmt.Fprintln(stdout, "--change-day is 0: the web serves version 0 of every page (no change, no validators)")
	}
	return nil
}
