package partition_test

import (
	"fmt"

	"github.com/spider-crawler/spider/internal/partition"
)

// Two levels: host → bucket, bucket → node. Every node computes the same table from the
// same member list.
func ExampleRing() {
	ring, err := partition.NewRing([]partition.Member{{ID: "A", Weight: 150}, {ID: "B", Weight: 80}, {ID: "C", Weight: 200}, {ID: "D", Weight: 40}})
	if err != nil {
		panic(err)
	}
	b := partition.Bucket("www.d0.test", partition.DefaultBuckets)
	table := ring.Balanced(partition.DefaultBuckets, 0)
	// The plain ring gives this bucket to B; B is over its quota, so the bounded-load
	// table sheds it to D, the next member clockwise with room.
	fmt.Println(b, ring.Owner(b), table[b])
	count := map[string]int{}
	for _, id := range table {
		count[id]++
	}
	fmt.Println(count)
	// Output:
	// 2677 B D
	// map[A:1308 B:698 C:1743 D:347]
}
