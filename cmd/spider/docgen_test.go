package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/configuration.md from the flag definitions")

// configurationDocPath is the generated configuration reference.
var configurationDocPath = filepath.Join("..", "..", "docs", "configuration.md")

// TestConfigurationDoc is a golden test: docs/configuration.md must be
// exactly what the subcommands' flag sets print with -h, so the reference
// cannot drift from the code. After changing a flag, regenerate it with
//
//	go test ./cmd/spider -run TestConfigurationDoc -update-docs
func TestConfigurationDoc(t *testing.T) {
	got := configurationDoc(t)
	if *updateDocs {
		if err := os.WriteFile(configurationDocPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(configurationDocPath)
	if err != nil {
		t.Fatalf("cannot read the configuration reference: %v; generate it with: go test ./cmd/spider -run TestConfigurationDoc -update-docs", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("docs/configuration.md line %d is stale:\n file: %q\n code: %q", i+1, w, g)
				break
			}
		}
		t.Errorf("docs/configuration.md does not match the flag definitions; regenerate it with: go test ./cmd/spider -run TestConfigurationDoc -update-docs")
	}
}

// docHelpOf runs "spider NAME -h" in-process and returns what it printed.
func docHelpOf(t *testing.T, name string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run([]string{name, "-h"}, &out, &errb); code != 0 {
		t.Fatalf("spider %s -h: exit %d: %s", name, code, errb.String())
	}
	return out.String() + errb.String()
}

// docFlag is one flag as "spider CMD -h" prints it; group is the heading
// it is printed under ("Flags" for the commands without groups).
type docFlag struct {
	name, typ, def, help, group string
}

var docDefaultRE = regexp.MustCompile(` \(default (.*)\)$`)

// docParseHelp splits -h output (help.go's writeHelp) into the text before
// the first flag heading and the flags: under a heading line ("Flags:",
// "Other flags:" or a group's heading), "  --name type" then its help on
// lines indented by six spaces; "Examples:" ends the flags.
func docParseHelp(t *testing.T, cmd, help string) (string, []docFlag) {
	t.Helper()
	headings := map[string]bool{"Flags:": true, "Other flags:": true}
	for _, g := range flagGroups {
		headings[g.heading+":"] = true
	}
	lines := strings.Split(help, "\n")
	first := len(lines)
	for i, line := range lines {
		if headings[line] {
			first = i
			break
		}
	}
	head := strings.Join(lines[:first], "\n")
	var flags []docFlag
	group := ""
	for _, line := range lines[first:] {
		if line == "Examples:" {
			break
		}
		switch {
		case line == "":
		case headings[line]:
			group = strings.TrimSuffix(line, ":")
		case strings.HasPrefix(line, "  --"):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "  --"), " ")
			flags = append(flags, docFlag{name: name, typ: strings.TrimSpace(typ), group: group})
		case strings.HasPrefix(line, "      ") && len(flags) > 0:
			f := &flags[len(flags)-1]
			f.help = strings.TrimSpace(f.help + " " + strings.TrimSpace(line))
		default:
			t.Fatalf("spider %s -h: cannot parse the flag line %q; teach docParseHelp its format", cmd, line)
		}
	}
	for i := range flags {
		if m := docDefaultRE.FindStringSubmatch(flags[i].help); m != nil {
			flags[i].def = m[1]
			flags[i].help = strings.TrimSuffix(flags[i].help, m[0])
		}
	}
	return strings.TrimSpace(strings.TrimPrefix(head, "Usage: ")), flags
}

// configurationDoc renders docs/configuration.md from every subcommand's
// -h output. Defaults that depend on the machine (the host name,
// GOMAXPROCS) or on the environment (SPIDER_REDIS…) are named, not shown.
func configurationDoc(t *testing.T) []byte {
	for _, v := range []string{"SPIDER_REDIS", "SPIDER_REDIS_CA", "SPIDER_TOKEN"} {
		t.Setenv(v, "")
	}
	host, _ := os.Hostname()
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)

	var b strings.Builder
	b.WriteString(`# Configuration reference

<!-- Generated from the flag definitions by TestConfigurationDoc (cmd/spider/docgen_test.go).
     Do not edit: change the flag, then run
     go test ./cmd/spider -run TestConfigurationDoc -update-docs -->

Every flag of every ` + "`spider`" + ` subcommand, with its default and its help text, exactly as
` + "`spider COMMAND -h`" + ` prints them. The crawl settings (the flags of ` + "`spider crawl`" + ` and
` + "`spider master`" + `) can also come from a YAML file given with ` + "`--config FILE`" + `: the keys are the
flag names with ` + "`_`" + ` for ` + "`-`" + `, and flags override the file ([crawling.md](crawling.md#configuration-file)).
Flags take two dashes and their value after a space or ` + "`=`" + ` (` + "`--data DIR`" + `, ` + "`--data=DIR`" + `), and may
come before or after the arguments; the old single-dash spelling (` + "`-data DIR`" + `) still works.

| command | what it does |
|---|---|
`)
	for _, c := range commands {
		if c.name == "version" {
			fmt.Fprintf(&b, "| `spider %s` | %s |\n", c.name, c.summary)
			continue
		}
		fmt.Fprintf(&b, "| [`spider %s`](#spider-%s) | %s |\n", c.name, c.name, c.summary)
	}
	for _, c := range commands {
		if c.name == "version" {
			continue
		}
		runtime.GOMAXPROCS(1)
		synopsis, flags := docParseHelp(t, c.name, docHelpOf(t, c.name))
		runtime.GOMAXPROCS(3)
		_, flags3 := docParseHelp(t, c.name, docHelpOf(t, c.name))
		runtime.GOMAXPROCS(procs)
		fmt.Fprintf(&b, "\n## spider %s\n\n```text\n%s\n```\n", c.name, synopsis)
		if len(flags) == 0 {
			continue
		}
		group := "\x00"
		for i, f := range flags {
			if f.group != group {
				group = f.group
				if group != "Flags" {
					fmt.Fprintf(&b, "\n**%s**\n", group)
				}
				b.WriteString("\n| flag | type | default | meaning |\n|---|---|---|---|\n")
			}
			def := f.def
			switch {
			case i < len(flags3) && flags3[i].def != f.def:
				def = "GOMAXPROCS (the usable CPUs)"
			case host != "" && def == fmt.Sprintf("%q", host):
				def = "this machine's host name"
			case def != "":
				def = "`" + def + "`"
			}
			typ := f.typ
			if typ == "" { // help names no type for booleans only
				typ = "bool"
			}
			fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", f.name, typ, def, docCell(f.help))
		}
	}
	return []byte(b.String())
}

// cell makes text safe inside a Markdown table cell.
func docCell(s string) string {
	if s == "" {
		return ""
	}
	return strings.NewReplacer("|", `\|`, "*", `\*`, "<", "&lt;").Replace(s)
}
