package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// modeOfDocRow names the mode of each row of docs/cli.md's "Flags by mode"
// table.
var modeOfDocRow = map[string]string{
	"Redis connection": modeRedis,
	"peer-to-peer":     modePeer,
	"master–worker":    modeMaster,
	"§0 protocol host": modeProtocol,
	"layered":          modeLayered,
	"topics":           modeTopics,
	"single node":      modeSingle,
}

// modeFlags are the flags each mode binds (bindMode) in spider crawl,
// master and worker, in the order they are bound, and the help group of
// each mode.
func modeFlags(t *testing.T) (map[string][]string, map[string]string) {
	t.Helper()
	flags, groups := map[string][]string{}, map[string]string{}
	for _, c := range commands {
		if !groupedCommands[c.name] {
			continue
		}
		fs, _ := flagsOf(c)
		if fs == nil {
			t.Fatalf("spider %s defines no flags", c.name)
		}
		fs.SortFlags = false
		fs.VisitAll(func(f *pflag.Flag) {
			mode := f.Annotations[flagModeKey]
			_, core := flagGroupOf[f.Name]
			switch {
			case len(mode) == 0 && !core:
				t.Errorf("spider %s --%s has neither a mode (bindMode) nor a group in flagGroupOf", c.name, f.Name)
				return
			case len(mode) == 0:
				return
			case core:
				t.Errorf("spider %s --%s is bound by mode %s and also listed in flagGroupOf: give it one place", c.name, f.Name, mode[0])
			}
			if modeRank(f) == 0 {
				t.Errorf("spider %s --%s: mode %q is not in modeOrder", c.name, f.Name, mode[0])
			}
			if !slices.Contains(flags[mode[0]], f.Name) {
				flags[mode[0]] = append(flags[mode[0]], f.Name)
			}
			g := f.Annotations[flagGroupKey][0]
			if old, ok := groups[mode[0]]; ok && old != g {
				t.Errorf("mode %s has flags in groups %s and %s", mode[0], old, g)
			}
			groups[mode[0]] = g
		})
	}
	return flags, groups
}

var (
	modeDocFlagRE  = regexp.MustCompile("`(--[a-z-]+)`")
	modeDocGroupRE = regexp.MustCompile(`\(([a-z]+)\) \|$`)
)

// TestFlagsByModeDoc: the "Flags by mode" table of docs/cli.md names every
// mode's flags as the code binds them, in help's order (the modes in
// modeOrder, each mode's flags in the order it binds them), with their
// help group; and every flag of spider crawl, master and worker belongs to
// either a mode or a group of flagGroupOf, not both.
func TestFlagsByModeDoc(t *testing.T) {
	want, groups := modeFlags(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Flags by mode\n")
	if !ok {
		t.Fatal("docs/cli.md has no section \"Flags by mode\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var order []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 3 {
			continue
		}
		label := strings.TrimPrefix(cells[0], "| ")
		mode, ok := modeOfDocRow[label]
		if !ok {
			if label != "mode" {
				t.Errorf("docs/cli.md: the row %q names no mode of the code; teach modeOfDocRow", label)
			}
			continue
		}
		order = append(order, mode)
		var got []string
		for _, m := range modeDocFlagRE.FindAllStringSubmatch(cells[2], -1) {
			got = append(got, strings.TrimPrefix(m[1], "--"))
		}
		if !slices.Equal(got, want[mode]) {
			t.Errorf("docs/cli.md: mode %s lists %q; the code binds %q", label, got, want[mode])
		}
		if m := modeDocGroupRE.FindStringSubmatch(line); m == nil || m[1] != groups[mode] {
			t.Errorf("docs/cli.md: mode %s: the row ends %q; the code's help group is (%s)", label, line[max(0, len(line)-20):], groups[mode])
		}
	}
	if !slices.Equal(order, modeOrder) {
		t.Errorf("docs/cli.md lists the modes %q; help's order is %q", order, modeOrder)
	}
}
