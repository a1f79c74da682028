package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spider-crawler/spider/internal/websim"
)

// docRepoRoot is the module root, seen from this package's directory.
var docRepoRoot = filepath.Join("..", "..")

// maxReadmeBytes bounds README.md (issue 20): the rest belongs in docs/.
const maxReadmeBytes = 12 * 1024

// TestReadmeSize fails when README.md grows past 12 KB.
func TestReadmeSize(t *testing.T) {
	fi, err := os.Stat(filepath.Join(docRepoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxReadmeBytes {
		t.Errorf("README.md is %d bytes, over the %d-byte bound: move the detail to a file under docs/ and link it", fi.Size(), maxReadmeBytes)
	}
}

// docFiles are the Markdown files users read: README.md, docs/*.md,
// ARCHITECTURE.md, RELIABILITY.md and bench/RESULTS.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "ARCHITECTURE.md", "RELIABILITY.md", filepath.Join("bench", "RESULTS.md")}
	more, err := filepath.Glob(filepath.Join(docRepoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("no docs/*.md found: the documentation moved out of README.md lives there")
	}
	for _, m := range more {
		rel, err := filepath.Rel(docRepoRoot, m)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	return files
}

// docSpecRE matches a citation of the SPEC, a document that does not ship
// with spider: docs/design.md explains those ideas instead.
var docSpecRE = regexp.MustCompile(`SPEC\s*§`)

// TestNoSpecCitations fails when a document or a string literal of this
// command (help, usage, messages) cites "SPEC §N".
func TestNoSpecCitations(t *testing.T) {
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join(docRepoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if docSpecRE.MatchString(line) {
				t.Errorf("%s:%d cites the SPEC, which does not ship: cite docs/design.md §N (a link to its section) instead: %q", f, i+1, line)
			}
		}
	}
	srcs, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, src := range srcs {
		if strings.HasSuffix(src, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, src, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			if docSpecRE.MatchString(s) {
				t.Errorf("%s: a string shown to users cites the SPEC, which does not ship: cite docs/design.md §N instead", fset.Position(lit.Pos()))
			}
			return true
		})
	}
}

// docLinkRE matches an inline Markdown link or image: [text](target).
var docLinkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinks fails when a relative link in README.md or docs/*.md names
// a file that does not exist or an anchor that is not a heading of its file.
func TestDocLinks(t *testing.T) {
	var files []string
	for _, f := range docFiles(t) {
		if f == "README.md" || strings.HasPrefix(f, "docs"+string(filepath.Separator)) {
			files = append(files, f)
		}
	}
	anchors := map[string]map[string]bool{} // file (from docRepoRoot) → its anchors
	anchorsOf := func(f string) (map[string]bool, error) {
		if a, ok := anchors[f]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(docRepoRoot, f))
		if err != nil {
			return nil, err
		}
		a := docHeadingAnchors(string(data))
		anchors[f] = a
		return a, nil
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(docRepoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range docOutsideCode(string(data)) {
			for _, m := range docLinkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
					if _, err := os.Stat(filepath.Join(docRepoRoot, dest)); err != nil {
						t.Errorf("%s:%d: the link %q names %s, which does not exist", f, i+1, target, dest)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					t.Fatal(err)
				}
				if !a[anchor] {
					t.Errorf("%s:%d: the link %q names the anchor #%s, which is not a heading of %s", f, i+1, target, anchor, dest)
				}
			}
		}
	}
}

// docOutsideCode returns the document's lines with those inside fenced code
// blocks blanked (so line numbers stay right).
func docOutsideCode(doc string) []string {
	lines := strings.Split(doc, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// docHeadingAnchors returns the anchors GitHub gives a document's headings:
// lower case, letters, digits, '-' and '_' kept, spaces made '-', every
// other character dropped; a repeated anchor gets -1, -2, …
func docHeadingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range docOutsideCode(doc) {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimLeft(l, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		slug := docSlugify(strings.TrimSpace(text))
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// docSlugify is GitHub's heading anchor rule (github-slugger). Link syntax in
// a heading keeps only its text.
func docSlugify(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestSlugify pins the anchor rule on headings the docs link to.
func TestSlugify(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"§0 The two-tier de-duplication protocol", "0-the-two-tier-de-duplication-protocol"},
		{"Search: `spider index` and `spider search`", "search-spider-index-and-spider-search"},
		{"spider crawl", "spider-crawl"},
		{"Mixed topology (PQ-MCSA; §0, §3 \"mixed\")", "mixed-topology-pq-mcsa-0-3-mixed"},
		{"Layered crawl ([design §2](design.md#x))", "layered-crawl-design-2"},
	} {
		if got := docSlugify(c.in); got != c.want {
			t.Errorf("docSlugify(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// docOtherPrograms are the other programs whose flags the docs quote: the
// synthetic web, the benchmarks and the scripts.
var docOtherPrograms = []string{"cmd/websim", "bench/peerbench", "bench/serveload", "bench/distbench", "scripts", "bench"}

// docFlagRE matches a flag quoted in the docs: --name, or --prefix-* for a
// family of flags.
var docFlagRE = regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9-]*)(\*?)`)

// docShellFlagRE matches a flag a shell script's case statement takes.
var docShellFlagRE = regexp.MustCompile(`(?m)^\s*(?:[^)\s]*\|)?--([a-z][a-z0-9-]*)[|)]`)

// docDeclaredFlags returns the flag names the Go files of dir declare
// (flag.String("name", …), fs.IntVar(&v, "name", …) and the like) and the
// flags its shell scripts take in a case statement.
func docDeclaredFlags(t *testing.T, dir string, into map[string]bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case strings.HasSuffix(e.Name(), ".sh"):
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range docShellFlagRE.FindAllStringSubmatch(string(data), -1) {
				into[m[1]] = true
			}
		case strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go"):
			file, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				arg := 0
				switch sel.Sel.Name {
				case "String", "Int", "Int64", "Uint", "Uint64", "Bool", "Duration", "Float64", "Func", "BoolFunc":
				case "StringVar", "IntVar", "Int64Var", "UintVar", "Uint64Var", "BoolVar", "DurationVar", "Float64Var", "Var", "TextVar":
					arg = 1
				default:
					return true
				}
				if len(call.Args) <= arg {
					return true
				}
				if lit, ok := call.Args[arg].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if name, err := strconv.Unquote(lit.Value); err == nil {
						into[name] = true
					}
				}
				return true
			})
		}
	}
}

// TestDocFlags fails when README.md or docs/*.md names a flag that neither
// a spider command (as its -h prints them) nor websim, a benchmark program
// or a script declares (issue 20: docs name only flags that exist).
func TestDocFlags(t *testing.T) {
	known := map[string]bool{"help": true, "version": true} // spider --help, spider --version (main.go)
	for _, c := range commands {
		if c.name == "version" {
			continue
		}
		_, flags := docParseHelp(t, c.name, docHelpOf(t, c.name))
		for _, f := range flags {
			known[f.name] = true
		}
	}
	for _, dir := range docOtherPrograms {
		docDeclaredFlags(t, filepath.Join(docRepoRoot, filepath.FromSlash(dir)), known)
	}
	web := flag.NewFlagSet("websim", flag.ContinueOnError) // websim's flags, its feature switches included
	websim.RegisterFlags(web)
	websim.RegisterTruthFlags(web)
	web.VisitAll(func(f *flag.Flag) { known[f.Name] = true })
	var files []string
	for _, f := range docFiles(t) {
		if f == "README.md" || strings.HasPrefix(f, "docs"+string(filepath.Separator)) {
			files = append(files, f)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(docRepoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range docFlagRE.FindAllStringSubmatch(line, -1) {
				name, family := m[1], m[2] == "*"
				if known[name] {
					continue
				}
				found := false
				if family || strings.HasSuffix(name, "-") {
					for k := range known {
						if strings.HasPrefix(k, name) {
							found = true
						}
					}
				}
				if !found {
					t.Errorf("%s:%d names --%s, which neither a spider command (spider CMD -h) nor websim, a benchmark or a script declares: fix the doc or the flag", f, i+1, name)
				}
			}
		}
	}
}

// docNameRE matches a document of the repository named in a message.
var docNameRE = regexp.MustCompile(`\b(?:docs/|bench/)?[A-Za-z][A-Za-z0-9_-]*\.md\b`)

// TestMessageFlags fails when a string of this command (help, usage, an
// error message) names a flag that no spider command has, or a Markdown
// document that does not exist.
func TestMessageFlags(t *testing.T) {
	known := map[string]bool{"help": true, "version": true} // spider --help, spider --version (main.go)
	for _, c := range commands {
		if c.name == "version" {
			continue
		}
		_, flags := docParseHelp(t, c.name, docHelpOf(t, c.name))
		for _, f := range flags {
			known[f.name] = true
		}
	}
	srcs, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, src := range srcs {
		if strings.HasSuffix(src, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, src, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			for _, m := range docFlagRE.FindAllStringSubmatch(s, -1) {
				if !known[m[1]] {
					t.Errorf("%s: a string names --%s, which no spider command has: fix the message or the flag", fset.Position(lit.Pos()), m[1])
				}
			}
			for _, doc := range docNameRE.FindAllString(s, -1) {
				if _, err := os.Stat(filepath.Join(docRepoRoot, filepath.FromSlash(doc))); err != nil {
					t.Errorf("%s: a string names %s, which does not exist: name a file under docs/", fset.Position(lit.Pos()), doc)
				}
			}
			return true
		})
	}
}
