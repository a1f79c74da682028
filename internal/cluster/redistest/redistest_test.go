package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartAnswersAndURL(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t)
	if !strings.HasPrefix(srv.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr = %q, want a loopback address", srv.Addr())
	}
	if want := fmt.Sprintf("redis://127.0.0.1:%d/0", srv.Port()); srv.URL() != want {
		t.Fatalf("URL = %q, want %q", srv.URL(), want)
	}
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatalf("URL does not parse: %v", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := srv.Client().Get(ctx, "k").Val(); got != "v" {
		t.Fatalf("GET k = %q through a second client, want v", got)
	}
	if !srv.Running() {
		t.Fatal("Running = false for a started server")
	}
}

func TestTwoServersAreIndependent(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	ctx := ctxT(t)
	if a.Addr() == b.Addr() || a.Dir() == b.Dir() {
		t.Fatalf("servers share an address or a directory: %s %s", a.Addr(), b.Addr())
	}
	a.Client().Set(ctx, "k", "a", 0)
	if n := b.Client().Exists(ctx, "k").Val(); n != 0 {
		t.Fatal("a key written to one server is visible on the other")
	}
}

func TestPersistenceAcrossKillAndRestart(t *testing.T) {
	tests := []struct {
		name string
		opts []redistest.Option
		kept bool
	}{
		{"aof-always", []redistest.Option{redistest.AppendOnly()}, true},
		{"no-persistence", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, tc.opts...)
			ctx := ctxT(t)
			rdb := srv.Client()
			port := srv.Port()
			for i := range 100 {
				if err := rdb.RPush(ctx, "list", i).Err(); err != nil {
					t.Fatal(err)
				}
			}
			srv.Kill()
			if srv.Running() {
				t.Fatal("Running = true after Kill")
			}
			if err := rdb.Ping(ctx).Err(); err == nil {
				t.Fatal("PING answered after Kill")
			}
			srv.Restart()
			if srv.Port() != port {
				t.Fatalf("port changed across Restart: %d → %d", port, srv.Port())
			}
			n, err := rdb.LLen(ctx, "list").Result()
			if err != nil {
				t.Fatalf("the old client does not reconnect after Restart: %v", err)
			}
			if want := map[bool]int64{true: 100, false: 0}[tc.kept]; n != want {
				t.Fatalf("LLEN after kill+restart = %d, want %d", n, want)
			}
		})
	}
}

func TestStopIsGracefulAndIdempotent(t *testing.T) {
	srv := redistest.Start(t, redistest.AppendOnlyEverySec())
	ctx := ctxT(t)
	srv.Client().Set(ctx, "k", "v", 0)
	srv.Stop()
	srv.Stop()
	srv.Kill()
	srv.Restart()
	// SHUTDOWN flushes the AOF even with appendfsync everysec.
	if got := srv.Client().Get(ctx, "k").Val(); got != "v" {
		t.Fatalf("GET after Stop+Restart = %q, want v", got)
	}
}

func TestPassword(t *testing.T) {
	srv := redistest.Start(t, redistest.Password("s3cret"))
	ctx := ctxT(t)
	if err := srv.Client().Ping(ctx).Err(); err != nil {
		t.Fatalf("Client with the password: %v", err)
	}
	anon := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer anon.Close()
	if err := anon.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("SET without password: err = %v, want NOAUTH", err)
	}
	if !strings.Contains(srv.URL(), ":s3cret@") {
		t.Fatalf("URL %q lacks the password", srv.URL())
	}
}

func TestArgs(t *testing.T) {
	srv := redistest.Start(t, redistest.Args("--maxmemory", "7mb"))
	got, err := srv.Client().ConfigGet(ctxT(t), "maxmemory").Result()
	if err != nil || got["maxmemory"] != "7340032" {
		t.Fatalf("CONFIG GET maxmemory = %v, %v; want 7340032", got, err)
	}
}

func TestCluster(t *testing.T) {
	for _, masters := range []int{1, 3} {
		t.Run(fmt.Sprint(masters), func(t *testing.T) {
			c := redistest.StartCluster(t, masters)
			ctx := ctxT(t)
			if len(c.Addrs()) != masters {
				t.Fatalf("Addrs = %v, want %d", c.Addrs(), masters)
			}
			rdb := c.Client()
			// Keys spread over all masters.
			for i := range 200 {
				if err := rdb.Set(ctx, fmt.Sprint("key", i), i, 0).Err(); err != nil {
					t.Fatalf("SET key%d: %v", i, err)
				}
			}
			var mu sync.Mutex
			var perNode []int64
			err := rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				n, err := m.DBSize(ctx).Result()
				mu.Lock()
				perNode = append(perNode, n)
				mu.Unlock()
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range perNode {
				if n == 0 {
					t.Fatalf("a master holds no key: %v", perNode)
				}
			}
			// Keys sharing a hash tag are in one slot: a multi-key script works on them.
			keys := []string{"spider:c:{b7}:pending", "spider:c:{b7}:owner"}
			s1, _ := rdb.ClusterKeySlot(ctx, keys[0]).Result()
			s2, _ := rdb.ClusterKeySlot(ctx, keys[1]).Result()
			if s1 != s2 {
				t.Fatalf("hash-tagged keys in slots %d and %d", s1, s2)
			}
			script := redis.NewScript(`redis.call('SET', KEYS[1], 'x'); return redis.call('RPUSH', KEYS[2], 'y')`)
			if err := script.Run(ctx, rdb, keys).Err(); err != nil {
				t.Fatalf("multi-key script on one slot: %v", err)
			}
			if masters > 1 {
				err := script.Run(ctx, rdb, []string{"a{x}", "b{y}"}).Err()
				if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
					t.Fatalf("cross-slot script: err = %v, want CROSSSLOT", err)
				}
			}
		})
	}
}

func TestClusterNodeRestart(t *testing.T) {
	c := redistest.StartCluster(t, 3, redistest.AppendOnly())
	ctx := ctxT(t)
	rdb := c.Client()
	for i := range 50 {
		rdb.Set(ctx, fmt.Sprint("k", i), i, 0)
	}
	c.Servers[1].Kill()
	c.Servers[1].Restart()
	c.WaitOK()
	for i := range 50 {
		var got int
		var err error
		// The client may need a moment to reconnect to the restarted master: poll (every
		// 50 ms, 50 times); the check below fails the test when it never does.
		for range 50 {
			if got, err = rdb.Get(ctx, fmt.Sprint("k", i)).Int(); err == nil || errors.Is(err, redis.Nil) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil || got != i {
			t.Fatalf("GET k%d after a master restart = %d, %v", i, got, err)
		}
	}
}
