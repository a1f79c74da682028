package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestCompletionScripts: "spider completion SHELL" prints a script for
// bash, zsh and fish (cobra's generators); bash parses the bash one
// (bash -n), and zsh and fish theirs where installed. Another shell is a
// usage error.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runCLI(t, "completion", sh)
		if code != 0 || !strings.Contains(out, "__complete") || errOut != "" {
			t.Fatalf("completion %s: exit %d, %d bytes, stderr %q", sh, code, len(out), errOut)
		}
		bin, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s is not installed: its script is not parsed", sh)
			continue
		}
		path := filepath.Join(t.TempDir(), "spider."+sh)
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command(bin, "-n", path).CombinedOutput(); err != nil {
			t.Errorf("%s -n rejects the script: %v\n%s", sh, err, msg)
		}
	}
	if code, _, errOut := runCLI(t, "completion", "tcsh"); code != 2 || !strings.Contains(errOut, "bash, zsh or fish") {
		t.Errorf("completion tcsh: exit %d, stderr %q; want 2 naming the shells", code, errOut)
	}
	if code, _, errOut := runCLI(t, "completion"); code != 2 || strings.Count(errOut, "\n") != 1 {
		t.Errorf("completion without a shell: exit %d, stderr %q; want 2 and one line", code, errOut)
	}
}

// TestCompletionInBash sources the bash script in a real bash and asks it
// to complete "spider cr" and "spider crawl --max-d" as Tab would (the
// script runs the spider binary's __complete command).
func TestCompletionInBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	bin := buildSpider(t)
	_, script, _ := runCLI(t, "completion", "bash")
	path := filepath.Join(t.TempDir(), "spider.bash")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{
		"spider cr":             "crawl",
		"spider crawl --max-d":  "--max-depth",
		"spider crawl --scope ": "domain",
		"spider help se":        "serve",
	} {
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		// spider is a function calling the binary: the script runs "spider
		// __complete …". Without the bash-completion package, a minimal
		// _get_comp_words_by_ref stands in for its.
		prog := `spider() { "$SPIDER_BIN" "$@"; }
[ -r /usr/share/bash-completion/bash_completion ] && source /usr/share/bash-completion/bash_completion
declare -F _get_comp_words_by_ref >/dev/null || _get_comp_words_by_ref() {
	cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
}
source "$SCRIPT"
COMP_WORDS=(` + quoteWords(words) + `)
COMP_CWORD=$((${#COMP_WORDS[@]}-1))
COMP_LINE="$LINE"; COMP_POINT=${#COMP_LINE}
__start_spider spider
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
		cmd.Env = append(os.Environ(), "SPIDER_BIN="+bin, "SCRIPT="+path, "LINE="+line)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%q: bash: %v\n%s", line, err, out)
			continue
		}
		if !slices.Contains(strings.Fields(string(out)), want) {
			t.Errorf("%q completes to %q, want %s among them", line, out, want)
		}
	}
}

// quoteWords quotes words for a bash array.
func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// TestCompleteNames: the hidden __complete command the scripts call lists
// the commands, a command's flag names and a flag's values.
func TestCompleteNames(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "cr"}, "crawl"},
		{[]string{"__complete", "crawl", "--max-d"}, "--max-depth"},
		{[]string{"__complete", "crawl", "https://a.test/", "--lo"}, "--log-level"},
		{[]string{"__complete", "master", "--worker-t"}, "--worker-ttl"},
		{[]string{"__complete", "crawl", "--scope", ""}, "domain"},
		{[]string{"__complete", "export", "--format", ""}, "warc"},
		{[]string{"__complete", "help", "ex"}, "export"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		var names []string
		for _, l := range strings.Split(out, "\n") {
			name, _, _ := strings.Cut(l, "\t")
			names = append(names, name)
		}
		if code != 0 || !slices.Contains(names, tc.want) {
			t.Errorf("%q: exit %d, completions %q (stderr %q), want %s among them", tc.args, code, names, errOut, tc.want)
		}
	}
}

// TestManPages: "spider man --out DIR" writes spider.1 and one page per
// command; groff parses each without a warning, and the crawl page names
// its flags. Without --out it is a usage error. (groff -k: the pages are
// UTF-8, read through preconv as man does.)
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	code, out, errOut := runCLI(t, "man", "--out", dir)
	if code != 0 {
		t.Fatalf("man: exit %d\n%s", code, errOut)
	}
	want := []string{"spider.1"}
	for _, c := range commands {
		want = append(want, "spider-"+c.name+".1")
	}
	got, _ := filepath.Glob(filepath.Join(dir, "*"))
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("man pages %q, want %q (stdout %q)", got, want, out)
	}
	groff, gerr := exec.LookPath("groff")
	for _, name := range got {
		page, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(page), ".nh\n.TH ") || !strings.Contains(string(page), ".SH NAME") {
			t.Errorf("%s is not a man page:\n%.200s", name, page)
		}
		if gerr != nil {
			continue
		}
		msg, err := exec.Command(groff, "-k", "-man", "-Tutf8", "-z", "-ww", filepath.Join(dir, name)).CombinedOutput()
		if err != nil || len(msg) > 0 {
			t.Errorf("groff on %s: %v\n%s", name, err, msg)
		}
	}
	crawlPage, _ := os.ReadFile(filepath.Join(dir, "spider-crawl.1"))
	for _, f := range []string{"max-depth", "concurrency", "redis"} {
		if !strings.Contains(string(crawlPage), `\fB--`+f+`\fP`) {
			t.Errorf("spider-crawl.1 does not list --%s", f)
		}
	}
	if code, _, errOut := runCLI(t, "man"); code != 2 || !strings.Contains(errOut, "--out") {
		t.Errorf("man without --out: exit %d, stderr %q", code, errOut)
	}
}

// TestHelpGroups: "spider crawl -h" and "spider master -h" print every flag
// under one of the groups (none under "Other flags"), the groups in their
// order, and end with 3 or 4 examples; "help CMD", "CMD -h" and "CMD
// --help" print the same, on stdout.
func TestHelpGroups(t *testing.T) {
	for _, cmd := range []string{"crawl", "master"} {
		code, help, errOut := runCLI(t, cmd, "-h")
		if code != 0 || errOut != "" {
			t.Fatalf("%s -h: exit %d, stderr %q", cmd, code, errOut)
		}
		if strings.Contains(help, "\nOther flags:") {
			t.Errorf("%s -h has flags in no group: give them one in help.go's flagGroupOf", cmd)
		}
		last := -1
		for _, g := range flagGroups {
			i := strings.Index(help, "\n"+g.heading+":\n")
			if i < 0 {
				t.Errorf("%s -h lacks the group %q", cmd, g.heading)
				continue
			}
			if i < last {
				t.Errorf("%s -h: group %q out of order", cmd, g.heading)
			}
			last = i
		}
		_, examples, ok := strings.Cut(help, "\nExamples:\n")
		if n := strings.Count(examples, "\n  spider "); !ok || n < 3 || n > 4 {
			t.Errorf("%s -h: %d examples, want 3 or 4", cmd, n)
		}
		for _, args := range [][]string{{"help", cmd}, {cmd, "--help"}, {cmd, "-help"}} {
			code, out, errOut := runCLI(t, args...)
			if code != 0 || out != help || errOut != "" {
				t.Errorf("%q: exit %d, stderr %q, stdout differs from %s -h: %v", args, code, errOut, cmd, out != help)
			}
		}
	}
	// Every command has help on stdout, and every flag in it has a help text.
	for _, c := range commands {
		code, out, errOut := runCLI(t, c.name, "--help")
		if code != 0 || errOut != "" || out == "" {
			t.Errorf("%s --help: exit %d, stdout %d bytes, stderr %q", c.name, code, len(out), errOut)
		}
	}
}

// TestParseErrors: an unparseable, overflowing or missing flag value, and
// an unknown flag, are usage errors (exit 2) on one line that names the
// flag, its range when it has one, and "spider CMD -h".
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"crawl", "--max-depth", "two", "http://a.test/"}, []string{"--max-depth", "integer", "range -1 to 1000"}},
		{[]string{"crawl", "http://a.test/", "--max-depth=99999999999999999999"}, []string{"--max-depth", "range -1 to 1000"}},
		{[]string{"crawl", "--concurrency", "1e3", "http://a.test/"}, []string{"--concurrency", "range 1 to 10000"}},
		{[]string{"crawl", "--expected-urls", "-1", "http://a.test/"}, []string{"--expected-urls", "at least 1"}},
		{[]string{"crawl", "--fp-rate", "tiny", "http://a.test/"}, []string{"--fp-rate", "range 1e-12 to 0.5"}},
		{[]string{"crawl", "--max-rate", "fast", "http://a.test/"}, []string{"--max-rate", "at most 20000"}},
		{[]string{"crawl", "--delay", "soon", "http://a.test/"}, []string{"--delay", "duration", "range 0 to 1h"}},
		{[]string{"crawl", "--warc=maybe", "http://a.test/"}, []string{"--warc", "true or false"}},
		{[]string{"crawl", "http://a.test/", "--timeout"}, []string{"--timeout", "needs a value"}},
		{[]string{"crawl", "--max-detph", "2", "http://a.test/"}, []string{"--max-detph", "did you mean --max-depth?"}},
		{[]string{"crawl", "-max-detph", "2", "http://a.test/"}, []string{"-max-detph", "did you mean --max-depth?"}},
		{[]string{"crawl", "--colour", "http://a.test/"}, []string{"--colour", "no such flag"}},
		{[]string{"master", "--worker-ttl", "long", "http://a.test/"}, []string{"--worker-ttl", "duration", "spider master -h"}},
		{[]string{"worker", "--memory-budget", "lots"}, []string{"--memory-budget", "range 1000 to 1000000000"}},
		{[]string{"serve", "--cache-size", "big"}, []string{"--cache-size", "integer", "spider serve -h"}},
		{[]string{"index", "--workers", "x"}, []string{"--workers", "spider index -h"}},
		{[]string{"search", "--limit", "ten", "q"}, []string{"--limit"}},
		{[]string{"rank", "--damping", "high"}, []string{"--damping", "a number"}},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || len(lines) != 1 || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and one line", tc.args, code, out, errOut)
			continue
		}
		for _, w := range append(tc.want, "spider "+tc.args[0]+" -h") {
			if !strings.Contains(lines[0], w) {
				t.Errorf("%q: %q does not say %q", tc.args, lines[0], w)
			}
		}
	}
}

// TestNormaliseArgs: old single-dash long flags become two-dash ones when
// the command has them; values, one-letter flags, unknown names and
// everything after "--" are left alone.
func TestNormaliseArgs(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Int("max-depth", 5, "")
	fs.Bool("quiet", false, "")
	fs.String("user-agent", "", "")
	for _, tc := range []struct{ in, want []string }{
		{[]string{"-max-depth", "2", "u"}, []string{"--max-depth", "2", "u"}},
		{[]string{"-max-depth=2", "-quiet"}, []string{"--max-depth=2", "--quiet"}},
		{[]string{"-user-agent", "-quiet"}, []string{"--user-agent", "-quiet"}}, // a value stays
		{[]string{"--user-agent", "-max-depth"}, []string{"--user-agent", "-max-depth"}},
		{[]string{"-quiet", "-max-depth", "-1"}, []string{"--quiet", "--max-depth", "-1"}},
		{[]string{"-h", "-help", "-x", "-nope"}, []string{"-h", "--help", "-x", "-nope"}},
		{[]string{"u", "--", "-quiet"}, []string{"u", "--", "-quiet"}},
	} {
		if got := normaliseArgs(fs, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("normaliseArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// End to end: the old spelling sets the flag (its range check answers).
	code, _, errOut := runCLI(t, "crawl", "-data", filepath.Join(t.TempDir(), "d"), "-max-depth", "-2", "-quiet", "http://a.test/")
	if code != 2 || !strings.Contains(errOut, "max-depth") {
		t.Errorf("-max-depth -2: exit %d, stderr %q; want the range error of --max-depth", code, errOut)
	}
}

// TestFlagsOf: the cobra tree knows every command's flags from its run
// function (flagsOf), so completion and man pages cannot miss one.
func TestFlagsOf(t *testing.T) {
	for _, c := range commands {
		fs, synopsis := flagsOf(c)
		if c.name == "version" {
			continue
		}
		if fs == nil || !strings.HasPrefix(synopsis, c.name) {
			t.Errorf("%s: no flag set or synopsis %q from its run function", c.name, synopsis)
			continue
		}
		_, help, _ := runCLI(t, c.name, "-h")
		fs.VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(help, "\n  --"+f.Name) {
				t.Errorf("%s: --%s is not in its help", c.name, f.Name)
			}
		})
	}
}

// TestFlagRangeTable: every flagRanges entry refuses a value just below
// its range and one above it with exit 2, one line naming the flag, the
// range and "spider CMD -h", before anything is created; and its help
// states the range.
func TestFlagRangeTable(t *testing.T) {
	for key, r := range flagRanges {
		cmd, name, _ := strings.Cut(key, "/")
		fs, _ := flagsOf(commandNamed(t, cmd))
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flagRanges has %s, which spider %s does not define", key, cmd)
			continue
		}
		below, above := r.min-1, r.max*2+1
		if r.hasSpecial && below == r.special {
			below = r.min - 0.5
		}
		vals := []string{strconv.FormatFloat(below, 'f', -1, 64), strconv.FormatFloat(above, 'f', -1, 64)}
		if f.Value.Type() == "duration" {
			vals = []string{time.Duration(r.min - 1).String(), time.Duration(r.max + float64(time.Hour)).String()}
		} else if f.Value.Type() == "int" {
			vals = []string{strconv.Itoa(int(r.min) - 1), strconv.Itoa(int(r.max) + 1)}
		}
		if r.noMin {
			vals = vals[1:] // the command checks the lower bound (its own tests)
		}
		for _, v := range vals {
			data := filepath.Join(t.TempDir(), "data")
			args := []string{cmd, "--data", data, "--" + name, v}
			switch cmd {
			case "crawl":
				args = append(args, "http://a.test/")
			case "search":
				args = append(args, "query")
			case "status":
				args = []string{cmd, "--redis", "redis://127.0.0.1:1/0", "--" + name, v}
			}
			code, _, errOut := runCLI(t, args...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "--"+name) ||
				!strings.Contains(lines[0], r.text(f)) || !strings.Contains(lines[0], "spider "+cmd+" -h") {
				t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2 and one line naming --%s and %q", args, code, errOut, name, r.text(f))
			}
			if _, err := os.Stat(data); err == nil {
				t.Errorf("%q: the data directory was created before the flags were checked", args)
			}
		}
		if _, help, _ := runCLI(t, cmd, "-h"); !strings.Contains(help, r.text(f)) {
			t.Errorf("spider %s -h does not state the range of --%s (%s)", cmd, name, r.text(f))
		}
	}
}

// commandNamed returns the command called name.
func commandNamed(t *testing.T, name string) command {
	t.Helper()
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no command %q", name)
	return command{}
}
