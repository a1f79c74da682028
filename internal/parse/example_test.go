package parse_test

import (
	"fmt"
	"net/url"

	"github.com/spider-crawler/spider/internal/parse"
)

func ExampleParse() {
	base, _ := url.Parse("http://example.com/news/today.html")
	body := []byte(`<html lang="zh-CN"><head><title>今日新闻</title>
<meta name="robots" content="noindex"></head>
<body><p>正文内容 <a href="../about.html">关于</a> <a href="/ad" rel="nofollow">广告</a>
<a href="javascript:void(0)">skipped</a></p></body></html>`)
	page, err := parse.Parse(base, body, parse.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(page.Title, page.Lang, page.MetaRobots.NoIndex, page.Skipped)
	fmt.Println(page.Text)
	for _, l := range page.Links {
		fmt.Println(l.URL, l.Text, l.NoFollow)
	}
	// Output:
	// 今日新闻 zh-CN true 1
	// 今日新闻 正文内容 关于 广告 skipped
	// http://example.com/about.html 关于 false
	// http://example.com/ad 广告 true
}

func ExampleNoiseLinks() {
	base, _ := url.Parse("http://example.com/")
	body := []byte(`<div class="nav"><a href="/">Home</a> | <a href="/news">News</a></div>
<p>A paragraph of real content that cites <a href="/source">a source</a> once.</p>`)
	noise, kept := parse.NoiseLinks(parse.Blocks(base, body), parse.DefaultNoiseThreshold)
	fmt.Println("noise:", len(noise), noise[0].URL, noise[1].URL)
	fmt.Println("kept:", len(kept), kept[0].URL)
	// Output:
	// noise: 2 http://example.com/ http://example.com/news
	// kept: 1 http://example.com/source
}
