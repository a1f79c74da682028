package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// badFlags is every crawl flag's out-of-range values: each must be a usage
// error (exit 2) with one line naming the flag, before anything is
// created on disk or any connection is made.
var badFlags = []struct {
	flag, value string
}{
	{"max-depth", "-2"},
	{"max-depth", "1001"},
	{"max-pages", "-1"},
	{"concurrency", "0"},
	{"concurrency", "-4"},
	{"concurrency", "10001"},
	{"per-host", "0"},
	{"per-host", "65"},
	{"delay", "-1s"},
	{"delay", "2h"},
	{"max-crawl-delay", "-1s"},
	{"retry-delay", "-1s"},
	{"retry-delay", "0s"},
	{"connect-timeout", "0s"},
	{"first-byte-timeout", "-5s"},
	{"timeout", "-1ms"},
	{"timeout", "2h"},
	{"max-body-bytes", "0"},
	{"max-body-bytes", "-1"},
	{"max-body-bytes", "1073741825"},
	{"max-redirects", "-1"},
	{"max-redirects", "51"},
	{"max-retries", "-1"},
	{"max-retries", "21"},
	{"near-dup-distance", "-1"},
	{"near-dup-distance", "5"},
	{"fp-rate", "0"},
	{"fp-rate", "1"},
	{"fp-rate", "NaN"},
	{"fp-rate", "-0.5"},
	{"expected-urls", "0"},
	{"expected-urls", "1000000000000000"},
	{"memory-budget", "10"},
	{"max-rate", "-1"},
	{"max-rate", "NaN"},
	{"user-agent", "spider/1\r\nX-Injected: yes"},
	{"user-agent", "spider/1\n"},
	{"user-agent", "spider\x00"},
	{"robots-agent", "spider\r"},
	{"delay-from", "middle"},
	{"seen", "perhaps"},
	{"scope", "planet"},
}

// otherBad are flags of one command beyond the crawl settings.
var otherBad = []struct {
	cmd, flag, value string
}{
	{"crawl", "weight", "0"},
	{"crawl", "weight", "1000000000"},
	{"crawl", "buckets", "-1"},
	{"crawl", "buckets", "0"},
	{"crawl", "buckets", "100000000"},
	{"crawl", "allowed-hosts", "evil host"},
	{"master", "max-inflight", "-1"},
	{"master", "max-inflight", "2000000"},
	{"master", "worker-ttl", "-1s"},
	{"master", "worker-ttl", "1ms"},
}

// localBad are the flags spider worker takes (the local-only ones).
var localBad = map[string]bool{
	"concurrency": true, "connect-timeout": true, "first-byte-timeout": true, "timeout": true,
	"max-body-bytes": true, "memory-budget": true,
}

func TestFlagRanges(t *testing.T) {
	for _, cmd := range []string{"crawl", "master", "worker"} {
		cases := badFlags
		for _, o := range otherBad {
			if o.cmd == cmd {
				cases = append(cases, struct{ flag, value string }{o.flag, o.value})
			}
		}
		for _, b := range cases {
			if cmd == "worker" && !localBad[b.flag] {
				continue
			}
			t.Run(cmd+" --"+b.flag+" "+b.value, func(t *testing.T) {
				data := filepath.Join(t.TempDir(), "data")
				args := []string{cmd, "--data", data, "--" + b.flag, b.value}
				if cmd != "worker" {
					args = append(args, "http://a.test/")
				}
				if cmd != "crawl" {
					// validation comes first: this Redis is never dialled
					args = append([]string{cmd, "--redis", "redis://127.0.0.1:1/0"}, args[1:]...)
				}
				code, _, errOut := runCLI(t, args...)
				if code != 2 {
					t.Fatalf("exit %d, want 2 (usage error); stderr:\n%s", code, errOut)
				}
				lines := strings.Split(strings.TrimSpace(errOut), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], b.flag) {
					t.Fatalf("want one line naming %s, got:\n%s", b.flag, errOut)
				}
				if _, err := os.Stat(data); err == nil {
					t.Errorf("the data directory was created before the flags were checked")
				}
			})
		}
	}
}

// TestFlagRangesInHelp: every range-checked flag states its range (or its
// accepted values) in its help text.
func TestFlagRangesInHelp(t *testing.T) {
	_, help, _ := runCLI(t, "crawl", "-h")
	for _, f := range []string{"max-depth", "concurrency", "per-host", "delay", "max-crawl-delay", "retry-delay", "connect-timeout",
		"first-byte-timeout", "timeout", "max-body-bytes", "max-redirects", "max-retries", "fp-rate", "expected-urls", "memory-budget", "max-rate", "near-dup-distance"} {
		i := strings.Index(help, "\n  --"+f+" ") // "  --name type", then its help
		if i < 0 {
			t.Errorf("no -%s in the help", f)
			continue
		}
		text := help[i:]
		if j := strings.Index(text[2:], "\n  -"); j >= 0 {
			text = text[:j+1]
		}
		if !strings.Contains(text, "range") && !strings.Contains(text, "at most") && !strings.Contains(text, "at least") {
			t.Errorf("-%s help states no range: %q", f, text)
		}
	}
}

// TestServeAllowedHosts: spider serve answers its listening address and
// the --allowed-hosts names, and 421 to any other Host (DNS rebinding),
// over real HTTP on loopback.
func TestServeAllowedHosts(t *testing.T) {
	if code, _, errOut := runCLI(t, "serve", "--data", t.TempDir(), "--allowed-hosts", "bad host"); code != 2 || !strings.Contains(errOut, "--allowed-hosts") {
		t.Fatalf("a bad --allowed-hosts: exit %d\n%s", code, errOut)
	}
	p := startCommand(t, runServe, "--data", emptyCrawlDir(t), "--addr", "127.0.0.1:0", "--preload", "off",
		"--allowed-hosts", "search.example.org,*.intra.example", "--log-level", "error")
	for host, want := range map[string]int{
		strings.TrimPrefix(p.base, "http://"): 200,
		"localhost":                           200,
		"search.example.org":                  200,
		"x.intra.example":                     200,
		"rebind.attacker.example":             421,
	} {
		req, _ := http.NewRequest("GET", p.base+"/api/crawl", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want && !(want == 200 && resp.StatusCode == 503) {
			t.Errorf("Host %q: status %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestParseArgsInterspersed: flags may follow the arguments (as with wget
// and curl); "--" ends the flags; arguments keep their order.
func TestParseArgsInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		depth int
		quiet bool
		rest  []string
	}{
		{[]string{"--max-depth", "2", "http://a/"}, 2, false, []string{"http://a/"}},
		{[]string{"http://a/", "--max-depth", "2"}, 2, false, []string{"http://a/"}},
		{[]string{"http://a/", "--quiet", "http://b/", "-max-depth=3"}, 3, true, []string{"http://a/", "http://b/"}},
		{[]string{"http://a/", "--", "--max-depth", "4"}, 5, false, []string{"http://a/", "--max-depth", "4"}},
		{[]string{"--quiet", "--", "-x"}, 5, true, []string{"-x"}},
		{nil, 5, false, nil},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		depth := fs.Int("max-depth", 5, "")
		quiet := fs.Bool("quiet", false, "")
		if err := parseArgs(fs, tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if *depth != tc.depth || *quiet != tc.quiet || !slices.Equal(fs.Args(), tc.rest) {
			t.Errorf("%q: depth %d quiet %v args %q, want %d %v %q", tc.args, *depth, *quiet, fs.Args(), tc.depth, tc.quiet, tc.rest)
		}
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("max-depth", 5, "")
	if err := parseArgs(fs, []string{"http://a/", "--max-depth", "x"}); err == nil {
		t.Error("a bad value after the arguments was accepted")
	}
}
