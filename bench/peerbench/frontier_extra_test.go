package main

import (
	"os"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
)

func TestWildcardResolve(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		addr  string
		want  string
		ok    bool
	}{
		{[]string{"www.d0.test", "d1.test", "site9.d3.test"}, "127.0.0.1:4242", "*.test:4242:127.0.0.1", true},
		{[]string{"a.test"}, "[::1]:80", "*.test:80:[::1]", true},
		{[]string{"www.d0.test", "example.com"}, "127.0.0.1:1", "", false},
		{[]string{"test", "a.test"}, "127.0.0.1:1", "", false},
		{[]string{"localhost"}, "127.0.0.1:1", "", false},
		{nil, "127.0.0.1:1", "", false},
		{[]string{"a.test"}, "no port", "", false},
	} {
		got, ok := wildcardResolve(tc.hosts, tc.addr)
		if got != tc.want || ok != tc.ok {
			t.Errorf("wildcardResolve(%q, %q) = %q, %v; want %q, %v", tc.hosts, tc.addr, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseStatusKB(t *testing.T) {
	status := []byte("Name:\tspider\nVmRSS:\t 3000 kB\nRssAnon:\t 1000 kB\nRssFile:\t2000 kB\n")
	for _, tc := range []struct {
		field string
		want  int64
	}{{"VmRSS:", 3000 << 10}, {"RssAnon:", 1000 << 10}, {"RssFile:", 2000 << 10}, {"RssShmem:", 0}} {
		if got := parseStatusKB(status, tc.field); got != tc.want {
			t.Errorf("parseStatusKB(%s) = %d, want %d", tc.field, got, tc.want)
		}
	}
}

func TestStopReason(t *testing.T) {
	cfg := config{MaxRSS: 100 << 20, Until: 1000}
	for _, tc := range []struct {
		s    sample
		want string
	}{
		{sample{RSS: 50 << 20, Discovered: 10}, ""},
		{sample{RSS: 101 << 20, Discovered: 10}, "rss above 100 MiB"},
		{sample{RSS: 50 << 20, Discovered: 1000}, "discovered 1000"},
		{sample{RSS: 50 << 20, Discovered: -1}, ""},
	} {
		if got := stopReason(cfg, tc.s); got != tc.want {
			t.Errorf("stopReason(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
	if got := stopReason(config{MaxRSS: 1 << 30}, sample{Discovered: 1 << 40}); got != "" {
		t.Errorf("Until 0 stopped a run: %q", got)
	}
}

func TestCPUPerRequest(t *testing.T) {
	ss := []sample{
		{At: 1 * time.Second, Requests: 100, CPU: 200 * time.Millisecond},
		{At: 2 * time.Second, Requests: 200, CPU: 400 * time.Millisecond},
		{At: 3 * time.Second, Requests: 250, CPU: 600 * time.Millisecond},
		{At: 4 * time.Second, Requests: 300, CPU: 800 * time.Millisecond},
	}
	sm := summarize(ss)
	if sm.FirstCPU != 2 || sm.LastCPU != 4 {
		t.Errorf("CPU ms per request first %v last %v, want 2 and 4", sm.FirstCPU, sm.LastCPU)
	}
	if got := cpuPerRequest(ss[1], ss[1]); got != 0 {
		t.Errorf("no requests: %v, want 0", got)
	}
}

func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/a", make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/sub/b", make([]byte, 24), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := dirBytes(dir); got != 1024 {
		t.Errorf("dirBytes = %d, want 1024", got)
	}
	if got := dirBytes(dir + "/missing"); got != 0 {
		t.Errorf("dirBytes(missing) = %d, want 0", got)
	}
}

func TestDiskUseState(t *testing.T) {
	data := t.TempDir()
	if err := os.MkdirAll(store.DataDir(data).State(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store.DataDir(data).Join(store.StateDirName, "state.db"), make([]byte, 300), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store.DataDir(data).Records(), make([]byte, 700), 0o644); err != nil {
		t.Fatal(err)
	}
	if all, state := diskUse("spider", data); all != 1000 || state != 300 {
		t.Errorf("spider: all %d state %d, want 1000 and 300", all, state)
	}
	if all, state := diskUse("colly", data); all != 1000 || state != -1 {
		t.Errorf("colly: all %d state %d, want 1000 and -1 (unknown)", all, state)
	}
	sm := summarize([]sample{{At: time.Second, Discovered: 3, StateBytes: 300}})
	if got := sm.StateBytesPerURL(); got != "100" {
		t.Errorf("state bytes per URL %q, want 100", got)
	}
	if got := summarize([]sample{{At: time.Second, Discovered: 3, StateBytes: -1}}).StateBytesPerURL(); got != "–" {
		t.Errorf("unknown state: %q, want –", got)
	}
	if mib(-1) != "–" || mib(3<<20) != "3" {
		t.Errorf("mib: %q %q", mib(-1), mib(3<<20))
	}
}
