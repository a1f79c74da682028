package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// TestServeLoadEndToEnd runs the bench as documented against a real
// `spider serve`: it builds the binary, crawls a small synthetic web,
// indexes it, and measures both targets closed- and open-loop; every run
// must have answered without an error, the zipf mix must hit the cache
// and the unique mix must not. -short measures fewer combinations.
func TestServeLoadEndToEnd(t *testing.T) {
	ctx := context.Background()
	// English only: Chinese text would make the bench and the server load
	// the gse dictionaries (seconds each on a busy machine).
	web, err := websim.Start(ctx, websim.Config{Seed: 3, Hosts: 2, PagesPerHost: 40, ChineseShare: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	start := time.Now()
	bin, err := buildSpider(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built spider: %s", time.Since(start).Round(time.Millisecond))
	data := t.TempDir()
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(web.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"crawl", "--data", data, "--resolve-file", resolve, "--allow-private", "--delay", "0s", "--max-depth", "-1", "--log-level", "warn", web.SeedURLs(1)[0]},
		{"index", "--data", data},
	} {
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("spider %s: %v\n%s", args[0], err, out)
		}
		t.Logf("spider %s: %s", args[0], time.Since(start).Round(time.Millisecond))
	}
	mixes, clients := "zipf,unique", "1,4"
	if testing.Short() {
		mixes, clients = "zipf", "4"
	}
	common := []string{"--data", data, "--bin", bin, "--duration", "1s", "--warmup", "300ms", "--distinct", "40", "--serve-args", "--preload=off", "--json"}
	var out, errOut bytes.Buffer
	if err := run(ctx, append([]string{"--mix", mixes, "--clients", clients}, common...), &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if err := run(ctx, append([]string{"--mix", "uniform", "--rate", "50", "--clients", "2", "--target", "api"}, common...), &out, &errOut); err != nil {
		t.Fatalf("open loop: %v\n%s", err, errOut.String())
	}
	t.Logf("bench: %s\n%s", time.Since(start).Round(time.Millisecond), out.String())
	var reports []report
	for line := range strings.Lines(out.String()) {
		if strings.HasPrefix(line, "{") {
			var r report
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			reports = append(reports, r)
		}
	}
	want := 2*len(strings.Split(mixes, ","))*len(strings.Split(clients, ",")) + 1
	if len(reports) != want {
		t.Fatalf("%d runs reported, want %d", len(reports), want)
	}
	for _, r := range reports {
		if r.Requests == 0 || r.Errors != 0 || r.P99MS <= 0 || r.ServerCPUMS <= 0 || r.ServerRSSMB <= 0 {
			t.Errorf("run %+v: no requests, errors, or no server figures", r)
		}
		switch {
		case r.Mix == mixZipf && !(r.HitRate > 0.5):
			t.Errorf("zipf run hit the cache %.2f of the time", r.HitRate)
		case r.Mix == mixUnique && r.HitRate != 0:
			t.Errorf("unique run hit the cache %.2f of the time", r.HitRate)
		case r.Mode == "open@50/s" && (r.Requests < 45 || r.Requests > 50):
			t.Errorf("open loop at 50/s for 1 s sent %d requests", r.Requests)
		}
	}
}
