package denoise

import (
	"context"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestLCSKnown(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 0},
		{"ABCBDAB", "BDCABA", 4},
		{"abc", "abc", 3},
		{"abc", "def", 0},
		{"/s/1/a/2.html", "/s/1/a/2.html;jsessionid=1", 13},
		{strings.Repeat("a", 200), strings.Repeat("a", 150) + "b", 150},
		{strings.Repeat("ab", 100), strings.Repeat("ba", 100), 199},
	}
	for _, c := range cases {
		if got := LCS(c.a, c.b); got != c.want {
			t.Errorf("LCS(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := lcsDP(c.a, c.b); got != c.want {
			t.Errorf("lcsDP(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestLCSMatchesDP is the property test: on random strings of every length
// class (one word, several words, over the cap), the bit-parallel LCS
// equals the dynamic programme.
func TestLCSMatchesDP(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{"ab", "abcd", "/s.0123456789htmla?=&;", "abcdefghijklmnopqrstuvwxyz"}
	for i := 0; i < 1500; i++ {
		alpha := alphabets[i%len(alphabets)]
		gen := func() string {
			n := r.IntN(300)
			b := make([]byte, n)
			for k := range b {
				b[k] = alpha[r.IntN(len(alpha))]
			}
			return string(b)
		}
		a, b := gen(), gen()
		if got, want := LCS(a, b), lcsDP(a, b); got != want {
			t.Fatalf("LCS(%q, %q) = %d, DP says %d", a, b, got, want)
		}
		p := NewPattern(a, 1<<20)
		if got, want := p.LCS(b), lcsDP(a, b); got != want {
			t.Fatalf("Pattern(%q).LCS(%q) = %d, DP says %d", a, b, got, want)
		}
	}
}

func FuzzLCS(f *testing.F) {
	f.Add("ABCBDAB", "BDCABA")
	f.Add("/s/1/a/2.html", "/s/1/a/2.html?sid=ab12")
	f.Add(strings.Repeat("xy", 70), strings.Repeat("yx", 40))
	f.Add("", "a")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 1000 || len(b) > 1000 {
			return
		}
		want := lcsDP(a, b)
		if got := LCS(a, b); got != want {
			t.Fatalf("LCS(%q, %q) = %d, DP says %d", a, b, got, want)
		}
		if got := LCS(b, a); got != want {
			t.Fatalf("LCS not symmetric on %q, %q", a, b)
		}
		if got := NewPattern(a, 2000).LCS(b); got != want {
			t.Fatalf("Pattern LCS(%q, %q) = %d, DP says %d", a, b, got, want)
		}
		s := Similarity(a, b, 2000)
		if s < 0 || s > 1 {
			t.Fatalf("Similarity out of range: %v", s)
		}
	})
}

func TestSimilarity(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"", "", 1},
		{"a", "", 0},
		{"abcd", "abcd", 1},
		{"ab", "abcd", 0.75}, // (2/2 + 2/4)/2
		{"abcdef", "ghijkl", 0},
	}
	for _, c := range cases {
		if got := Similarity(c.a, c.b, 0); got != c.want {
			t.Errorf("Similarity(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	// The cap: only the first maxLen bytes count.
	if got := Similarity("abcX", "abcY", 3); got != 1 {
		t.Errorf("capped similarity = %v, want 1", got)
	}
}

func TestSkeleton(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://h.test/", "/"},
		{"http://h.test", "/"},
		{"http://h.test/s/12/a/3.html", "/s/#/a/#.html"},
		{"http://h.test/s/1/a/3.html;jsessionid=9F3A11B2C3", "/s/#/a/#.html;jsessionid=#"},
		{"http://h.test/About.HTML?utm_source=mail&utm_medium=x", "/about.html?utm_source=#&utm_medium=#"},
		{"http://h.test/x/deadbeefcafe/", "/x/deadbeefcafe/"},
		{"http://h.test/x/deadbeef1/", "/x/#/"},
		{"http://h.test/v2/ab12", "/v#/ab#"},
		{"http://h.test/calendar/2026/11/", "/calendar/#/#/"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Skeleton(u); got != c.want {
			t.Errorf("Skeleton(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseSample(t *testing.T) {
	cases := []struct {
		in   string
		kind Kind
		text string
		err  bool
	}{
		{";jsessionid=", Param, "jsessionid", false},
		{"?sid=", Query, "sid", false},
		{"&utm_source", Query, "utm_source", false},
		{"/calendar/", Segment, "calendar", false},
		{"/calendar/2024/01/", Whole, "/calendar/#/#/", false},
		{"http://shop.test/cart.php?PHPSESSID=abc123&item=9", Whole, "/cart.php?phpsessid=#&item=#", false},
		{"ftp://x.test/", 0, "", true},
		{"?", 0, "", true},
		{"hello", 0, "", true},
		{"", 0, "", true},
	}
	for _, c := range cases {
		s, err := ParseSample(c.in)
		if (err != nil) != c.err {
			t.Errorf("ParseSample(%q) error %v, want error %v", c.in, err, c.err)
			continue
		}
		if err == nil && (s.Kind != c.kind || s.Text != c.text) {
			t.Errorf("ParseSample(%q) = %v %q, want %v %q", c.in, s.Kind, s.Text, c.kind, c.text)
		}
	}
	if _, err := ParseSamples(strings.NewReader("# comment\n\n?sid=\nbogus\n")); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("ParseSamples error = %v, want one naming line 4", err)
	}
	if len(BuiltinSamples()) == 0 {
		t.Fatal("no built-in samples")
	}
}

func FuzzParseSamples(f *testing.F) {
	f.Add("?sid=\n;jsessionid=\n/calendar/\nhttp://a.test/x?y=1\n# c\n")
	f.Add("&\n;=\n/\n")
	f.Fuzz(func(t *testing.T, in string) {
		ss, err := ParseSamples(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, s := range ss {
			if s.Kind != Whole && s.Text == "" {
				t.Fatalf("empty component sample from %q", s.Source)
			}
		}
	})
}

func TestBlockRemovesNoise(t *testing.T) {
	f, err := NewFilter(Options{})
	if err != nil {
		t.Fatal(err)
	}
	clean := []string{
		"http://www.d0.test/", "http://www.d0.test/s/1/", "http://www.d0.test/s/2/",
		"http://www.d0.test/s/1/a/1.html", "http://www.d0.test/s/1/a/2.html", "http://blog.d0.test/s/3/a/9.html",
		"http://www.d0.test/about.html", "http://www.d0.test/old/1.html", "http://www.d0.test/?q=1",
		"http://www.d0.test/user/3/", "http://www.d0.test/x/r/301/2/5",
	}
	noise := []string{
		"http://www.d0.test/s/1/a/2.html;jsessionid=3fa9c0de11",
		"http://www.d0.test/s/1/?sid=77ab01cd",
		"http://www.d0.test/about.html?utm_source=newsletter&utm_medium=email&utm_campaign=c12",
		"http://www.d0.test/calendar/2026/11/",
		"http://www.d0.test/calendar/2026/12/",
		"http://www.d0.test/beacon?p=3",
	}
	in := append(slices.Clone(clean), noise...)
	r := f.Block("d0.test", in)
	if !slices.Equal(r.Clean, clean) {
		t.Errorf("clean = %v\nwant %v", r.Clean, clean)
	}
	var got []string
	for _, rm := range r.Removed {
		got = append(got, rm.URL)
		if rm.Sample == "" || rm.Score < f.Options().NoiseThreshold-f.Options().Deviation {
			t.Errorf("removal %+v has no sample or a low score", rm)
		}
	}
	if !slices.Equal(got, noise) {
		t.Errorf("removed = %v\nwant %v", got, noise)
	}
	if r.Clusters < 3 {
		t.Errorf("only %d clusters", r.Clusters)
	}
}

func TestClusterDecisions(t *testing.T) {
	// A noise cluster takes members slightly under the threshold; a clean
	// cluster loses only its high-scoring outliers.
	samples, err := ParseSamples(strings.NewReader("?tracking_id=\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFilter(Options{Samples: samples, NoiseThreshold: 0.9, Deviation: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	in := []string{
		"http://a.test/p?tracking_id=1", "http://a.test/p?tracking_id=2", // score 1
		"http://a.test/p?trackingid=3", // score ~0.95
		"http://a.test/p?track_id=3",   // score ~0.80: joins the noise cluster, within the deviation
	}
	r := f.Block("a.test", in)
	if len(r.Clean) != 0 || r.NoiseClusters != 1 {
		t.Errorf("noise cluster: clean %v, noise clusters %d", r.Clean, r.NoiseClusters)
	}
	for _, rm := range r.Removed {
		if rm.Reason != ReasonNoiseCluster {
			t.Errorf("%s removed as %s", rm.URL, rm.Reason)
		}
	}
	in = []string{"http://a.test/list/1", "http://a.test/list/2", "http://a.test/list/3", "http://a.test/list/4?sid=5"}
	r = f.Block("a.test", in)
	if len(r.Removed) != 1 || r.Removed[0].Reason != ReasonOutlier || r.Removed[0].URL != in[3] {
		t.Errorf("outlier: removed %+v", r.Removed)
	}
}

func TestRunMergesBlocks(t *testing.T) {
	f, err := NewFilter(Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := []string{"http://b.test/x", "http://a.test/y?sid=1", "http://www.a.test/z", "::bad"}
	r, err := f.Run(context.Background(), in, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"::bad", "http://www.a.test/z", "http://b.test/x"} // block order: "", a.test, b.test
	if !slices.Equal(r.Clean, want) || len(r.Removed) != 1 || r.Blocks != 3 {
		t.Errorf("Run = %+v", r)
	}
	if _, err := NewFilter(Options{NoiseThreshold: 1.5}); err == nil {
		t.Error("threshold 1.5 accepted")
	}
}
