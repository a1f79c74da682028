package dedup

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFingerprintWhitespaceNormalisation(t *testing.T) {
	base := Fingerprint([]byte("hello world, this is a page"))
	same := []string{
		"hello world, this is a page",
		"  hello   world,\tthis\nis a page \n",
		"hello\u00a0world,\u3000this\r\nis\va\fpage",
		"\n\n\nhello world, this is a page",
	}
	for _, s := range same {
		if got := Fingerprint([]byte(s)); got != base {
			t.Errorf("Fingerprint(%q) = %x, want %x (white space only differs)", s, got, base)
		}
	}
	different := []string{
		"hello world, this is a Page",
		"helloworld, this is a page",
		"hello world, this is a page.",
		"",
	}
	for _, s := range different {
		if got := Fingerprint([]byte(s)); got == base {
			t.Errorf("Fingerprint(%q) equals the base fingerprint", s)
		}
	}
	if Fingerprint(nil) != Fingerprint([]byte(" \t\n ")) {
		t.Error("empty and all-space texts must share a fingerprint")
	}
	if Fingerprint(nil) == 0 {
		t.Error("Fingerprint returned 0")
	}
}

func TestFingerprintInvalidUTF8(t *testing.T) {
	a := Fingerprint([]byte("a\xffb  c"))
	b := Fingerprint([]byte("a\xffb c"))
	if a != b {
		t.Fatal("invalid UTF-8 must not break normalisation")
	}
	if a == Fingerprint([]byte("ab c")) {
		t.Fatal("invalid bytes must still be hashed")
	}
}

func FuzzFingerprint(f *testing.F) {
	for _, s := range []string{"", " ", "a b", "a\u3000b\u00a0c", "\xff\xfe", "多 语 言  text", "x\n\ny"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Fingerprint([]byte(s))
		// strings.Fields uses the same unicode.IsSpace definition.
		want := Fingerprint([]byte(strings.Join(strings.Fields(s), " ")))
		if got != want {
			t.Fatalf("Fingerprint(%q) = %x, normalised form gives %x", s, got, want)
		}
		if got == 0 {
			t.Fatal("Fingerprint returned 0")
		}
	})
}

func randomText(r *rand.Rand, words int) []string {
	vocab := strings.Fields(`the a crawler web page link host robots queue frontier
		priority politeness delay fetch parse store index rank search engine distributed
		node hash bloom filter duplicate content text word shingle network server client
		request response status redirect timeout error retry seed depth url domain path`)
	out := make([]string, words)
	for i := range out {
		out[i] = vocab[r.IntN(len(vocab))]
	}
	return out
}

func TestSimHashNearDuplicates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name    string
		edit    func(w []string) []string
		maxDist int
	}{
		{"identical", func(w []string) []string { return w }, 0},
		{"one word changed", func(w []string) []string { w[100] = "changed"; return w }, 6},
		{"one word removed", func(w []string) []string { return append(w[:200:200], w[201:]...) }, 6},
		{"case and punctuation", func(w []string) []string {
			for i := range w {
				if i%10 == 0 {
					w[i] = strings.ToUpper(w[i]) + ","
				}
			}
			return w
		}, 0},
		{"footer appended", func(w []string) []string { return append(w, "copyright", "2024", "all", "rights", "reserved") }, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			words := randomText(r, 400)
			a := SimHash(strings.Join(words, " "))
			edited := tt.edit(append([]string(nil), words...))
			b := SimHash(strings.Join(edited, " "))
			if d := HammingDistance(a, b); d > tt.maxDist {
				t.Errorf("distance %d, want ≤ %d", d, tt.maxDist)
			}
		})
	}
}

func TestSimHashUnrelated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	total, pairs := 0, 50
	for i := 0; i < pairs; i++ {
		a := SimHash(strings.Join(randomText(r, 300), " "))
		b := SimHash(strings.Join(randomText(r, 300), " "))
		d := HammingDistance(a, b)
		if d < 12 {
			t.Errorf("unrelated texts at distance %d", d)
		}
		total += d
	}
	if mean := float64(total) / float64(pairs); mean < 26 || mean > 38 {
		t.Errorf("mean distance of unrelated texts %.1f, want about 32", mean)
	}
}

func TestSimHashTokenisation(t *testing.T) {
	tests := []struct {
		a, b  string
		equal bool
	}{
		{"Hello, World! foo", "hello world foo", true},
		{"ÉCOLE café bar", "école CAFÉ bar", true},
		{"分布式网络爬虫", "分 布 式 网 络 爬 虫", true},
		{"分布式网络爬虫", "分布式网络蜘蛛", false},
		{"one", "one", true},
		{"one", "two", false},
		{"", "!!! ...", true},
	}
	for _, tt := range tests {
		ha, hb := SimHash(tt.a), SimHash(tt.b)
		if (ha == hb) != tt.equal {
			t.Errorf("SimHash(%q)=%x, SimHash(%q)=%x, want equal=%v", tt.a, ha, tt.b, hb, tt.equal)
		}
	}
	if SimHash("") != 0 {
		t.Error("SimHash of a text without words must be 0")
	}
	if SimHash("short") == 0 {
		t.Error("SimHash of a one-word text must not be 0")
	}
}

func TestHammingDistance(t *testing.T) {
	tests := []struct {
		a, b uint64
		want int
	}{
		{0, 0, 0},
		{0, ^uint64(0), 64},
		{0b1011, 0b0001, 2},
		{1 << 63, 0, 1},
	}
	for _, tt := range tests {
		if got := HammingDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("HammingDistance(%x, %x) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func FuzzSimHash(f *testing.F) {
	for _, s := range []string{"", "a", "a b c d", "分布式", "Ünïcödé words here", "\xff\xfe bad", "x,y;z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := SimHash(s)
		if SimHash(s+" \t.") != h {
			t.Fatal("trailing separators changed the hash")
		}
		if SimHash("  "+s) != h {
			t.Fatal("leading separators changed the hash")
		}
	})
}

func BenchmarkFingerprint(b *testing.B) {
	text := []byte(strings.Repeat("some visible page text with  spaces\n", 300))
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		Fingerprint(text)
	}
}

func BenchmarkSimHash(b *testing.B) {
	text := strings.Repeat("some visible page text with spaces ", 300)
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		SimHash(text)
	}
}
