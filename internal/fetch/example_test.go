package fetch_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/spider-crawler/spider/internal/fetch"
)

func ExampleClient_Fetch() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=gbk")
		w.Write([]byte("<p>\xd6\xd0\xce\xc4</p>")) // "中文" in GBK
	}))
	defer srv.Close()

	// The test server is on loopback, which the default configuration
	// refuses to connect to.
	c, err := fetch.New(fetch.Config{AllowPrivate: true}, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	u, _ := url.Parse(srv.URL + "/old")
	resp, err := c.Fetch(context.Background(), &fetch.Request{URL: u, FollowRedirects: 5})
	if err != nil {
		fmt.Println(fetch.Classify(err), err)
		return
	}
	body, _ := resp.UTF8()
	fmt.Println(resp.Status, resp.Redirects, resp.FinalURL.Path, resp.IsHTML(), resp.Charset, string(body))

	// The same URL with the default (AllowPrivate false) configuration.
	strict, _ := fetch.New(fetch.Config{}, nil, nil)
	_, err = strict.Fetch(context.Background(), &fetch.Request{URL: u})
	fmt.Println(fetch.Classify(err))
	// Output:
	// 200 1 /new true gbk <p>中文</p>
	// forbidden-address
}
