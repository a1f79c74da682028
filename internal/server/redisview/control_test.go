package redisview

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/server"
)

// TestViewControl: the control endpoints of serve --redis write the
// crawl's control word (what every node follows), the dashboard shows the
// state, seeds are queued for the nodes, and a bad seed queues nothing.
func TestViewControl(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v := New(rdb, "web", 64, nil, nil)
	s := newTestServer(t, server.Options{Crawl: v, Control: v, Token: testToken}).Handler()
	keys, err := cluster.NewKeys("web")
	if err != nil {
		t.Fatal(err)
	}
	ms := cluster.NewMembership(rdb, keys, cluster.MembershipConfig{})
	if _, err := ms.Join(ctx, cluster.Member{ID: "a", Weight: 100}); err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	ctl := cluster.NewControl(rdb, keys)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	state := func() string {
		w := do(t, s, "GET", "/api/crawl", "", nil)
		var st server.CrawlStatus
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
			t.Fatalf("%v: %s", err, w.Body)
		}
		return st.State
	}
	if got := state(); got != "running" {
		t.Fatalf("state %q, want running", got)
	}
	for _, c := range []struct{ path, word, shown string }{
		{"/api/crawl/pause", cluster.ControlPaused, "paused"},
		{"/api/crawl/resume", cluster.ControlRunning, "running"},
		{"/api/crawl/stop", cluster.ControlStopping, "stopping"},
	} {
		if w := do(t, s, "POST", c.path, "", nil); w.Code != 401 {
			t.Fatalf("%s without the token: %d, want 401", c.path, w.Code)
		}
		if w := do(t, s, "POST", c.path, "", auth); w.Code != 200 {
			t.Fatalf("%s: %d %s", c.path, w.Code, w.Body)
		}
		if cmd, err := ctl.Get(ctx); err != nil || cmd.State != c.word {
			t.Fatalf("after %s the control word is %+v (%v), want %s", c.path, cmd, err, c.word)
		}
		if got := state(); got != c.shown {
			t.Fatalf("after %s the dashboard shows %q, want %q", c.path, got, c.shown)
		}
	}
	w := do(t, s, "POST", "/api/crawl/seeds", `{"urls": ["http://a.test/x", "ftp://a.test/"]}`, auth)
	if w.Code != 400 {
		t.Fatalf("a bad seed: %d %s, want 400", w.Code, w.Body)
	}
	if v, _ := ctl.PopSeeds(ctx, 10); len(v) != 0 {
		t.Fatalf("a refused request queued %v", v)
	}
	w = do(t, s, "POST", "/api/crawl/seeds", `{"urls": ["http://a.test/x", "http://b.test/"]}`, auth)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"added": 2`) {
		t.Fatalf("seeds: %d %s", w.Code, w.Body)
	}
	if v, _ := ctl.PopSeeds(ctx, 10); len(v) != 2 || v[0] != "http://a.test/x" {
		t.Fatalf("queued seeds %v", v)
	}
	srv.Kill()
	if w := do(t, s, "POST", "/api/crawl/pause", "", auth); w.Code != 503 {
		t.Fatalf("pause with Redis gone: %d %s, want 503", w.Code, w.Body)
	}
}
