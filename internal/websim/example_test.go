package websim_test

import (
	"fmt"

	"github.com/spider-crawler/spider/internal/websim"
)

func ExampleNew() {
	web, err := websim.New(websim.Config{Seed: 1, Hosts: 6, Domains: 2, Port: 8080})
	if err != nil {
		panic(err)
	}
	fmt.Println(web.Hosts())
	fmt.Println(web.Resolve()[0])
	fmt.Println(web.SeedURLs(1))
	truth, err := web.Truth(websim.TruthRules{MaxDepth: 1, Scope: websim.ScopeHost})
	if err != nil {
		panic(err)
	}
	fmt.Println(truth.MustFetch[0], truth.Final[truth.MustFetch[0]])
	// Output:
	// [www.d0.test www.d1.test d0.test d1.test blog.d0.test blog.d1.test]
	// www.d0.test:8080:127.0.0.1
	// [http://www.d0.test:8080/]
	// http://www.d0.test:8080/ 200
}

func ExampleParseFeatures() {
	f, err := websim.ParseFeatures("hang, reset,gzip-bomb")
	fmt.Println(f, err)
	fmt.Println(f.Has(websim.FeatureReset), f.Has(websim.FeatureNoise))
	// Output:
	// hang,reset,gzip-bomb <nil>
	// true false
}
