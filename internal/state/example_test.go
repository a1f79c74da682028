package state_test

import (
	"context"
	"fmt"
	"os"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// Discover accepts each URL once; Complete records the outcome and the
// links found, in one transaction.
func Example() {
	dir, _ := os.MkdirTemp("", "spider-state-example-")
	defer os.RemoveAll(dir)
	st, err := state.Open(dir, state.Options{ExpectedURLs: 1000})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()
	seeds, _ := st.Discover(ctx, []frontier.Request{
		{URL: "http://a.example/", Key: "a.example:80"},
		{URL: "http://a.example/", Key: "a.example:80"},
	})
	fmt.Println("accepted seeds:", len(seeds))
	res, _ := st.Complete(ctx, seeds[0], state.Outcome{Class: "200"}, []frontier.Request{
		{URL: "http://a.example/", Key: "a.example:80"},
		{URL: "http://a.example/about", Key: "a.example:80", Depth: 1},
	})
	fmt.Println("new:", res.New[0].URL, "pending:", st.PendingCount(), "seen:", st.SeenCount())
	counters, _ := st.Counters(ctx)
	fmt.Println("200:", counters["200"])
	// Output:
	// accepted seeds: 1
	// new: http://a.example/about pending: 1 seen: 2
	// 200: 1
}
