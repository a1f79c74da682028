package mixed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/mixed"
	"github.com/spider-crawler/spider/internal/protocol"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestSameHostIDRefused: a second process started as a live host of the same network
// (the same --host-id, hence the same local Redis from the configuration, another data
// directory) is refused at once with a message naming --host-id, before it touches the
// host's queues; the crawl still ends with every URL fetched once.
func TestSameHostIDRefused(t *testing.T) {
	s := newSystem(t, 1, 2, websim.Config{Seed: 72, Hosts: 10, PagesPerHost: 20, Latency: 5 * time.Millisecond})
	s.startCenter("n1", 0)
	s.startHost("n1", "h1", 0)
	s.startHost("n1", "h2", 0)
	keys, err := cluster.NewKeys(protocol.HostMembersCrawl(s.cfg.Crawl, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	mem := cluster.NewMembership(s.client("n1"), keys, cluster.MembershipConfig{})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if v, err := mem.Members(context.Background()); err == nil && v.Has("h1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("h1 never joined its network")
		}
		time.Sleep(10 * time.Millisecond)
	}
	addr := protocol.HostAddr("n1", "h1")
	cfg := s.crawl
	cfg.Data = t.TempDir()
	opt := mixed.Options{Crawl: cfg, Logger: s.log, Host: protocol.HostOptions{Config: s.cfg, Network: "n1", ID: "h1",
		Local: s.client(addr), Center: s.client("n1"), LocalURL: s.url(addr)}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := mixed.Run(ctx, opt)
	if !errors.Is(err, cluster.ErrNodeIDInUse) {
		t.Fatalf("a second h1: %v, want cluster.ErrNodeIDInUse", err)
	}
	if !strings.Contains(err.Error(), `node id "h1" is in use by a live node`) || !strings.Contains(err.Error(), protocol.IDHint) {
		t.Errorf("message %q does not name the id and --host-id", err)
	}
	if res.Fetched != 0 {
		t.Errorf("the refused host fetched %d URLs", res.Fetched)
	}
	s.wait(90 * time.Second)
	s.check(0)
}
