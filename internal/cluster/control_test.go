package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// follower runs Follow for node and records every command applied.
type follower struct {
	mu   sync.Mutex
	seen []Command
}

func (f *follower) last() Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		return Command{}
	}
	return f.seen[len(f.seen)-1]
}

func startFollower(t *testing.T, ctx context.Context, c *Control, node string) *follower {
	f := &follower{}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Follow(ctx, node, nil, func(_ context.Context, cmd Command) error {
			f.mu.Lock()
			f.seen = append(f.seen, cmd)
			f.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func TestControlStatesAcksAndSeeds(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	c := NewControl(srv.Client(), mustKeys(t, "ctl1"))
	if cmd, err := c.Get(ctx); err != nil || cmd.State != ControlRunning || cmd.Seq != 0 {
		t.Fatalf("no control key: got %+v, %v; want running, seq 0", cmd, err)
	}
	if _, err := c.Set(ctx, "sleeping"); !errors.Is(err, ErrBadControl) {
		t.Fatalf("bad state: err %v, want ErrBadControl", err)
	}
	f1, f2 := startFollower(t, ctx, c, "n1"), startFollower(t, ctx, c, "n2")
	eventually(t, 5*time.Second, "both followers live", func() bool {
		live, err := c.Live(ctx)
		slices.Sort(live)
		return err == nil && slices.Equal(live, []string{"n1", "n2"})
	})
	for _, state := range []string{ControlPaused, ControlRunning, ControlStopping} {
		cmd, err := c.Set(ctx, state)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		acked, missing, err := c.WaitAcks(wctx, cmd.Seq, []string{"n1", "n2"})
		cancel()
		if err != nil || len(missing) != 0 || len(acked) != 2 {
			t.Fatalf("%s: acked %v missing %v err %v", state, acked, missing, err)
		}
		acks, _, err := c.Acks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"n1", "n2"} {
			if a := acks[n]; a.AckedMS < cmd.AtMS || a.AckedMS > a.AtMS {
				t.Fatalf("%s: ack %+v of command %+v: want command ≤ acked ≤ refreshed", n, a, cmd)
			}
		}
		// An ack is written only after apply returned: each follower saw it.
		for _, f := range []*follower{f1, f2} {
			if got := f.last(); got.Seq != cmd.Seq || got.State != state {
				t.Fatalf("%s acked but the follower's last command is %+v", state, got)
			}
		}
	}
	// Refreshes keep the time of the first ack of a seq.
	before, _, _ := c.Acks(ctx)
	time.Sleep(2 * ControlPoll) // the subject: refreshes over time
	after, _, _ := c.Acks(ctx)
	if b, a := before["n1"], after["n1"]; a.AckedMS != b.AckedMS || a.AtMS <= b.AtMS {
		t.Fatalf("refresh: before %+v after %+v: want the same acked_ms, a later at_ms", b, a)
	}
	// Seeds raise seq, keep the state, and go to exactly one popper.
	cmd, err := c.AddSeeds(ctx, []string{"http://a/", "http://b/", "http://c/"})
	if err != nil || cmd.State != ControlStopping {
		t.Fatalf("AddSeeds: %+v %v; want the state kept", cmd, err)
	}
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				v, err := c.PopSeeds(ctx, 1)
				if err != nil || len(v) == 0 {
					return
				}
				mu.Lock()
				got = append(got, v...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	if !slices.Equal(got, []string{"http://a/", "http://b/", "http://c/"}) {
		t.Fatalf("popped %v, want each seed once", got)
	}
	// A new run resumes a stopped crawl, not a paused one.
	if err := c.Fresh(ctx); err != nil {
		t.Fatal(err)
	}
	if cmd, _ := c.Get(ctx); cmd.State != ControlRunning {
		t.Fatalf("after Fresh on a stopped crawl: %+v, want running", cmd)
	}
	c.Set(ctx, ControlPaused)
	c.Fresh(ctx)
	if cmd, _ := c.Get(ctx); cmd.State != ControlPaused {
		t.Fatalf("after Fresh on a paused crawl: %+v, want paused", cmd)
	}
}

// TestControlWithoutPubSub: a follower that misses the message (here: the
// command written behind its back, with no PUBLISH) still applies it within
// a few polls.
func TestControlWithoutPubSub(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	c := NewControl(srv.Client(), mustKeys(t, "ctl2"))
	f := startFollower(t, ctx, c, "n1")
	eventually(t, 5*time.Second, "follower started", func() bool { return f.last().State == ControlRunning })
	if err := srv.Client().Set(ctx, c.key(), `{"state":"paused","seq":7,"at_ms":1}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*ControlPoll, "paused seen by polling", func() bool { return f.last().Seq == 7 && f.last().State == ControlPaused })
}

// TestControlOtherCrawl: one crawl's commands never reach another's nodes.
func TestControlOtherCrawl(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	a, b := NewControl(srv.Client(), mustKeys(t, "ctl-a")), NewControl(srv.Client(), mustKeys(t, "ctl-b"))
	fb := startFollower(t, ctx, b, "n1")
	eventually(t, 5*time.Second, "follower started", func() bool { return fb.last().State == ControlRunning })
	if _, err := a.Set(ctx, ControlStopping); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddSeeds(ctx, []string{"http://x/"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ControlPoll) // the subject is that nothing happens
	if got := fb.last(); got.State != ControlRunning || got.Seq != 0 {
		t.Fatalf("crawl b's follower applied %+v from crawl a", got)
	}
	if v, _ := b.PopSeeds(ctx, 10); len(v) != 0 {
		t.Fatalf("crawl b popped crawl a's seeds %v", v)
	}
}

// TestControlSurvivesRedisRestart: a follower keeps following through a
// Redis restart (its subscription and its polls reconnect); a command given
// after the restart is applied and acknowledged.
func TestControlSurvivesRedisRestart(t *testing.T) {
	srv := redistest.Start(t, redistest.AppendOnly())
	ctx := testCtx(t)
	c := NewControl(srv.Client(), mustKeys(t, "ctl3"))
	f := startFollower(t, ctx, c, "n1")
	if _, err := c.Set(ctx, ControlPaused); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "paused before the restart", func() bool { return f.last().State == ControlPaused })
	srv.Kill()
	time.Sleep(2 * ControlPoll) // the subject: an outage of a few polls
	srv.Restart()
	if cmd, err := c.Get(ctx); err != nil || cmd.State != ControlPaused {
		t.Fatalf("after the restart the control word is %+v (%v), want paused (append-only file)", cmd, err)
	}
	cmd, err := c.Set(ctx, ControlRunning)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, missing, err := c.WaitAcks(wctx, cmd.Seq, []string{"n1"}); err != nil || len(missing) > 0 {
		t.Fatalf("resume after a Redis restart not acknowledged: missing %v, %v", missing, err)
	}
	if got := f.last(); got.Seq != cmd.Seq || got.State != ControlRunning {
		t.Fatalf("follower's last command %+v, want %+v", got, cmd)
	}
}

// TestControlOnRedisCluster: the control word's script touches keys of one
// hash tag, so it runs on a Redis Cluster; followers follow there too.
func TestControlOnRedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx := testCtx(t)
	c := NewControl(cl.Client(), mustKeys(t, "ctl4"))
	f := startFollower(t, ctx, c, "n1")
	cmd, err := c.AddSeeds(ctx, []string{"http://a/"})
	if err != nil {
		t.Fatal(err)
	}
	if cmd, err = c.Set(ctx, ControlPaused); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, missing, err := c.WaitAcks(wctx, cmd.Seq, []string{"n1"}); err != nil || len(missing) > 0 {
		t.Fatalf("not acknowledged on a cluster: missing %v, %v", missing, err)
	}
	if got := f.last(); got.State != ControlPaused {
		t.Fatalf("follower's last command %+v, want paused", got)
	}
	if v, err := c.PopSeeds(ctx, 10); err != nil || len(v) != 1 {
		t.Fatalf("seeds on a cluster: %v %v", v, err)
	}
}

// TestControlDrainSeeds: DrainSeeds hands every queued seed to add once,
// in batches of at most 100, and stops at add's first error, returning it
// (the failed batch is not queued again; the rest stays queued).
func TestControlDrainSeeds(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := NewControl(srv.Client(), mustKeys(t, "ctl5"))
	var urls []string
	for i := range 250 {
		urls = append(urls, fmt.Sprintf("http://example.test/%d", i))
	}
	if _, err := c.AddSeeds(ctx, urls); err != nil {
		t.Fatal(err)
	}
	var got []string
	batches := 0
	if err := c.DrainSeeds(ctx, func(_ context.Context, b []string) error {
		batches++
		if len(b) > 100 {
			t.Errorf("a batch of %d seeds, want at most 100", len(b))
		}
		got = append(got, b...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, urls) || batches != 3 {
		t.Fatalf("drained %d seeds in %d batches, want the 250 queued in 3", len(got), batches)
	}
	if _, err := c.AddSeeds(ctx, urls); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	calls := 0
	if err := c.DrainSeeds(ctx, func(context.Context, []string) error { calls++; return boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("DrainSeeds with a failing add: %v after %d calls, want boom after 1", err, calls)
	}
	if left, err := c.PopSeeds(ctx, 1000); err != nil || len(left) != 150 {
		t.Fatalf("after a failed batch %d seeds left (%v), want 150", len(left), err)
	}
}
