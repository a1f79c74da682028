package robots_test

import (
	"context"
	"fmt"
	"net/url"

	"github.com/spider-crawler/spider/internal/robots"
)

func ExampleParse() {
	r := robots.Parse([]byte(`User-agent: *
Disallow: /private
Allow: /private/open
Crawl-delay: 1.5

User-agent: spider
Disallow: /*.pdf$
Sitemap: https://example.com/sitemap.xml
`))
	u, _ := url.Parse("https://example.com/docs/a.pdf")
	fmt.Println(r.Allowed("Spider/1.0 (+https://example.com/bot)", u))
	fmt.Println(r.Allowed("OtherBot", u))
	fmt.Println(r.Group("OtherBot").CrawlDelay())
	fmt.Println(r.Sitemaps())
	// Output:
	// false
	// true
	// 1.5s true
	// [https://example.com/sitemap.xml]
}

func ExampleCheck() {
	body := []byte("User-agent: *\nDisallow: /private\nAllow: /private/open\n")
	for _, u := range []string{"http://example.com/private/x", "http://example.com/private/open", "http://example.com/"} {
		allowed, rule, err := robots.Check(body, "spider", u)
		fmt.Printf("%s allowed=%v rule=%q err=%v\n", u, allowed, rule, err)
	}
	// Output:
	// http://example.com/private/x allowed=false rule="Disallow: /private" err=<nil>
	// http://example.com/private/open allowed=true rule="Allow: /private/open" err=<nil>
	// http://example.com/ allowed=true rule="" err=<nil>
}

func ExampleCache() {
	fetch := func(ctx context.Context, robotsURL *url.URL) (int, []byte, error) {
		if robotsURL.Host == "down.example" {
			return 503, nil, nil
		}
		return 200, []byte("User-agent: *\nDisallow: /admin\n"), nil
	}
	c := robots.NewCache(fetch, robots.CacheOptions{})
	for _, raw := range []string{"http://up.example/admin", "http://up.example/home", "http://down.example/home"} {
		u, _ := url.Parse(raw)
		r, err := c.Get(context.Background(), u)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(raw, r.Kind(), r.Allowed("spider", u))
	}
	fmt.Printf("%+v\n", c.Stats())
	// Output:
	// http://up.example/admin parsed false
	// http://up.example/home parsed true
	// http://down.example/home unreachable false
	// {Entries:2 Hits:1 Misses:2 Fetches:2 Unreachable:1 StaleServed:0 Evictions:0}
}
