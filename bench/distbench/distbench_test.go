package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/partition"
)

func TestParseInfo(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    map[string]string
		wantErr bool
	}{
		{"empty", "", map[string]string{}, false},
		{"sections", "# Memory\r\nused_memory:1024\r\nused_memory_human:1.00K\r\n\r\n# CPU\r\nused_cpu_sys:0.5\r\n",
			map[string]string{"used_memory": "1024", "used_memory_human": "1.00K", "used_cpu_sys": "0.5"}, false},
		{"value with colons", "executable:/usr/bin/redis-server\nconfig_file:\nx:a:b\n",
			map[string]string{"executable": "/usr/bin/redis-server", "config_file": "", "x": "a:b"}, false},
		{"commandstats", "cmdstat_evalsha:calls=12,usec=300,usec_per_call=25.00,rejected_calls=0,failed_calls=0\n",
			map[string]string{"cmdstat_evalsha": "calls=12,usec=300,usec_per_call=25.00,rejected_calls=0,failed_calls=0"}, false},
		{"no colon", "# Server\nbroken line\n", nil, true},
		{"empty field", ":value\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseInfo(tt.raw)
			if tt.wantErr {
				if !errors.Is(err, errBadInfo) {
					t.Fatalf("err = %v, want errBadInfo", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestInfoNumbers(t *testing.T) {
	in := redisInfo{"a": "12", "b": "1.5", "c": "x"}
	if in.int("a") != 12 || in.int("b") != 1 || in.int("c") != 0 || in.int("missing") != 0 {
		t.Errorf("int: %d %d %d", in.int("a"), in.int("b"), in.int("c"))
	}
	if in.float("b") != 1.5 || in.float("c") != 0 {
		t.Errorf("float: %v %v", in.float("b"), in.float("c"))
	}
}

func TestCommandCalls(t *testing.T) {
	tests := []struct {
		name      string
		info      redisInfo
		wantTotal int64
		wantTop   string
		wantErr   bool
	}{
		{"crawl and bench", redisInfo{
			"cmdstat_evalsha":          "calls=30,usec=1",
			"cmdstat_lmove":            "calls=10,usec=1",
			"cmdstat_info":             "calls=99,usec=1",
			"cmdstat_config|resetstat": "calls=1,usec=1",
			"used_memory":              "5",
		}, 40, "evalsha", false},
		{"none", redisInfo{"used_memory": "5"}, 0, "", false},
		{"no calls", redisInfo{"cmdstat_get": "usec=1"}, 0, "", true},
		{"bad calls", redisInfo{"cmdstat_get": "calls=-1"}, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := tt.info.commandCalls()
			if tt.wantErr {
				if !errors.Is(err, errBadInfo) {
					t.Fatalf("err = %v, want errBadInfo", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			total, top := crawlCalls(calls)
			if total != tt.wantTotal {
				t.Errorf("total = %d, want %d", total, tt.wantTotal)
			}
			if tt.wantTop != "" && (len(top) == 0 || top[0].name != tt.wantTop) {
				t.Errorf("top = %v, want %s first", top, tt.wantTop)
			}
		})
	}
}

func FuzzParseInfo(f *testing.F) {
	f.Add("# Memory\r\nused_memory:1024\r\n")
	f.Add("cmdstat_get:calls=3,usec=10,usec_per_call=3.33\n")
	f.Add("a:b:c\n\n#x\n")
	f.Add("nocolon")
	f.Fuzz(func(t *testing.T, raw string) {
		in, err := parseInfo(raw)
		if err != nil {
			if !errors.Is(err, errBadInfo) && !strings.Contains(err.Error(), "cannot read INFO") {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		for k := range in {
			if k == "" || strings.Contains(k, ":") {
				t.Fatalf("bad key %q", k)
			}
		}
		calls, err := in.commandCalls()
		if err == nil {
			for name, c := range calls {
				if c < 0 {
					t.Fatalf("%s: negative calls %d", name, c)
				}
			}
		}
	})
}

func TestParseMembers(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"A=150,B=80,C=200,D=40", "A=150,B=80,C=200,D=40", false},
		{" A = 1 , B=2 ,", "A=1,B=2", false},
		{"", "", true},
		{"A", "", true},
		{"A=0", "", true},
		{"=5", "", true},
		{"A=x", "", true},
		{"A=1,A=2", "", true},
	}
	for _, tt := range tests {
		got, err := parseMembers(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("parseMembers(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || memberString(got) != tt.want {
			t.Errorf("parseMembers(%q) = %q, %v; want %q", tt.in, memberString(got), err, tt.want)
		}
	}
}

func FuzzParseMembers(f *testing.F) {
	f.Add("A=150,B=80,C=200,D=40")
	f.Add("A=1,,B=2")
	f.Add("=,=")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := parseMembers(s)
		if err != nil {
			return
		}
		again, err := parseMembers(memberString(ms))
		if err != nil || memberString(again) != memberString(ms) {
			t.Fatalf("round trip of %q: %q, %v", s, memberString(again), err)
		}
		for _, m := range ms {
			if m.Weight < 1 || m.ID == "" {
				t.Fatalf("bad member %+v from %q", m, s)
			}
		}
	})
}

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("1, 2,,8")
	if err != nil || len(got) != 3 || got[2] != 8 {
		t.Errorf("parseCounts = %v, %v", got, err)
	}
	for _, bad := range []string{"0", "x", "-1"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

func TestSharesAndWorst(t *testing.T) {
	ms := []partition.Member{{ID: "A", Weight: 3}, {ID: "B", Weight: 1}}
	rows := shares(ms, map[string]float64{"A": 60, "B": 40, "stranger": 1000})
	if math.Abs(rows[0].Expected-0.75) > 1e-12 || math.Abs(rows[0].Observed-0.6) > 1e-12 {
		t.Fatalf("rows = %+v", rows)
	}
	if math.Abs(rows[1].Dev()-0.6) > 1e-12 || math.Abs(worstDev(rows)-0.6) > 1e-12 {
		t.Errorf("B dev = %v, worst = %v, want 0.6", rows[1].Dev(), worstDev(rows))
	}
}

// The plain ring is monotone (nothing moves between surviving members) and
// moves about the ideal fraction; the balanced table keeps shares exact.
func TestCompareTablesOnRealRings(t *testing.T) {
	abcd, _ := parseMembers("A=150,B=80,C=200,D=40")
	abd, _ := parseMembers("A=150,B=80,D=40")
	abcde, _ := parseMembers("A=150,B=80,C=200,D=40,E=300")
	const m = 4096
	for _, tt := range []struct {
		name          string
		before, after []partition.Member
		ideal         float64
	}{
		{"remove C", abcd, abd, 200.0 / 470},
		{"add E", abcd, abcde, 300.0 / 770},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []tableKind{kindOwners, kindBalanced} {
				a, err := bucketTable(tt.before, m, kind)
				if err != nil {
					t.Fatal(err)
				}
				b, err := bucketTable(tt.after, m, kind)
				if err != nil {
					t.Fatal(err)
				}
				c := compareTables(tt.before, tt.after, a, b, nil)
				if math.Abs(c.Ideal-tt.ideal) > 1e-12 {
					t.Errorf("%s: ideal %v, want %v", kind, c.Ideal, tt.ideal)
				}
				if kind == kindOwners && c.Needless != 0 {
					t.Errorf("plain ring moved %v between surviving members", c.Needless)
				}
				if c.Moved < c.Ideal*0.8 || c.Moved > c.Ideal*1.3 {
					t.Errorf("%s: moved %v, ideal %v", kind, c.Moved, c.Ideal)
				}
				// Weighting every bucket by 2 changes nothing.
				w := make([]float64, m)
				for i := range w {
					w[i] = 2
				}
				if cw := compareTables(tt.before, tt.after, a, b, w); math.Abs(cw.Moved-c.Moved) > 1e-12 {
					t.Errorf("%s: weighted moved %v, unweighted %v", kind, cw.Moved, c.Moved)
				}
			}
			bal, _ := bucketTable(tt.after, m, kindBalanced)
			if worst := worstDev(shares(tt.after, tableCounts(bal, nil))); worst > 0.02 {
				t.Errorf("balanced shares off by %v", worst)
			}
		})
	}
}

func TestCompareTablesByHand(t *testing.T) {
	before := []partition.Member{{ID: "A", Weight: 1}, {ID: "B", Weight: 1}}
	after := []partition.Member{{ID: "A", Weight: 1}}
	c := compareTables(before, after, []string{"A", "B", "A", "B"}, []string{"A", "A", "A", "A"}, nil)
	if c.Moved != 0.5 || c.Ideal != 0.5 || c.Needless != 0 || c.Dev() != 0 {
		t.Errorf("remove B: %+v", c)
	}
	// A bucket moving from A to B while both stay is needless.
	c = compareTables(before, before, []string{"A", "B"}, []string{"B", "B"}, nil)
	if c.Moved != 0.5 || c.Needless != 0.5 || c.Ideal != 0 || c.Dev() != 0 {
		t.Errorf("needless: %+v", c)
	}
}

func TestHostWeights(t *testing.T) {
	w := hostWeights(map[string]int{"a.test": 3, "b.test": 2}, 16)
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	if sum != 5 || w[partition.Bucket("a.test", 16)] < 3 {
		t.Errorf("weights %v", w)
	}
}

func TestTableAndFormats(t *testing.T) {
	var buf bytes.Buffer
	tb := newTable("lr", "name", "n")
	tb.add("a|b", "1")
	tb.write(&buf)
	want := "| name | n |\n|---|--:|\n| a\\|b | 1 |\n\n"
	if buf.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", buf.String(), want)
	}
	for _, tt := range []struct{ got, want string }{
		{itoa(0), "0"}, {itoa(999), "999"}, {itoa(1000), "1,000"}, {itoa(-1234567), "-1,234,567"},
		{signedPct(0.031), "+3.1%"}, {signedPct(-0.004), "−0.4%"}, {signedPct(0.0001), "0.0%"},
		{pct(0.5), "50.0%"}, {pct2(0.12345), "12.35%"}, {secs(1500 * time.Millisecond), "1.50"},
		{distOf([]int{5, 1, 3}).String(), "1 / 3 / 3.00 / 5"}, {distOf(nil).String(), "0 / 0 / 0.00 / 0"},
		{commandLine([]string{"crawl", "--data", "/w/x", "--user-agent", "a (b)"}, "/w"), "spider crawl --data $W/x --user-agent 'a (b)'"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseOptions([]string{"scaling", "--workers", "1,2", "--root", "/x"}, &stderr)
	if err != nil || len(o.Experiments) != 1 || o.Experiments[0] != "scaling" || len(o.WorkerCounts) != 2 {
		t.Errorf("parseOptions = %+v, %v", o, err)
	}
	o, err = parseOptions([]string{"--root", "/x"}, &stderr)
	if err != nil || len(o.Experiments) != 3 || len(o.Scenarios) != 3 {
		t.Errorf("defaults = %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"nope"}, {"weights", "--scenarios", "A=0"}, {"weights", "--workers", "0"}, {"weights", "--root", "/x", "extra"}} {
		if _, err := parseOptions(bad, &stderr); err == nil {
			t.Errorf("parseOptions(%q) accepted", bad)
		}
	}
}

func TestFitMemory(t *testing.T) {
	// fixed 1000 B, 100 B per seen URL, 50 B more per pending URL.
	mk := func(seen, pending int64) *runResult {
		return &runResult{MemBefore: 500, MemAfter: 500 + 1000 + 100*seen + 50*pending + 7, CallBytes: 7, Seen: seen, Pending: pending}
	}
	f := fitMemory(map[string]*runResult{"seeds": mk(100, 0), "full": mk(600, 0), "stopped": mk(600, 400)})
	if !f.HasSeen || !f.HasPending || math.Abs(f.Fixed-1000) > 1e-9 || math.Abs(f.PerSeen-100) > 1e-9 || math.Abs(f.PerPending-50) > 1e-9 {
		t.Errorf("fit = %+v", f)
	}
	if f := fitMemory(map[string]*runResult{"full": mk(600, 0)}); f.HasSeen || f.HasPending {
		t.Errorf("fit without seeds = %+v", f)
	}
	if f := fitMemory(map[string]*runResult{"seeds": mk(100, 0), "full": mk(600, 0), "stopped": mk(600, 0)}); !f.HasSeen || f.HasPending {
		t.Errorf("fit without pending = %+v", f)
	}
}

func TestSlogFields(t *testing.T) {
	tests := []struct {
		line, level, msg string
		ok               bool
	}{
		{`time=2026-11-21T22:10:32Z level=WARN msg="cannot send URL batches; retrying" err=x` + "\n", "WARN", "cannot send URL batches; retrying", true},
		{`time=x level=ERROR msg=short key=v`, "ERROR", "short", true},
		{`time=x level=INFO msg="a \"quoted\" word"`, "INFO", `a "quoted" word`, true},
		{`time=x level=WARN msg="unterminated`, "WARN", "unterminated", true},
		{`time=x level=WARN`, "WARN", "", true},
		{`spider: interrupted; run the same command again to resume`, "", "", false},
	}
	for _, tt := range tests {
		level, msg, ok := slogFields(tt.line)
		if level != tt.level || msg != tt.msg || ok != tt.ok {
			t.Errorf("slogFields(%q) = %q, %q, %v; want %q, %q, %v", tt.line, level, msg, ok, tt.level, tt.msg, tt.ok)
		}
	}
}

func FuzzSlogFields(f *testing.F) {
	f.Add(`time=x level=WARN msg="cannot send; retrying" err=x`)
	f.Add(`level=ERROR msg=x`)
	f.Add(`level= msg="`)
	f.Add("no fields")
	f.Fuzz(func(t *testing.T, line string) {
		level, msg, ok := slogFields(line)
		if !ok && (level != "" || msg != "") {
			t.Fatalf("not ok but level %q msg %q", level, msg)
		}
		if ok && !strings.Contains(line, "level=") {
			t.Fatalf("ok without level= in %q", line)
		}
		if strings.Contains(level, " ") {
			t.Fatalf("level %q has a space", level)
		}
	})
}

func TestLogNotes(t *testing.T) {
	dir := t.TempDir()
	p := &proc{Name: "A", LogFile: filepath.Join(dir, "A.log")}
	log := "time=1 level=INFO msg=fine\ntime=2 level=WARN msg=\"x y\" a=1\ntime=3 level=WARN msg=\"x y\" a=2\ntime=4 level=ERROR msg=bad\n"
	if err := os.WriteFile(p.LogFile, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(logNotes(p), "; ")
	if want := "A: 2 × WARN x y; A: 1 × ERROR bad"; got != want {
		t.Errorf("logNotes = %q, want %q", got, want)
	}
}

// TestEndToEnd runs a tiny version of the weights and scaling experiments:
// spider is built, redis-server started, websim served, and every run must
// cover the truth and end by itself.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds spider and runs distributed crawls")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("SPIDER_REQUIRE_REDIS") != "" { // redistest.RequireEnv
			t.Fatal("redis-server is not on PATH (SPIDER_REQUIRE_REDIS is set)")
		}
		t.Skip("redis-server not installed")
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run(ctx, []string{"weights", "scaling", "--work", t.TempDir(), "--buckets", "64",
		"--hosts", "150", "--scenarios", "A=150,B=80;A=150", "--trouble", "0.1", "--hang-time", "600ms", "--fetch-timeout", "300ms",
		"--scale-hosts", "40", "--latency", "5ms", "--workers", "1", "--peers", "1", "--run-timeout", "40s"}, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	report := out.String()
	for _, want := range []string{"### Crawl with A=150,B=80", "URLs each node sent", "A=150,B=80 → A=150",
		"| peer-to-peer | 1 |", "| master–worker | 1 |"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	cov := regexp.MustCompile(`coverage (\d+)/(\d+) `).FindAllStringSubmatch(report, -1)
	if len(cov) != 4 { // two weights runs, two scaling runs
		t.Errorf("%d coverage checks in the report, want 4:\n%s", len(cov), report)
	}
	for _, m := range cov {
		if m[1] != m[2] || m[1] == "0" {
			t.Errorf("coverage %s of %s URLs", m[1], m[2])
		}
	}
	if strings.Contains(report, "**failure") {
		t.Errorf("a run failed:\n%s", report)
	}
}
