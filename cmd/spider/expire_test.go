package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawls"
	"github.com/spider-crawler/spider/internal/websim"
)

// crawlTTLs returns the time to live of every key of crawl name (-1: none).
func crawlTTLs(t *testing.T, rdb redis.UniversalClient, name string) map[string]time.Duration {
	t.Helper()
	ctx := context.Background()
	out := map[string]time.Duration{}
	for _, p := range []string{"{spider:*", "spider:*"} {
		var cursor uint64
		for {
			keys, next, err := rdb.Scan(ctx, cursor, p, 1000).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if n, _, ok := crawls.Parse(k); ok && n == name {
					// −2: the key expired between SCAN and PTTL (a reply-cache
					// key lives seconds); −1, no time to live, stays a failure.
					if d := rdb.PTTL(ctx, k).Val(); d != -2 {
						out[k] = d
					}
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return out
}

// TestExpireDone: with --expire-done, every key of a master–worker crawl
// and of a peer-to-peer crawl has a time to live of at most the one given
// once the crawl is done; while the master–worker crawl runs its keys have
// none, and another crawl's keys never get one. Fails if a command's end
// path forgets the expiry, expires before the crawl is done, or a key
// written at the end (a worker leaving, a final report) escapes it.
func TestExpireDone(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("two crawls on Redis")
	}
	rs := redistest.Start(t)
	rdb := rs.Client()
	ctx := context.Background()
	srv, err := websim.Start(ctx, websim.Config{Seed: 51, Hosts: 4, PagesPerHost: 12, Latency: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "{spider:other}:mw:config", "{}", 0).Err(); err != nil {
		t.Fatal(err)
	}
	const ttl = time.Hour
	check := func(name string) {
		t.Helper()
		ttls := crawlTTLs(t, rdb, name)
		if len(ttls) < 5 {
			t.Fatalf("crawl %s: %d keys, want its keys", name, len(ttls))
		}
		for k, d := range ttls {
			if d <= 0 || d > ttl {
				t.Errorf("crawl %s: key %s has time to live %v after the crawl, want (0, %v]", name, k, d, ttl)
			}
		}
	}

	// Master–worker.
	mdone := make(chan [3]string, 1)
	go func() {
		code, out, errOut := runCLI(t, append([]string{"master", "--redis", rs.URL(), "--crawl", "mwx", "--expire-done", "1h",
			"--data", filepath.Join(dir, "m"), "--resolve-file", resolve, "--allow-private", "--delay", "30ms", "--scope", "any",
			"--worker-ttl", "1s"}, srv.SeedURLs(2)...)...)
		mdone <- [3]string{string(rune('0' + code)), out, errOut}
	}()
	wdone := make(chan [3]string, 1)
	go func() {
		code, out, errOut := runCLI(t, "worker", "--redis", rs.URL(), "--crawl", "mwx", "--data", filepath.Join(dir, "w"),
			"--resolve-file", resolve, "--allow-private", "--concurrency", "2")
		wdone <- [3]string{string(rune('0' + code)), out, errOut}
	}()
	// Running: the crawl's keys have no expiry yet.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, _ := rdb.HGet(ctx, "{spider:mwx}:mw:stats", "fetched").Int(); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the master–worker crawl fetched nothing in 30 s")
		}
	}
	for _, k := range []string{"{spider:mwx}:mw:config", "{spider:mwx}:mw:layout", "{spider:mwx}:mw:hosts"} {
		if d := rdb.PTTL(ctx, k).Val(); d != -1 {
			t.Errorf("running crawl: %s has time to live %v, want none", k, d)
		}
	}
	for _, ch := range []chan [3]string{mdone, wdone} {
		select {
		case r := <-ch:
			if r[0] != "0" {
				t.Fatalf("exit %s\n%s%s", r[0], r[1], r[2])
			}
			if ch == mdone && !strings.Contains(r[1], "expire in 1h0m0s (--expire-done)") {
				t.Errorf("the master does not say the keys expire:\n%s", r[1])
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the master–worker crawl did not end")
		}
	}
	check("mwx")

	// Peer-to-peer, one node.
	code, out, errOut := runCLI(t, append([]string{"crawl", "--redis", rs.URL(), "--crawl", "ppx", "--expire-done", "1h",
		"--data", filepath.Join(dir, "p"), "--resolve-file", resolve, "--allow-private", "--delay", "5ms", "--scope", "any"}, srv.SeedURLs(2)...)...)
	if code != 0 {
		t.Fatalf("p2p crawl: exit %d\n%s%s", code, out, errOut)
	}
	check("ppx")
	if d := rdb.PTTL(ctx, "{spider:other}:mw:config").Val(); d != -1 {
		t.Errorf("another crawl's key got time to live %v", d)
	}
	// Out of range: a usage error before anything runs.
	if code, _, errOut := runCLI(t, "master", "--redis", rs.URL(), "--expire-done", "-1s", "http://a.test/"); code != 2 || !strings.Contains(errOut, "--expire-done") {
		t.Errorf("--expire-done -1s: exit %d, %s", code, errOut)
	}
}
