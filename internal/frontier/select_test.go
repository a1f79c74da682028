package frontier

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// topicPicker is a Selector that prefers a topic and records what it saw.
type topicPicker struct {
	prefer string
	seen   [][]Candidate
	queued map[string]int
}

func (p *topicPicker) Select(_ time.Time, cands []Candidate, queued func(string) int) int {
	p.seen = append(p.seen, append([]Candidate(nil), cands...))
	p.queued = map[string]int{"a": queued("a"), "b": queued("b")}
	for i, c := range cands {
		if c.Topic == p.prefer {
			return i
		}
	}
	return 0
}

// TestSelectorChoosesAmongReadyKeys checks that the Selector picks which
// ready key is leased, is offered only keys whose politeness time has come,
// and sees per-topic queue counts.
func TestSelectorChoosesAmongReadyKeys(t *testing.T) {
	clk := newFakeClock()
	sel := &topicPicker{prefer: "b"}
	f, err := New(Config{Delay: time.Second, Now: clk.Now, After: clk.After, Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	push := func(url, key, topic string) {
		r := req(url, key, 0)
		r.Topic = topic
		if err := f.Push(r); err != nil {
			t.Fatal(err)
		}
	}
	push("http://a1/1", "a1", "a")
	push("http://a2/1", "a2", "a")
	push("http://b1/1", "b1", "b")
	push("http://b1/2", "b1", "b")
	l, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Request.Topic != "b" || l.Request.URL != "http://b1/1" {
		t.Fatalf("leased %s (%s), want the preferred topic b", l.Request.URL, l.Request.Topic)
	}
	if got := sel.queued; got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("queued counts seen by the selector = %v, want a:2 b:2", got)
	}
	if n := len(sel.seen[0]); n != 3 {
		t.Fatalf("selector was offered %d candidates, want 3 ready keys", n)
	}
	f.Done(l, DoneInfo{})
	// b1 is now waiting for its delay: the selector must not be offered it.
	l2, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sel.seen[1] {
		if c.Key == "b1" {
			t.Fatalf("selector was offered key b1 during its politeness delay")
		}
	}
	if l2.Request.Topic != "a" {
		t.Fatalf("leased %s, want a topic-a URL while b1 waits", l2.Request.URL)
	}
	f.Done(l2, DoneInfo{})
	if q := f.TopicQueued(); q["a"] != 1 || q["b"] != 1 {
		t.Fatalf("TopicQueued = %v, want a:1 b:1", q)
	}
	clk.Advance(time.Second)
	l3, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l3.Request.URL != "http://b1/2" {
		t.Fatalf("after the delay leased %s, want http://b1/2", l3.Request.URL)
	}
	f.Done(l3, DoneInfo{})
	if n := f.Drop(func(string) bool { return true }); n != 1 {
		t.Fatalf("Drop removed %d, want 1", n)
	}
	if q := f.TopicQueued(); len(q) != 0 {
		t.Fatalf("TopicQueued after Drop = %v, want empty", q)
	}
}

func TestPushUrgentGoesAhead(t *testing.T) {
	clk := newFakeClock()
	f, err := New(Config{Delay: NoDelay, Now: clk.Now, After: clk.After})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, u := range []string{"http://h/1", "http://h/2"} {
		if err := f.Push(req(u, "h", 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.PushUrgent([]Request{req("http://h/hub", "h", 0), req("http://h/new", "h", 0)}); err != nil {
		t.Fatal(err)
	}
	if err := f.PushUrgent([]Request{{URL: "x"}}); err == nil {
		t.Fatal("PushUrgent accepted a request without a key")
	}
	var got []string
	for range 4 {
		l, err := f.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Request.URL)
		f.Done(l, DoneInfo{})
	}
	want := "http://h/hub http://h/new http://h/1 http://h/2"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("lease order %s, want %s", s, want)
	}
}

// gate is an Admitter that admits the keys in open and counts its calls.
type gate struct {
	mu    sync.Mutex
	open  map[string]bool
	calls int
}

func (g *gate) Select(_ time.Time, cands []Candidate, _ func(string) int) int { return 0 }

func (g *gate) Admit(c Candidate) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	return g.open[c.Key]
}

func (g *gate) set(key string, open bool) {
	g.mu.Lock()
	g.open[key] = open
	g.mu.Unlock()
}

// TestAdmitterHoldsKeysBack: an Admitter's declined keys are never offered
// or leased (even at the heap top); with every ready key declined Next
// waits without asking again until Wake, then leases what is admitted.
func TestAdmitterHoldsKeysBack(t *testing.T) {
	clk := newFakeClock()
	g := &gate{open: map[string]bool{"b": true}}
	f, err := New(Config{Delay: time.Second, Now: clk.Now, After: clk.After, Selector: g})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	for _, r := range []Request{req("http://a/1", "a", 0), req("http://b/1", "b", 0), req("http://a/2", "a", 0)} {
		if err := f.Push(r); err != nil {
			t.Fatal(err)
		}
	}
	l, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Request.Key != "b" {
		t.Fatalf("leased %s, want the only admitted key b", l.Request.URL)
	}
	f.Done(l, DoneInfo{}) // b is empty now; a is ready but declined

	got := make(chan *Lease, 1)
	go func() {
		l, err := f.Next(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case l := <-got:
		t.Fatalf("Next leased %s, a declined key", l.Request.URL)
	default:
	}
	g.mu.Lock()
	calls := g.calls
	g.mu.Unlock()
	if calls > 4 {
		t.Fatalf("Admit called %d times while every key was declined: Next spins", calls)
	}
	g.set("a", true)
	f.Wake()
	select {
	case l := <-got:
		if l.Request.URL != "http://a/1" {
			t.Fatalf("after Wake leased %s, want http://a/1", l.Request.URL)
		}
		f.Done(l, DoneInfo{})
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not lease the key admitted after Wake")
	}
	if n := f.Stats().Queued; n != 1 {
		t.Fatalf("%d URLs queued, want 1", n)
	}
}

// offerCounter is a gate that records how many candidates each Select was
// offered.
type offerCounter struct {
	gate
	offered []int
}

func (o *offerCounter) Select(_ time.Time, cands []Candidate, _ func(string) int) int {
	o.mu.Lock()
	o.offered = append(o.offered, len(cands))
	o.mu.Unlock()
	return 0
}

// TestAdmitterDeclinedKeysDoNotUseUpCandidates: declined ready keys do not
// count against MaxCandidates, so a crawl node's hosts are offered however
// many ready hosts of full nodes come first (more than MaxCandidates of
// them here, all declined); the bound still holds for admitted keys.
func TestAdmitterDeclinedKeysDoNotUseUpCandidates(t *testing.T) {
	for _, tc := range []struct {
		name           string
		keys, admitted int
		wantOffered    int
	}{
		{"few admitted among many declined", 3 * MaxCandidates, 5, 5},
		{"more admitted than the bound", 3 * MaxCandidates, MaxCandidates + 40, MaxCandidates},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			g := &offerCounter{gate: gate{open: map[string]bool{}}}
			f, err := New(Config{Delay: time.Second, Now: clk.Now, After: clk.After, Selector: g})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for i := range tc.keys {
				key := fmt.Sprintf("k%04d", i)
				if i >= tc.keys-tc.admitted { // the last pushed: deep in the heap
					g.set(key, true)
				}
				if err := f.Push(req("http://"+key+"/1", key, 0)); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for range min(tc.admitted, 5) {
				l, err := f.Next(ctx)
				if err != nil {
					t.Fatalf("Next with %d admitted keys behind %d declined: %v", tc.admitted, tc.keys-tc.admitted, err)
				}
				if !g.open[l.Request.Key] {
					t.Fatalf("leased %s, a declined key", l.Request.Key)
				}
			}
			if g.offered[0] != tc.wantOffered {
				t.Errorf("the first Select was offered %d candidates, want %d", g.offered[0], tc.wantOffered)
			}
		})
	}
}
