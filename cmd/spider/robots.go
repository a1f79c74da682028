package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spider-crawler/spider/internal/robots"
)

func runRobots(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("robots", "robots --robots FILE --agent UA --url URL", stderr)
	file := fs.String("robots", "", "robots.txt file to check (- for standard input)")
	agent := fs.String("agent", "spider", "user agent (its product token selects the group)")
	target := fs.String("url", "", "URL to check")
	explain := fs.Bool("explain", false, "also print the rule that decided")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *file == "" || *target == "" {
		fs.Usage()
		return fmt.Errorf("%w: --robots and --url are required", errUsage)
	}
	var body []byte
	var err error
	if *file == "-" {
		body, err = io.ReadAll(io.LimitReader(os.Stdin, robots.MaxSize+1))
	} else {
		body, err = os.ReadFile(*file)
	}
	if err != nil {
		return fmt.Errorf("cannot read robots.txt: %w", err)
	}
	allowed, rule, err := robots.Check(body, *agent, *target)
	if err != nil {
		return err
	}
	verdict := "disallowed"
	if allowed {
		verdict = "allowed"
	}
	fmt.Fprintln(stdout, verdict)
	if *explain {
		if rule == "" {
			rule = "no rule matched"
		}
		fmt.Fprintf(stdout, "rule: %s\n", rule)
	}
	return nil
}
