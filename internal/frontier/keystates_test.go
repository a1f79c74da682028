package frontier

import (
	"context"
	"testing"
	"time"
)

// TestKeyStates: a key's reported next start follows its lease and Done
// (done + delay with PerKey 1), its queued URLs and leases are counted,
// and an unknown key reports the zero KeyState.
func TestKeyStates(t *testing.T) {
	f, clk := newTestFrontier(t, Config{Delay: time.Second})
	for _, u := range []string{"http://a/1", "http://a/2", "http://b/1"} {
		key := "a"
		if u == "http://b/1" {
			key = "b"
		}
		if err := f.Push(req(u, key, 0)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	key := l.Request.Key
	got := f.KeyStates([]string{key, "nobody"})
	if got[0].Leases != 1 || got[1] != (KeyState{}) {
		t.Fatalf("during the lease: %+v", got)
	}
	clk.Advance(300 * time.Millisecond)
	f.Done(l, DoneInfo{})
	got = f.KeyStates([]string{key})
	if want := clk.Now().Add(time.Second); !got[0].Next.Equal(want) || got[0].Leases != 0 {
		t.Fatalf("after Done: %+v, want next start %v", got[0], want)
	}
	if q := f.KeyStates([]string{"a"})[0].Queued; q != 2-boolInt(key == "a") {
		t.Fatalf("key a: %d queued", q)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
