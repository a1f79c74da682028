package urls_test

import (
	"fmt"
	"net/url"

	"github.com/spider-crawler/spider/internal/urls"
)

func ExampleParse() {
	u, err := urls.Parse("HTTP://WWW.Example.COM:80/a/./b/../%7euser?b=2&a=1#top")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(u)
	fmt.Println(urls.SURT(u))
	fmt.Println(urls.HostPort(u), urls.RegistrableDomain(u.Hostname()))
	// Output:
	// http://www.example.com/a/~user?b=2&a=1
	// http://(com,example,www,)/a/~user?b=2&a=1
	// www.example.com example.com
}

func ExampleNormalizer_Resolve() {
	n := urls.Normalizer{SortQuery: true, DropParams: []string{"utm_*"}}
	base, _ := n.Parse("http://example.com/news/today.html")
	for _, href := range []string{"../about?z=1&utm_source=x&a=2", "//cdn.example.com/x", "mailto:me@example.com"} {
		u, err := n.Resolve(base, href)
		fmt.Println(u, err)
	}
	// Output:
	// http://example.com/about?a=2&z=1 <nil>
	// http://cdn.example.com/x <nil>
	// <nil> cannot crawl "mailto:me@example.com": scheme "mailto" is not http or https: urls: not an http or https URL
}

func ExampleChain() {
	seed, _ := urls.Parse("http://www.d0.test/")
	scope, _ := urls.NewScope(urls.ScopeDomain, []*url.URL{seed}, "")
	chain := urls.Chain{&urls.SuffixFilter{}, scope, &urls.DepthFilter{Max: 3}}
	for _, raw := range []string{"http://img.d0.test/a.html", "http://www.d0.test/logo.png", "http://d1.test/"} {
		u, _ := urls.Parse(raw)
		fmt.Println(raw, chain.Check(u, 1))
	}
	// Output:
	// http://img.d0.test/a.html <nil>
	// http://www.d0.test/logo.png rejected by suffix filter: path ends in .png
	// http://d1.test/ rejected by scope filter: domain d1.test is not a seed domain
}
