package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestWorkerTopicsMismatch: a crawl node whose topics file differs from the
// coordinator's is refused (usage error) naming each difference; a worker
// without --topics joining a topics crawl is refused, and a worker with
// --topics joining a crawl without topics.
func TestWorkerTopicsMismatch(t *testing.T) {
	rs := redistest.Start(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	coord := write("coord.yaml", `topics:
  - name: news
    priority: 2
    seeds: [http://news.test/]
    terms: [tax]
  - name: sports
    seeds: [http://sports.test/]
    terms: [goal]
`)
	other := write("other.yaml", `topics:
  - name: news
    priority: 3
    seeds: [http://news.test/]
    terms: [tax]
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	masterDone := make(chan error, 1)
	// The coordinator waits for 5 crawl nodes, so it hands nothing out.
	go func() {
		masterDone <- runMaster(ctx, []string{"--redis", rs.URL(), "--crawl", "tm", "--topics", coord, "--data", filepath.Join(dir, "m"),
			"--wait-nodes", "5", "--quiet"}, io.Discard, io.Discard)
	}()
	worker := func(extra ...string) (int, string) {
		args := append([]string{"worker", "--redis", rs.URL(), "--crawl", "tm", "--data", filepath.Join(dir, "w")}, extra...)
		code, _, errOut := runCLI(t, args...)
		return code, errOut
	}
	code, errOut := worker("--topics", other)
	for _, want := range []string{`topic "news": priority 2 on the coordinator, 3 in ` + other, `topic "sports" only in the coordinator's file`} {
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("worker with another topics file: code %d, want 2 and %q in\n%s", code, want, errOut)
		}
	}
	if code, errOut := worker(); code != 2 || !strings.Contains(errOut, "start this worker with --topics") {
		t.Errorf("worker without --topics: code %d, want 2 and what to do in\n%s", code, errOut)
	}
	cancel()
	select {
	case <-masterDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the coordinator did not stop")
	}

	// A crawl without topics refuses a worker with --topics.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() {
		masterDone <- runMaster(ctx2, []string{"--redis", rs.URL(), "--crawl", "tm2", "--data", filepath.Join(dir, "m2"), "--quiet",
			"http://plain.test/"}, io.Discard, io.Discard)
	}()
	code, _, errOut = runCLI(t, "worker", "--redis", rs.URL(), "--crawl", "tm2", "--data", filepath.Join(dir, "w2"), "--topics", coord)
	if code != 2 || !strings.Contains(errOut, "runs without topics") {
		t.Errorf("worker with --topics on a plain crawl: code %d, want 2 and the reason in\n%s", code, errOut)
	}
	cancel2()
	<-masterDone
}
