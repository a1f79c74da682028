// Command testsum reads `go test -json` on standard input and prints one
// line per package, the output of every failed test, and a closing
// "N passed, N failed, N skipped" line. It exits 1 if anything failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	out := map[string]*strings.Builder{} // package/test → output
	var passed, failed, skipped int
	var failedNames []string
	pkgFailed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Println(sc.Text()) // build errors arrive as plain text
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "build-output":
			fmt.Print(e.Output)
		case "build-fail":
			pkgFailed = true
		case "output":
			b := out[key]
			if b == nil {
				b = &strings.Builder{}
				out[key] = b
			}
			if b.Len() < 64<<10 {
				b.WriteString(e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				status := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "--  "}[e.Action]
				fmt.Printf("%s %s (%.1fs)\n", status, e.Package, e.Elapsed)
				if e.Action == "fail" {
					pkgFailed = true
					if b := out[key]; b != nil {
						fmt.Print(indent(b.String()))
					}
				}
				continue
			}
			if strings.Contains(e.Test, "/") {
				// Subtests are counted by their parent; a failed one's output
				// is shown, since the parent's output does not include it.
				if e.Action == "fail" {
					if b := out[key]; b != nil {
						fmt.Printf("--- FAIL %s.%s\n%s", e.Package, e.Test, indent(b.String()))
					}
				}
				delete(out, key)
				continue
			}
			switch e.Action {
			case "pass":
				passed++
			case "skip":
				skipped++
			case "fail":
				failed++
				failedNames = append(failedNames, e.Package+"."+e.Test)
				if b := out[key]; b != nil {
					fmt.Printf("--- FAIL %s.%s\n%s", e.Package, e.Test, indent(b.String()))
				}
			}
			delete(out, key)
		}
	}
	sort.Strings(failedNames)
	for _, n := range failedNames {
		fmt.Println("failed:", n)
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 || pkgFailed {
		os.Exit(1)
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n") + "\n"
}
