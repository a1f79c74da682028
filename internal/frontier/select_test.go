package frontier

import (
	"context"
	"strings"
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
