package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"
)

// flagGroupKey is the pflag annotation that puts a flag in a help group.
const flagGroupKey = "spider_group"

// flagGroups are the help groups of the crawl settings, in the order
// "spider crawl -h" prints them, with the heading of each.
var flagGroups = []struct{ key, heading string }{
	{"general", "General flags"},
	{"scope", "Scope flags (which URLs are crawled)"},
	{"politeness", "Politeness flags (how hard each host is asked)"},
	{"limits", "Limit flags (how much is fetched and kept)"},
	{"output", "Output flags (where results go)"},
	{"network", "Network flags (connections, names, time-outs)"},
	{"distributed", "Distributed flags (Redis, peers, master–worker, the de-dup protocol)"},
	{"modes", "Mode flags (layered rounds, topics)"},
	{"revisits", "Revisit flags (keeping a crawl fresh, retries of failures)"},
}

// flagGroupOf is the help group of every flag of the commands that take
// the crawl settings (groupedCommands) that every mode takes. A mode's own
// flags get their group where they are bound (bindMode, options.go). A
// flag of those commands in neither is printed under "Other flags" and
// fails TestHelpGroups.
var flagGroupOf = map[string]string{
	"config": "general", "log-level": "general", "quiet": "general",

	"max-depth": "scope", "strict-levels": "scope", "loose-depth": "scope", "scope": "scope", "scope-regexp": "scope",
	"allow-host": "scope", "deny-host": "scope", "deny-suffix": "scope", "drop-param": "scope",
	"sort-query": "scope", "follow-nofollow": "scope", "near-dup-distance": "scope", "canonical": "scope",
	"sitemaps": "scope",

	"delay": "politeness", "delay-from": "politeness", "max-crawl-delay": "politeness",
	"per-host": "politeness", "per-ip": "politeness", "user-agent": "politeness",
	"robots-agent": "politeness", "max-rate": "politeness",

	"max-pages": "limits", "concurrency": "limits", "max-body-bytes": "limits", "memory-budget": "limits",
	"max-redirects": "limits", "max-retries": "limits", "retry-delay": "limits", "seen": "limits",
	"expected-urls": "limits", "fp-rate": "limits",

	"data": "output", "warc": "output", "pprof": "output",

	"resolve": "network", "resolve-file": "network", "allow-private": "network",
	"connect-timeout": "network", "first-byte-timeout": "network", "timeout": "network",

	"revisit": "revisits", "revisit-min": "revisits", "revisit-max": "revisits", "revisit-initial": "revisits",
	"revisit-share": "revisits", "continuous": "revisits", "retry-failed": "revisits",
}

// groupedCommands print their flags by group; the others print one list.
var groupedCommands = map[string]bool{"crawl": true, "master": true, "worker": true}

// commandExamples are the examples each command's help ends with (and the
// cobra Example field: man pages).
var commandExamples = map[string]string{
	"crawl": `  # one site, two links deep, one request a second per host
  spider crawl --max-depth 2 https://example.org/

  # flags may follow the seeds; stop after 1000 URLs, also write WARC files
  spider crawl https://example.org/ --max-pages 1000 --warc --data example-data

  # settings from a YAML file; a flag overrides the file
  spider crawl --config spider.yaml --delay 2s https://example.org/

  # one peer of a distributed crawl: the same command on every machine
  spider crawl --redis redis://10.0.0.5:6379/0 --node-id n1 https://example.org/`,
	"master": `  # the scheduling node of crawl "news", three links deep
  spider master --redis redis://10.0.0.5:6379/0 --crawl news --max-depth 3 https://example.org/

  # settings from a file; the workers receive them through Redis
  spider master --redis redis://10.0.0.5:6379/0 --crawl news --config spider.yaml https://example.org/

  # then, on every fetching machine
  spider worker --redis redis://10.0.0.5:6379/0 --crawl news --data /var/spider

  # and, from anywhere, the progress
  spider status --redis redis://10.0.0.5:6379/0 --crawl news`,
	"worker": `  # fetch for crawl "news" with 64 workers into /var/spider
  spider worker --redis redis://10.0.0.5:6379/0 --crawl news --data /var/spider --concurrency 64`,
	"center": `  # the center of network n1 named in protocol.yaml
  spider center --protocol-config protocol.yaml --network n1`,
	"status": `  spider status --redis redis://10.0.0.5:6379/0 --crawl news
  spider status --data spider-data --json`,
	"crawls": `  spider crawls --redis redis://10.0.0.5:6379/0
  spider crawls --redis redis://10.0.0.5:6379/0 --json`,
	"control": `  spider control --redis redis://10.0.0.5:6379/0 --crawl news pause
  spider control --redis redis://10.0.0.5:6379/0 --crawl news resume
  spider control --redis redis://10.0.0.5:6379/0 --crawl news seed https://example.org/new/
  # every node finishes what it fetches and exits 0; run them again to resume
  spider control --redis redis://10.0.0.5:6379/0 --crawl news stop`,
	"drop": `  # remove a finished crawl's keys
  spider drop --redis redis://10.0.0.5:6379/0 --crawl news

  # let Redis remove them in a day
  spider drop --redis redis://10.0.0.5:6379/0 --crawl news --after 24h`,
	"index": `  # build (or bring up to date) the index of a crawl
  spider index --data spider-data`,
	"search": `  spider search --data spider-data "polite crawler"
  spider search --data spider-data --limit 20 --page 2 --json "polite crawler"`,
	"rank": `  spider rank --data spider-data
  spider rank --data spider-data --top 20`,
	"serve": `  # the search page, dashboard and API of a crawl on port 8080 of this machine
  spider serve --data spider-data --addr 127.0.0.1:8080`,
	"stats":  `  spider stats --data spider-data --json`,
	"export": `  spider export --data spider-data --format warc --out crawl.warc.gz`,
	"fsck": `  # check, then repair if damage was found
  spider fsck --data spider-data
  spider fsck --data spider-data --repair`,
	"robots": `  spider robots --robots robots.txt --agent spider --url https://example.org/private/`,
}

// writeHelp prints a command's help: the synopsis (usage line and what the
// command does), its flags (by group for groupedCommands), its examples.
// Each flag takes two lines: "  --name type" and its help text with the
// default. docgen_test.go parses this format into docs/configuration.md.
func writeHelp(w io.Writer, name, synopsis string, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: spider %s\n", synopsis)
	grouped := map[string][]*pflag.Flag{}
	var order []string
	if groupedCommands[name] {
		annotateGroups(fs)
		for _, g := range flagGroups {
			order = append(order, g.key)
		}
	}
	order = append(order, "")
	fs.VisitAll(func(f *pflag.Flag) {
		if r, ok := rangeOf(fs, f); ok && !flagRangeRE.MatchString(f.Usage) {
			f.Usage += " (" + r.helpText(f) + ")"
		}
		g := ""
		if groupedCommands[name] {
			if v := f.Annotations[flagGroupKey]; len(v) > 0 {
				g = v[0]
			}
		}
		grouped[g] = append(grouped[g], f)
	})
	for _, g := range order {
		flags := grouped[g]
		if len(flags) == 0 {
			continue
		}
		if groupedCommands[name] {
			byMode(fs, flags)
		}
		heading := "Flags"
		switch {
		case g != "":
			heading = groupHeading(g)
		case groupedCommands[name]:
			heading = "Other flags"
		}
		fmt.Fprintf(w, "\n%s:\n", heading)
		for _, f := range flags {
			writeFlag(w, f)
		}
	}
	if ex := commandExamples[name]; ex != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", ex)
	}
}

// byMode orders the flags of one help group, which come sorted by name: the
// flags every mode takes first, as they are, then each mode's flags
// together (modeOrder), in the order its bind registers them (bindMode).
func byMode(fs *pflag.FlagSet, flags []*pflag.Flag) {
	registered := map[*pflag.Flag]int{}
	sorted := fs.SortFlags
	fs.SortFlags = false
	fs.VisitAll(func(f *pflag.Flag) { registered[f] = len(registered) })
	fs.SortFlags = sorted
	slices.SortStableFunc(flags, func(a, b *pflag.Flag) int {
		ra, rb := modeRank(a), modeRank(b)
		if ra != rb || ra == 0 {
			return cmp.Compare(ra, rb)
		}
		return cmp.Compare(registered[a], registered[b])
	})
}

// groupHeading is the heading of group key.
func groupHeading(key string) string {
	for _, g := range flagGroups {
		if g.key == key {
			return g.heading
		}
	}
	return key
}

// annotateGroups marks each flag of fs with its help group (flagGroupOf).
func annotateGroups(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if g, ok := flagGroupOf[f.Name]; ok {
			_ = fs.SetAnnotation(f.Name, flagGroupKey, []string{g})
		}
	})
}

// writeFlag prints one flag: "  --name type", then its help text and its
// default, if that is not the zero value.
func writeFlag(w io.Writer, f *pflag.Flag) {
	typ, usage := pflag.UnquoteUsage(f)
	line := "  --" + f.Name
	if f.Shorthand != "" {
		line = "  -" + f.Shorthand + ", --" + f.Name
	}
	if typ != "" {
		line += " " + typ
	}
	if def := flagDefault(f); def != "" {
		usage += " (default " + def + ")"
	}
	fmt.Fprintf(w, "%s\n      %s\n", line, usage)
}

// flagDefault is how help shows a flag's default: "" for a zero value,
// quoted for strings.
func flagDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return ""
	}
	if f.Value.Type() == "string" {
		if _, isList := f.Value.(listFlag); !isList {
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return f.DefValue
}

// rootHelp is "spider --help": the commands and how to learn more.
func rootHelp(w io.Writer) {
	fmt.Fprintf(w, `spider — a polite, resumable web crawler.

Usage:
  spider <command> [flags] [arguments]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Run "spider help <command>" (or "spider <command> -h") for a command's flags;
flags may come before or after the arguments. "spider --version" prints the
version. Example:
  spider crawl --max-depth 2 https://example.org/
`)
}
