package main

// The command tree is spf13/cobra with pflag (what kubectl, hugo and the
// docker CLI use): it finds the command, answers "help CMD", --version and
// shell completion (the hidden __complete command the completion scripts
// call), and generates the man pages. It does not parse a command's flags:
// each command's run function defines them on a pflag.FlagSet and parses
// them itself (parseArgs), because its flags' defaults come from the
// --config file, which must be read before the flags are defined, and
// because the tests call run functions directly. cobra learns each
// command's flags from that same definition (flagsOf), for completion,
// man pages and help, so there is one definition of every flag.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// ranCommand records which spider command the tree ran and its error, for
// the exit code.
type ranCommand struct {
	name string
	err  error
}

// isCompletion reports whether args are a completion request of the
// shell scripts (cobra's hidden __complete commands).
func isCompletion(args []string) bool {
	return len(args) > 0 && strings.HasPrefix(args[0], "__complete")
}

// flagCapture is the flagSink flagsOf gives a run function.
type flagCapture struct {
	io.Writer
	fs       *pflag.FlagSet
	synopsis string
}

func (c *flagCapture) takeFlags(fs *pflag.FlagSet, synopsis string) {
	if c.fs == nil {
		c.fs, c.synopsis = fs, synopsis
	}
}

// flagsOf returns the flag set and synopsis a command's run function
// defines: it runs the function with --help, which (as "spider CMD -h"
// always did) returns after the flags are defined and before any work.
// A command without flags (version) returns nil.
func flagsOf(c command) (*pflag.FlagSet, string) {
	capture := &flagCapture{Writer: io.Discard}
	_ = c.run(context.Background(), []string{"--help"}, io.Discard, capture)
	return capture.fs, capture.synopsis
}

// flagValues are the values of the flags that take one of a few words,
// offered by shell completion.
var flagValues = map[string][]string{
	"scope":      {"host", "domain", "seeds", "regexp", "any"},
	"seen":       {"exact", "bloom"},
	"delay-from": {"done", "start"},
	"mode":       {"normal", "layered"},
	"dedup":      {"bucket", "protocol"},
	"log-level":  {"debug", "info", "warn", "error"},
	"format":     {"jsonl", "warc"},
	"preload":    {"background", "wait", "off"},
}

// newRootCommand builds the command tree. Commands write to stdout and
// stderr; ran receives the spider command that ran and its error. With
// completing, cobra parses the flags (to complete a flag's value); else
// each command parses its own (see the top of this file).
func newRootCommand(stdout, stderr io.Writer, ran *ranCommand, completing bool) *cobra.Command {
	root := &cobra.Command{
		Use:           "spider",
		Short:         "a polite, resumable web crawler and search engine",
		Long:          "spider crawls the web politely (resumable, single node or distributed over Redis), builds a search index and serves it.",
		Version:       version,
		SilenceUsage:  true, // run prints the errors and maps them to exit codes
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rootHelp(stdout)
			return nil
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true // "spider completion" is ours, in the commands table
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("spider {{.Version}}\n")
	byName := map[string]command{}
	for _, c := range commands {
		byName[c.name] = c
		fs, synopsis := flagsOf(c)
		use, long, _ := strings.Cut(synopsis, "\n")
		if use == "" {
			use = c.name
		}
		cc := &cobra.Command{
			Use:                use,
			Short:              c.summary,
			Long:               strings.TrimSpace(long),
			Example:            commandExamples[c.name],
			DisableFlagParsing: !completing,
			ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveNoFileComp // seeds, queries: nothing to complete
			},
		}
		if fs != nil {
			if groupedCommands[c.name] {
				annotateGroups(fs)
			}
			cc.Flags().AddFlagSet(fs)
			fs.VisitAll(func(f *pflag.Flag) {
				if vals, ok := flagValues[f.Name]; ok {
					_ = cc.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp))
				} else if f.Name == "data" || f.Name == "out" && c.name == "man" {
					_ = cc.MarkFlagDirname(f.Name)
				}
			})
		}
		cc.RunE = func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext()
			defer stop()
			errw := stderr
			if wantsHelp(args) {
				errw = stdout // asked-for help is output, not an error
			}
			ran.name = c.name
			ran.err = c.run(ctx, args, stdout, errw)
			if errors.Is(ran.err, pflag.ErrHelp) {
				return nil // printed already; cobra would print its help again
			}
			return ran.err
		}
		root.AddCommand(cc)
	}
	// Help: "spider --help" lists the commands; a command's help is what its
	// run function prints for --help, the same as "spider CMD -h".
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root {
			rootHelp(stdout)
			return
		}
		if c, ok := byName[cmd.Name()]; ok && cmd.Parent() == root {
			_ = c.run(context.Background(), []string{"--help"}, stdout, stdout)
			return
		}
		defaultHelp(cmd, args)
	})
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "show a command's help",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				rootHelp(stdout)
				return nil
			}
			target, _, err := root.Find(args)
			if err != nil || target == root || target.Name() != args[0] {
				return fmt.Errorf("unknown command %q", args[0])
			}
			target.HelpFunc()(target, nil)
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			for _, c := range commands {
				names = append(names, c.name)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	})
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%v: the flags of spider itself are --help and --version; a command's flags follow its name", err)
	})
	return root
}

const completionSynopsis = `completion bash|zsh|fish

Prints the shell completion script for bash, zsh or fish: commands, flag
names and the values of flags such as --scope and --log-level complete with
Tab. To load it:

  bash:  source <(spider completion bash)      (needs bash-completion)
  zsh:   spider completion zsh > "${fpath[1]}/_spider"
  fish:  spider completion fish > ~/.config/fish/completions/spider.fish`

// runCompletion prints cobra's completion script for one shell.
func runCompletion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("completion", completionSynopsis, stderr)
	noDesc := fs.Bool("no-descriptions", false, "complete without the descriptions of commands and flags")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: give one shell: bash, zsh or fish", errUsage)
	}
	root := newRootCommand(io.Discard, io.Discard, &ranCommand{}, false)
	switch fs.Arg(0) {
	case "bash":
		return root.GenBashCompletionV2(stdout, !*noDesc)
	case "zsh":
		if *noDesc {
			return root.GenZshCompletionNoDesc(stdout)
		}
		return root.GenZshCompletion(stdout)
	case "fish":
		return root.GenFishCompletion(stdout, !*noDesc)
	}
	return fmt.Errorf("%w: no completion for shell %q: give bash, zsh or fish", errUsage, fs.Arg(0))
}

const manSynopsis = `man --out DIR

Writes the man pages of spider and of each command (spider.1,
spider-crawl.1, …) into DIR, generated from the commands' flags and help
(github.com/spf13/cobra/doc). Read one with "man -l DIR/spider-crawl.1", or
put DIR on MANPATH.`

// runMan writes the man pages.
func runMan(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("man", manSynopsis, stderr)
	out := fs.String("out", "", "directory to write the pages into (created if missing)")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: man takes no arguments, got %q: give the directory with --out DIR", errUsage, fs.Args())
	}
	if *out == "" {
		return fmt.Errorf("%w: give --out DIR, the directory to write the man pages into", errUsage)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("cannot create the --out directory: %w", err)
	}
	root := newRootCommand(io.Discard, io.Discard, &ranCommand{}, false)
	root.DisableAutoGenTag = true // no "Auto generated by" line
	for _, c := range root.Commands() {
		c.DisableAutoGenTag = true
	}
	header := &doc.GenManHeader{Title: "SPIDER", Section: "1", Source: "spider " + version, Manual: "spider manual"}
	if err := doc.GenManTree(root, header, *out); err != nil {
		return fmt.Errorf("cannot write the man pages into %s: %w", *out, err)
	}
	n, _ := filepath.Glob(filepath.Join(*out, "spider*.1"))
	fmt.Fprintf(stdout, "wrote %d man pages into %s\n", len(n), *out)
	return nil
}
