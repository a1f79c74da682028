package denoise

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchURLs are skeleton-like strings of URL lengths.
func benchURLs(n, length int) []string {
	r := rand.New(rand.NewPCG(3, 4))
	alpha := "/abcdefghijklmnopqrstuvwxyz#.?=&;_-"
	out := make([]string, n)
	for i := range out {
		b := make([]byte, length/2+r.IntN(length))
		for k := range b {
			b[k] = alpha[r.IntN(len(alpha))]
		}
		out[i] = string(b)
	}
	return out
}

// BenchmarkLCS compares the bit-parallel LCS with the dynamic programme on
// URL-sized strings; comparisons/s is reported.
func BenchmarkLCS(b *testing.B) {
	for _, length := range []int{40, 100, 250} {
		us := benchURLs(256, length)
		b.Run(fmt.Sprintf("bitparallel/len%d", length), func(b *testing.B) {
			n := 0
			for i := 0; b.Loop(); i++ {
				n += LCS(us[i%256], us[(i*7+1)%256])
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmp/s")
		})
		b.Run(fmt.Sprintf("pattern/len%d", length), func(b *testing.B) {
			ps := make([]*Pattern, 256)
			for i, u := range us {
				ps[i] = NewPattern(u, 0)
			}
			n := 0
			for i := 0; b.Loop(); i++ {
				n += ps[i%256].LCS(us[(i*7+1)%256])
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmp/s")
		})
		b.Run(fmt.Sprintf("dp/len%d", length), func(b *testing.B) {
			n := 0
			for i := 0; b.Loop(); i++ {
				n += lcsDP(us[i%256], us[(i*7+1)%256])
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmp/s")
		})
	}
}

// BenchmarkBlock clusters one block of 10,000 URLs of a few hundred shapes.
func BenchmarkBlock(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	var list []string
	for i := range 10000 {
		shape := r.IntN(300)
		list = append(list, fmt.Sprintf("http://www.site.test/c%d/item-%d/page/%d.html", shape%37, shape, i))
		if i%20 == 0 {
			list[len(list)-1] += fmt.Sprintf("?utm_source=x%d", i)
		}
	}
	f, err := NewFilter(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		f.Block("site.test", list)
	}
	b.ReportMetric(float64(len(list)*b.N)/b.Elapsed().Seconds(), "urls/s")
}
