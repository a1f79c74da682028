package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
)

// TestProtocolContinuousKill kills (SIGKILL) a host of a continuous,
// adaptive §0 crawl (real processes: spider center and spider crawl
// --dedup protocol --continuous, each with its redis-server) several times
// while it revisits, restarting it each time (the system is done by then:
// the host only revisits); a last run goes on for 6 s and is stopped with
// SIGINT (exit 0). No schedule entry may be lost: every page fetched before
// the last run is fetched again during it (revisit-max 1 s), and the host's
// schedule holds every page it fetched, due or pending with its entry.
func TestProtocolContinuousKill(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	srv := revisittest.StartWeb(t, continuousWeb)
	dir := t.TempDir()
	resolve := revisittest.ResolveFile(t, dir, srv)
	center, local := redistest.Start(t), redistest.Start(t)
	conf := fmt.Sprintf("crawl: prv\nbatch: 32\nflush: 50ms\nanswer_timeout: 1s\nremote_timeout: 2s\nheartbeat: 200ms\nmember_ttl: 1s\nstable: 300ms\nnetworks:\n  - name: n1\n    center_redis: %s\n    hosts:\n      - id: h1\n        redis: %s\n", center.URL(), local.URL())
	cfgFile := filepath.Join(dir, "protocol.yaml")
	if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(args ...string) *logProc { return startLogged(t, bin, args...) }
	data := filepath.Join(dir, "h1")
	host := func() *logProc {
		return start(append([]string{"crawl", "--dedup", "protocol", "--protocol-config", cfgFile, "--network", "n1", "--host-id", "h1",
			"--data", data, "--resolve-file", resolve, "--allow-private", "--delay", "0", "--concurrency", "8", "--scope", "seeds", "--max-depth", "-1"},
			continuousArgs(srv.SeedURLs(4)...)...)...)
	}
	start("center", "--protocol-config", cfgFile, "--network", "n1")
	h := host()
	rng := rand.New(rand.NewPCG(7, 8))
	for kill := range 3 {
		at := countRecords(data) + 60 + rng.IntN(60) // the first kill lands among revisits (60 pages)
		deadline := time.Now().Add(time.Minute)
		for countRecords(data) < at {
			select {
			case err := <-h.done:
				t.Fatalf("kill %d: the host ended (%v)\n%s", kill, err, h.out.String())
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: %d records in a minute, want %d\n%s", kill, countRecords(data), at, h.out.String())
			}
		}
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-h.done
		h = host()
	}
	before := revisittest.Fetched(t, data, time.Time{})
	if len(before) < 30 {
		t.Fatalf("only %d pages fetched before the last run", len(before))
	}
	// The last run: the host restarted above goes on 6 s, then Ctrl-C.
	last := time.Now()
	time.Sleep(6 * time.Second)
	if err := h.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("the host ended before SIGINT: %v\n%s", err, h.out.String())
	}
	if err := <-h.done; err != nil {
		t.Fatalf("a continuous §0 host stopped by SIGINT must exit 0: %v\n%s", err, h.out.String())
	}
	after := revisittest.Fetched(t, data, last)
	lost := revisittest.Missing(before, after)
	if len(lost) > 0 {
		t.Errorf("%d of %d pages never revisited after the kills (schedule entries lost?): %v", len(lost), len(before), lost[:min(5, len(lost))])
	}
	have, due := revisittest.Scheduled(t, filepath.Join(data, "schedule"), true)
	missing := revisittest.Missing(revisittest.Fetched(t, data, time.Time{}), have)
	if len(missing) > 0 {
		t.Errorf("%d pages fetched have no schedule entry: %v", len(missing), missing[:min(5, len(missing))])
	}
	t.Logf("%d pages before the last run, %d fetched again in it; schedule: %d due, %d pending\n%s", len(before), len(after), due, len(have)-due, h.out.String())
}
