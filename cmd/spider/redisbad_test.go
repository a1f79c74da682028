package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestWrongPasswordEveryCommand: master, worker, status, drop (and drop
// --after) and crawls with a wrong password in the URL fail with exit 3
// and a hint at the password, without printing it; so does a Redis
// Cluster URL. Fails if any command's error echoes the URL or the server's
// reply with the password.
func TestWrongPasswordEveryCommand(t *testing.T) {
	rs := redistest.Start(t, redistest.Password("right-pw-7731"))
	bad := fmt.Sprintf("redis://:wrong-pw-6604@%s/0", rs.Addr())
	for _, args := range [][]string{
		{"master", "--redis", bad, "--crawl", "a", "http://a.test/"},
		{"worker", "--redis", bad, "--crawl", "a", "--data", t.TempDir()},
		{"status", "--redis", bad, "--crawl", "a"},
		{"drop", "--redis", bad, "--crawl", "a"},
		{"drop", "--redis", bad, "--crawl", "a", "--after", "1h"},
		{"crawls", "--redis", bad},
		{"master", "--redis", bad, "--redis-cluster", "--crawl", "a", "http://a.test/"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 3 || strings.Contains(out+errOut, "wrong-pw-6604") || !strings.Contains(errOut, "password") {
			t.Errorf("%q with a wrong password: exit %d\n%s%s\nwant exit 3 hinting at the password without printing it", args, code, out, errOut)
		}
	}
}

// TestDropAfterRedisGone: Redis goes away while drop --after gives the
// crawl's keys their expiry (writes paused, then the server killed): exit
// 3, never "expire in", and the count of keys that got it so far with how
// to finish. The same path serves --expire-done.
func TestDropAfterRedisGone(t *testing.T) {
	ctx := context.Background()
	rs := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	for i := range 40 {
		seedKeys(t, rdb, fmt.Sprintf("spider:gone:{mw-%d-0}:pending", i))
	}
	seedKeys(t, rdb, "{spider:gone}:mw:done")
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan [3]string, 1)
	go func() {
		code, out, errOut := runCLI(t, "drop", "--redis", rs.URL(), "--crawl", "gone", "--after", "1h")
		done <- [3]string{fmt.Sprint(code), out, errOut}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info := rdb.Info(ctx, "clients").Val()
		if strings.Contains(info, "paused_clients:1") || strings.Contains(info, "blocked_clients:1") {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("no client seen waiting on the pause; killing anyway:\n%s", info)
			break
		}
	}
	rs.Kill()
	r := <-done
	if r[0] != "3" || strings.Contains(r[1], "expire in") ||
		!strings.Contains(r[2], "0 of its 41 keys given a time to live before the error; run the same command again to finish") {
		t.Errorf("drop --after with Redis gone: exit %s\n%s%s\nwant exit 3, 0 of 41 given a time to live, run again", r[0], r[1], r[2])
	}
}

// TestOddCrawlNameRefused: a crawl name that could reach into another
// crawl's keys (':', braces, glob characters, a path) is refused by master,
// worker, drop, the expiry and the distributed index build before any key
// is written (the worker used to wait for ever for a master of that name).
func TestOddCrawlNameRefused(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client()
	for _, name := range []string{"a:b", "x}{y", "a*", "../x", "a b"} {
		for _, args := range [][]string{
			{"master", "--redis", rs.URL(), "--crawl", name, "--expire-done", "1h", "http://a.test/"},
			{"worker", "--redis", rs.URL(), "--crawl", name, "--data", t.TempDir()},
			{"drop", "--redis", rs.URL(), "--crawl", name, "--after", "1h"},
			{"index", "--redis", rs.URL(), "--crawl", name, "--mapper", "--data", t.TempDir()},
			{"index", "--redis", rs.URL(), "--crawl", name, "--writer", "--data", t.TempDir()},
		} {
			code, out, errOut := runCLI(t, args...)
			if code == 0 || !strings.Contains(errOut, "crawl") {
				t.Errorf("%q: exit %d\n%s%s\nwant a refusal naming the crawl", args, code, out, errOut)
			}
		}
	}
	if keys := rdb.Keys(context.Background(), "*").Val(); len(keys) != 0 {
		t.Errorf("keys written under refused crawl names: %v", keys)
	}
}
