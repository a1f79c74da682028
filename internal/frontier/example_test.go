package frontier_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/spider-crawler/spider/internal/frontier"
)

// The engine's loop: Next blocks until a key may be fetched, discovered
// URLs are pushed before Done, and ErrDrained ends the crawl.
func Example() {
	fr, err := frontier.New(frontier.Config{Delay: frontier.NoDelay})
	if err != nil {
		panic(err)
	}
	defer fr.Close()
	_ = fr.Push(frontier.Request{URL: "http://a.example/", Key: "a.example:80", Priority: 1})
	_ = fr.Push(frontier.Request{URL: "http://b.example/", Key: "b.example:80", Priority: 0})
	ctx := context.Background()
	for {
		lease, err := fr.Next(ctx)
		if errors.Is(err, frontier.ErrDrained) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(lease.Request.URL)
		if lease.Request.URL == "http://b.example/" {
			_ = fr.Push(frontier.Request{URL: "http://b.example/next", Key: "b.example:80", Depth: 1})
		}
		fr.Done(lease, frontier.DoneInfo{})
	}
	// Output:
	// http://b.example/
	// http://a.example/
	// http://b.example/next
}
