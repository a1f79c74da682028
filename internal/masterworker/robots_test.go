package masterworker

import (
	"bytes"
	"context"
	"testing"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

func TestRobotsEncoding(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
	}{{200, "User-agent: *\nDisallow: /x\n"}, {404, ""}, {200, "a b c"}} {
		st, body, ok := decodeRobots(encodeRobots(tc.status, []byte(tc.body)))
		if !ok || st != tc.status || string(body) != tc.body {
			t.Errorf("round trip of %d %q = %d %q %v", tc.status, tc.body, st, body, ok)
		}
	}
	for _, bad := range []string{"", " x", "abc body", "99 x", "600 x", "200"} {
		if _, _, ok := decodeRobots([]byte(bad)); ok {
			t.Errorf("decodeRobots(%q) accepted", bad)
		}
	}
}

func TestRobotsShare(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	a, b := NewRobotsShare(rdb, "c1"), NewRobotsShare(rdb, "c2")
	const u = "http://www.d0.test/robots.txt"
	if _, _, ok, err := a.LoadRobots(ctx, u); ok || err != nil {
		t.Fatalf("empty share: ok %v err %v", ok, err)
	}
	body := []byte("User-agent: *\nDisallow: /private/\n")
	if err := a.StoreRobots(ctx, u, 200, body); err != nil {
		t.Fatal(err)
	}
	st, got, ok, err := a.LoadRobots(ctx, u)
	if err != nil || !ok || st != 200 || !bytes.Equal(got, body) {
		t.Fatalf("LoadRobots = %d %q %v %v", st, got, ok, err)
	}
	if _, _, ok, _ := b.LoadRobots(ctx, u); ok {
		t.Fatal("another crawl saw the answer")
	}
	ttl := rdb.TTL(ctx, a.k.robots(u)).Val()
	if ttl <= 0 || ttl > robotsTTL {
		t.Fatalf("TTL %v, want (0, %v]", ttl, robotsTTL)
	}
	rdb.Set(ctx, a.k.robots(u), "garbage", 0)
	if _, _, _, err := a.LoadRobots(ctx, u); err == nil {
		t.Fatal("malformed entry accepted")
	}
}
