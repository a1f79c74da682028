package dedup_test

import (
	"fmt"

	"github.com/spider-crawler/spider/internal/dedup"
)

func ExampleBloom() {
	b := dedup.NewBloom(1_000_000, 1e-3)
	fmt.Println(b.TestAndAdd("http://a.example/"))
	fmt.Println(b.TestAndAdd("http://a.example/"))
	fmt.Println(b.M(), b.K())
	// Output:
	// false
	// true
	// 14377600 10
}

func ExampleSimHash() {
	a := dedup.SimHash("the quick brown fox jumps over the lazy dog near the river bank today")
	b := dedup.SimHash("The quick brown fox jumps over the lazy dog near the river bank today!")
	fmt.Println(dedup.HammingDistance(a, b))
	fmt.Println(dedup.Fingerprint([]byte("a  b\n")) == dedup.Fingerprint([]byte("a b")))
	// Output:
	// 0
	// true
}
