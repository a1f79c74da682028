package dedup

import (
	"context"
	"errors"
	"testing"
	"time"
)

type setOf map[string]bool

func (s setOf) Contains(_ context.Context, u string) (bool, error) { return s[u], nil }

type failing struct{}

func (failing) Contains(context.Context, string) (bool, error) { return false, errors.New("disk gone") }

func TestCacheLists(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	c := NewCache(10, t0, setOf{"http://old/": true})
	ctx := context.Background()
	c.Admit("http://a/", at(1)) // S401
	steps := []struct {
		url  string
		want Hit
	}{
		{"http://a/", InVisit},
		{"http://b/", New},
		{"http://b/", InVisit},
		{"http://old/", InStore},
		{"http://old/", InCache},
	}
	for i, s := range steps {
		h, err := c.Check(ctx, s.url, at(2+i))
		if err != nil || h != s.want {
			t.Fatalf("step %d: Check(%s) = %v, %v; want %v", i, s.url, h, err, s.want)
		}
	}
	c.Rotate()
	if v, k := c.Len(); v != 0 || k != 3 {
		t.Fatalf("after Rotate: visit %d cache %d, want 0 and 3", v, k)
	}
	if h, _ := c.Check(ctx, "http://a/", at(10)); h != InCache {
		t.Errorf("a after rotate: %v, want cache", h)
	}
	st := c.Stats()
	if st.Lookups != 6 || st.Visit != 2 || st.Cache != 2 || st.Store != 1 || st.New != 1 {
		t.Errorf("stats %+v", st)
	}
	if _, err := NewCache(1, t0, failing{}).Check(ctx, "x", t0); err == nil {
		t.Error("store error not returned")
	}
}

func TestWeight(t *testing.T) {
	t0 := time.Unix(0, 0)
	cases := []struct {
		rep        int
		last       int
		tmin, tmax int
		want       float64
	}{
		{1, 10, 10, 20, 0}, // oldest: t_norm 0
		{3, 20, 10, 20, 3}, // newest: rep × 1
		{2, 15, 10, 20, 1}, // half way
		{4, 7, 7, 7, 4},    // single time: t_norm 1
	}
	for _, c := range cases {
		got := Weight(Entry{Rep: c.rep, Last: t0.Add(time.Duration(c.last) * time.Second)}, t0,
			time.Duration(c.tmin)*time.Second, time.Duration(c.tmax)*time.Second)
		if got != c.want {
			t.Errorf("Weight(rep %d, t %d, [%d,%d]) = %v, want %v", c.rep, c.last, c.tmin, c.tmax, got, c.want)
		}
	}
}

func TestCacheEvictsLowestWeight(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	c := NewCache(3, t0, nil)
	ctx := context.Background()
	// Weights after rotation, t in [1, 5]: a rep 1 t 1 → 0; b rep 5 t 2 → 1.25;
	// c rep 1 t 5 → 1; d rep 2 t 4 → 1.5; e rep 1 t 3 → 0.5.
	c.Admit("a", at(1))
	c.Admit("b", at(1))
	for range 4 {
		c.Check(ctx, "b", at(2))
	}
	c.Admit("c", at(5))
	c.Admit("d", at(3))
	c.Check(ctx, "d", at(4))
	c.Admit("e", at(3))
	c.Rotate()
	es, ws := c.CacheList()
	var got []string
	for _, e := range es {
		got = append(got, e.URL)
	}
	// a (0) and e (0.5) are evicted. Over the three left, t is in [2, 5]:
	// the weights are recomputed with the new minimum (d 4/3, c 1, b 0).
	if len(got) != 3 || got[0] != "d" || got[1] != "c" || got[2] != "b" || ws[0] != 2*2.0/3 || ws[2] != 0 {
		t.Fatalf("cache list %v weights %v, want d c b with 4/3 … 0", got, ws)
	}
	if c.Stats().Evicted != 2 {
		t.Errorf("evicted %d, want 2", c.Stats().Evicted)
	}
	// An evicted URL is no longer found in the lists (the stored set is the
	// fallback; here there is none, so it is new again).
	if h, _ := c.Check(ctx, "a", at(6)); h != New {
		t.Errorf("evicted a: %v, want new", h)
	}
}

func TestCacheBoundedUnderLoad(t *testing.T) {
	t0 := time.Unix(0, 0)
	store := setOf{}
	c := NewCache(100, t0, store)
	ctx := context.Background()
	for i := range 5000 {
		u := "u" + string(rune('a'+i%26)) + string(rune(i))
		store[u] = true
		if _, err := c.Check(ctx, u, t0.Add(time.Duration(i))); err != nil {
			t.Fatal(err)
		}
		if _, k := c.Len(); k > 100+100/8 {
			t.Fatalf("cache list grew to %d", k)
		}
	}
}
