package dedup

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
)

func TestNewBloomSizing(t *testing.T) {
	tests := []struct {
		n       uint64
		p       float64
		wantM   float64 // expected bits before rounding to 64
		wantK   int
		comment string
	}{
		{n: 1_000_000, p: 1e-3, wantM: 14_377_588, wantK: 10, comment: "1M at 0.1%"},
		{n: 10_000_000, p: 1e-6, wantM: 287_551_752, wantK: 20, comment: "default state sizing"},
		{n: 1000, p: 0.01, wantM: 9586, wantK: 7, comment: "small"},
		{n: 0, p: 0.01, wantM: 10, wantK: 44, comment: "zero expected is one; k fits the rounded m"},
	}
	for _, tt := range tests {
		t.Run(tt.comment, func(t *testing.T) {
			b := NewBloom(tt.n, tt.p)
			if b.M()%64 != 0 {
				t.Fatalf("m = %d, not a multiple of 64", b.M())
			}
			if float64(b.M()) < tt.wantM || float64(b.M()) >= tt.wantM+64 {
				t.Errorf("m = %d, want %.0f rounded up to 64", b.M(), tt.wantM)
			}
			if d := b.K() - tt.wantK; d < -1 || d > 1 {
				t.Errorf("k = %d, want about %d", b.K(), tt.wantK)
			}
		})
	}
}

func TestNewBloomClampsBadRates(t *testing.T) {
	for _, p := range []float64{0, -1, math.NaN(), 2, 1e-300} {
		b := NewBloom(100, p)
		if b.M() == 0 || b.K() < 1 || b.K() > maxK {
			t.Errorf("NewBloom(100, %v): m=%d k=%d", p, b.M(), b.K())
		}
	}
}

// TestBloomFalsePositiveRate inserts n strings and probes n others: there
// must be no false negative, and the measured false-positive rate must be
// within 20% of the configured one.
func TestBloomFalsePositiveRate(t *testing.T) {
	n, p, probes := 1_000_000, 1e-3, 1_000_000
	if raceEnabled || testing.Short() {
		// Same statistics (about 2000 expected false positives), less work.
		n, p, probes = 200_000, 1e-2, 200_000
	}
	b := NewBloom(uint64(n), p)
	for i := 0; i < n; i++ {
		b.Add("http://example.com/page/" + strconv.Itoa(i))
	}
	for i := 0; i < n; i += 7 {
		if !b.Test("http://example.com/page/" + strconv.Itoa(i)) {
			t.Fatalf("false negative for item %d", i)
		}
	}
	fp := 0
	for i := 0; i < probes; i++ {
		if b.Test("http://example.org/other/" + strconv.Itoa(i)) {
			fp++
		}
	}
	rate := float64(fp) / float64(probes)
	t.Logf("m=%d k=%d measured fp rate %.5f (configured %.5f), estimated %.5f, fill %.3f",
		b.M(), b.K(), rate, p, b.EstimatedFPRate(), b.FillRatio())
	if rate < 0.8*p || rate > 1.2*p {
		t.Errorf("measured false-positive rate %.5f, want within 20%% of %.5f", rate, p)
	}
	if est := b.EstimatedFPRate(); est < 0.8*p || est > 1.2*p {
		t.Errorf("EstimatedFPRate = %.5f, want within 20%% of %.5f", est, p)
	}
	if got := int(b.Len()); got > n || got < n-n/100 {
		t.Errorf("Len = %d, want about %d", got, n)
	}
	if fill := b.FillRatio(); math.Abs(fill-0.5) > 0.02 {
		t.Errorf("FillRatio = %.3f, want about 0.5 at the design load", fill)
	}
}

func TestBloomTestAndAdd(t *testing.T) {
	b := NewBloom(1000, 1e-6)
	if b.TestAndAdd("a") {
		t.Fatal("first TestAndAdd(a) reported present")
	}
	if !b.TestAndAdd("a") {
		t.Fatal("second TestAndAdd(a) reported absent")
	}
	if !b.Test("a") || b.Test("b") {
		t.Fatal("Test disagrees with TestAndAdd")
	}
	if b.Len() != 1 {
		t.Fatalf("Len = %d, want 1", b.Len())
	}
	var zero Bloom
	if zero.TestAndAdd("x") || zero.Test("x") || zero.FillRatio() != 0 {
		t.Fatal("zero Bloom must behave as an empty filter")
	}
}

func TestBloomConcurrent(t *testing.T) {
	workers, per := 8, 20_000
	if raceEnabled {
		per = 4000
	}
	b := NewBloom(uint64(workers*per), 1e-4)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				s := fmt.Sprintf("w%d/%d", w, i)
				b.TestAndAdd(s)
				if !b.Test(s) {
					t.Errorf("false negative right after add of %s", s)
					return
				}
				// Readers of other workers' keys race with their writers.
				_ = b.Test(fmt.Sprintf("w%d/%d", (w+1)%workers, i))
			}
		}()
	}
	wg.Wait()
	for w := 0; w < workers; w++ {
		for i := 0; i < per; i++ {
			if !b.Test(fmt.Sprintf("w%d/%d", w, i)) {
				t.Fatalf("false negative for w%d/%d after concurrent adds", w, i)
			}
		}
	}
	if got := int(b.Len()); got < workers*per*99/100 {
		t.Errorf("Len = %d, want about %d", got, workers*per)
	}
}

func TestKeyBytesRoundTrip(t *testing.T) {
	k := KeyOf("http://example.com/")
	if k.H1 == k.H2 {
		t.Fatal("the two seeded hashes must differ")
	}
	got, err := KeyFromBytes(k.AppendBinary(nil))
	if err != nil || got != k {
		t.Fatalf("KeyFromBytes(AppendBinary) = %v, %v; want %v", got, err, k)
	}
	if _, err := KeyFromBytes(make([]byte, 15)); err == nil {
		t.Fatal("KeyFromBytes accepted 15 bytes")
	}
}

func TestBloomWriteReadRoundTrip(t *testing.T) {
	b := NewBloom(5000, 1e-3)
	for i := 0; i < 5000; i++ {
		b.Add(strconv.Itoa(i))
	}
	var buf bytes.Buffer
	n, err := b.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v; buffer has %d bytes", n, err, buf.Len())
	}
	var c Bloom
	m, err := c.ReadFrom(bytes.NewReader(buf.Bytes()))
	if err != nil || m != n {
		t.Fatalf("ReadFrom = %d, %v; want %d, nil", m, err, n)
	}
	if c.M() != b.M() || c.K() != b.K() || c.Len() != b.Len() {
		t.Fatalf("header mismatch: got m=%d k=%d n=%d, want m=%d k=%d n=%d", c.M(), c.K(), c.Len(), b.M(), b.K(), b.Len())
	}
	for i := 0; i < 5000; i++ {
		if !c.Test(strconv.Itoa(i)) {
			t.Fatalf("false negative for %d after round trip", i)
		}
	}
	if c.FillRatio() != b.FillRatio() {
		t.Fatal("bit arrays differ after round trip")
	}
}

func TestBloomReadFromCorrupt(t *testing.T) {
	b := NewBloom(100, 0.01)
	b.Add("x")
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	mutate := func(f func(p []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short header", good[:10]},
		{"bad magic", mutate(func(p []byte) []byte { p[0] = 'X'; return p })},
		{"bad version", mutate(func(p []byte) []byte { p[4] = 9; return p })},
		{"zero bits", mutate(func(p []byte) []byte { copy(p[8:16], make([]byte, 8)); return p })},
		{"bits not multiple of 64", mutate(func(p []byte) []byte { p[8]++; return p })},
		{"huge bits", mutate(func(p []byte) []byte { p[15] = 0x7f; return p })},
		{"zero k", mutate(func(p []byte) []byte { copy(p[16:20], make([]byte, 4)); return p })},
		{"truncated bits", good[:headerSize+5]},
		{"missing checksum", good[:len(good)-8]},
		{"flipped bit", mutate(func(p []byte) []byte { p[headerSize+3] ^= 0x10; return p })},
		{"bad checksum", mutate(func(p []byte) []byte { p[len(p)-1] ^= 1; return p })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewBloom(10, 0.1)
			before := c.M()
			_, err := c.ReadFrom(bytes.NewReader(tt.data))
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadFrom error = %v, want ErrCorrupt", err)
			}
			if c.M() != before {
				t.Fatal("failed ReadFrom modified the receiver")
			}
		})
	}
}

func FuzzBloomReadFrom(f *testing.F) {
	b := NewBloom(10, 0.1)
	b.Add("seed")
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("SPBF"))
	f.Add([]byte{})
	f.Add(append([]byte("SPBF\x01\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00"), make([]byte, 24)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Bloom
		n, err := c.ReadFrom(bytes.NewReader(data))
		if n > int64(len(data)) {
			t.Fatalf("consumed %d bytes of %d", n, len(data))
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if _, err := c.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), data[:n]) {
			t.Fatal("accepted input does not re-encode to itself")
		}
	})
}

func BenchmarkBloomAdd(b *testing.B) {
	f := NewBloom(10_000_000, 1e-6)
	keys := benchKeys(1 << 16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Add(keys[i&(len(keys)-1)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "adds/s")
}

func BenchmarkBloomTest(b *testing.B) {
	f := NewBloom(10_000_000, 1e-6)
	keys := benchKeys(1 << 16)
	for _, k := range keys[:len(keys)/2] {
		f.Add(k)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Test(keys[i&(len(keys)-1)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

func BenchmarkBloomTestParallel(b *testing.B) {
	f := NewBloom(10_000_000, 1e-6)
	keys := benchKeys(1 << 16)
	for _, k := range keys[:len(keys)/2] {
		f.Add(k)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			f.Test(keys[i&(len(keys)-1)])
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

func BenchmarkBloomAddParallel(b *testing.B) {
	f := NewBloom(10_000_000, 1e-6)
	keys := benchKeys(1 << 16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			f.Add(keys[i&(len(keys)-1)])
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "adds/s")
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("http://host%d.example.com/path/to/page-%d.html", i%1000, i)
	}
	return keys
}

// TestBloomSizeBounded: sizes from configuration cannot make NewBloom
// panic or allocate without bound (--expected-urls 1e15 used to panic in
// make), and BloomBytes tells the memory a size would need.
func TestBloomSizeBounded(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		p    float64
		want float64 // bytes, ±1 word
	}{
		{10_000_000, 1e-6, 35_943_976},
		{1, 0.5, 8},
		{0, 0, 8},
	} {
		if got := BloomBytes(tt.n, tt.p); got < tt.want-8 || got > tt.want+8 {
			t.Errorf("BloomBytes(%d, %g) = %.0f, want about %.0f", tt.n, tt.p, got, tt.want)
		}
		if b := NewBloom(tt.n, tt.p); float64(b.M()/8) != BloomBytes(tt.n, tt.p) {
			t.Errorf("NewBloom(%d, %g) has %d bytes, BloomBytes says %.0f", tt.n, tt.p, b.M()/8, BloomBytes(tt.n, tt.p))
		}
	}
	for _, n := range []uint64{1e15, math.MaxUint64} {
		if got := BloomBytes(n, 1e-6); got <= MaxBloomBytes || math.IsNaN(got) {
			t.Errorf("BloomBytes(%d, 1e-6) = %g, want more than the cap", n, got)
		}
	}
	if words := bloomWords(1e15, 1e-6); words*8 != MaxBloomBytes {
		t.Fatalf("NewBloom(1e15) would allocate %d bytes, want the cap %d", words*8, MaxBloomBytes)
	}
}
