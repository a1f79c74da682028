package robots

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// RFC 9309 §5.1 "Simple Example".
const rfcSimpleExample = `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
`

func TestRFCExamples(t *testing.T) {
	runCases(t, "§5.1", rfcSimpleExample, []googleCase{
		{"otherbot", "http://example.com/example/x", false},
		{"otherbot", "http://example.com/publications/x", true},
		{"otherbot", "http://example.com/a/b.gif", false},
		{"otherbot", "http://example.com/a/b.gif?x", true},
		{"otherbot", "http://example.com/", true},
		{"foobot", "http://example.com/example/page.html", true},
		{"foobot", "http://example.com/example/allowed.gif", true},
		{"foobot", "http://example.com/example/other", false},
		{"foobot", "http://example.com/", false},
		{"barbot", "http://example.com/example/page.html", false},
		{"barbot", "http://example.com/example/other", true},
		{"bazbot", "http://example.com/example/page.html", false},
		{"BazBot/2.0", "http://example.com/a.gif", true},
		{"quxbot", "http://example.com/example/page.html", true},
	})
	// §5.2 "Longest Match".
	runCases(t, "§5.2", "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n", []googleCase{
		{"foobot", "http://example.com/example/page/disallowed.gif", false},
		{"foobot", "http://example.com/example/page/ok.gif", true},
	})
	// §2.2.1: groups naming the same product token are merged; without a
	// matching group, the "*" group applies.
	runCases(t, "§2.2.1 merge", "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n", []googleCase{
		{"ExampleBot", "http://example.com/foo", false},
		{"examplebot", "http://example.com/baz", false},
		{"ExampleBot", "http://example.com/qux", true},
	})
	runCases(t, "§2.2.1 star", "user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n", []googleCase{
		{"ExampleBot", "http://example.com/foo", false},
		{"ExampleBot", "http://example.com/baz", true},
		{"BazBot", "http://example.com/foo", true},
	})
	// §2.2.2 table of percent-encoded paths, and §2.2.3 special characters.
	runCases(t, "§2.2.2", "user-agent: *\ndisallow: /foo/bar?baz=quz\ndisallow: /foo/bar/ツ\ndisallow: /a/%E3%83%84\ndisallow: /b/%62%61%7A\n", []googleCase{
		{"x", "http://example.com/foo/bar?baz=quz", false},
		{"x", "http://example.com/foo/bar/%E3%83%84", false},
		{"x", "http://example.com/a/%E3%83%84", false},
		{"x", "http://example.com/a/%e3%83%84", false},
		{"x", "http://example.com/b/baz", false},
		{"x", "http://example.com/b/bar", true},
	})
	runCases(t, "§2.2.3", "user-agent: *\ndisallow: /path/file-with-a-%2A.html\ndisallow: /path/foo-%24\nallow: / # comment in line\n", []googleCase{
		{"x", "https://www.example.com/path/file-with-a-*.html", false},
		{"x", "https://www.example.com/path/file-with-a-x.html", true},
		{"x", "https://www.example.com/path/foo-$", false},
		{"x", "https://www.example.com/path/foo-", true},
	})
	// §2.2.2: "The /robots.txt URI is implicitly allowed."
	runCases(t, "robots.txt", "user-agent: *\ndisallow: /\n", []googleCase{
		{"x", "http://example.com/robots.txt", true},
		{"x", "http://example.com/robots.txt?x", false},
		{"x", "http://example.com/robots.txtx", false},
	})
}

func TestParseLeniency(t *testing.T) {
	cases := []struct {
		name, robotstxt, agent, path string
		want                         bool
	}{
		{"typo dissallow", "user-agent: a\ndissallow: /x\n", "a", "/x", false},
		{"typo disalow", "user-agent: a\ndisalow: /x\n", "a", "/x", false},
		{"typo dissalow", "user-agent: a\ndissalow: /x\n", "a", "/x", false},
		{"typo diasllow", "user-agent: a\ndiasllow: /x\n", "a", "/x", false},
		{"typo disallaw", "user-agent: a\ndisallaw: /x\n", "a", "/x", false},
		{"typo useragent", "useragent: a\ndisallow: /x\n", "a", "/x", false},
		{"typo user agent", "user agent: a\ndisallow: /x\n", "a", "/x", false},
		{"no colon three words", "user-agent a b\ndisallow /x\n", "a", "/x", true},
		{"leading whitespace", "  \t user-agent: a\n\t disallow: /x\n", "a", "/x", false},
		{"space before colon", "user-agent : a\ndisallow\t: /x\n", "a", "/x", false},
		{"star with trailing text", "user-agent: * everyone\ndisallow: /x\n", "a", "/x", false},
		{"star glued", "user-agent: *bot\ndisallow: /x\n", "a", "/x", true},
		{"agent with version", "user-agent: A/1.0\ndisallow: /x\n", "a", "/x", false},
		{"agent full UA", "user-agent: spider\ndisallow: /x\n", "Spider/1.0 (+http://e.com/bot)", "/x", false},
		{"agent prefix is not a match", "user-agent: spid\ndisallow: /x\n", "spider", "/x", true},
		{"empty agent value", "user-agent:\ndisallow: /x\n", "a", "/x", true},
		{"empty agent value not global", "user-agent:\ndisallow: /x\nuser-agent: *\ndisallow: /y\n", "a", "/x", true},
		{"comment only lines", "# hi\nuser-agent: a # me\n# between\ndisallow: /x # no\n", "a", "/x", false},
		{"unknown lines keep group", "user-agent: a\nfoo: bar\nuser-agent: b\ndisallow: /x\n", "a", "/x", false},
		{"sitemap keeps group", "user-agent: a\nsitemap: /s.xml\nuser-agent: b\ndisallow: /x\n", "a", "/x", false},
		{"crawl-delay ends agents", "user-agent: a\ncrawl-delay: 1\nuser-agent: b\ndisallow: /x\n", "a", "/x", true},
		{"empty disallow allows", "user-agent: a\ndisallow:\n", "a", "/x", true},
		{"empty disallow is specific", "user-agent: *\ndisallow: /\nuser-agent: a\ndisallow:\n", "a", "/x", true},
		{"NUL garbage", "\x00\x01user-agent: a\ndisallow: /x\n", "a", "/x", true},
		{"pattern without slash", "user-agent: a\ndisallow: x\n", "a", "/x", true},
		{"star pattern without slash", "user-agent: a\ndisallow: *x\n", "a", "/ax", false},
		{"dollar only", "user-agent: a\ndisallow: $\n", "a", "/", true},
		{"star only", "user-agent: a\ndisallow: *\n", "a", "/anything", false},
		{"prefix key", "user-agent: a\ndisallowed: /x\n", "a", "/x", false},
	}
	for _, tc := range cases {
		if got := Parse([]byte(tc.robotstxt)).Group(tc.agent).Allowed(tc.path); got != tc.want {
			t.Errorf("%s: Allowed(%q) = %v; want %v", tc.name, tc.path, got, tc.want)
		}
	}
}

func TestParseMaxSize(t *testing.T) {
	head := "user-agent: *\ndisallow: /private\n"
	filler := strings.Repeat("# padding padding padding padding padding padding\n", MaxSize/50)
	body := head + filler[:MaxSize-len(head)-10] + "\ndisallow: /late\n"
	if len(body) <= MaxSize {
		t.Fatalf("test body too short: %d", len(body))
	}
	r := Parse([]byte(body))
	if r.Group("x").Allowed("/private") {
		t.Error("rule before the limit ignored")
	}
	if !r.Group("x").Allowed("/late") {
		t.Error("rule after the limit applied")
	}
	// A line cut by the limit is dropped, not read as a shorter rule.
	cut := head + strings.Repeat("#", MaxSize-len(head)-len("\ndisallow: /")) + "\ndisallow: /only-this"
	if !Parse([]byte(cut)).Group("x").Allowed("/") {
		t.Error("a rule cut by MaxSize to \"/\" was applied")
	}
	// A line that ends exactly at the limit is complete.
	exact := head + strings.Repeat("#", MaxSize-len(head)-len("\ndisallow: /x")) + "\ndisallow: /x\nallow: /"
	if len(exact) <= MaxSize || Parse([]byte(exact)).Group("x").Allowed("/x") {
		t.Error("a rule ending exactly at MaxSize was dropped")
	}
}

func TestCrawlDelay(t *testing.T) {
	cases := []struct {
		robotstxt, agent string
		want             time.Duration
		ok               bool
	}{
		{"user-agent: *\ncrawl-delay: 10\n", "a", 10 * time.Second, true},
		{"user-agent: *\nCrawl-Delay: 0.5\n", "a", 500 * time.Millisecond, true},
		{"user-agent: *\ncrawl-delay: 2 seconds\n", "a", 2 * time.Second, true},
		{"user-agent: *\ncrawldelay: .25\n", "a", 250 * time.Millisecond, true},
		{"user-agent: *\ncrawl-delay: 0\n", "a", 0, true},
		{"user-agent: *\ncrawl-delay: -1\n", "a", 0, false},
		{"user-agent: *\ncrawl-delay: soon\n", "a", 0, false},
		{"user-agent: *\ncrawl-delay: 1e9\n", "a", time.Second, true}, // leading number only
		{"user-agent: *\ncrawl-delay: 99999999999\n", "a", 0, false},
		{"user-agent: *\ncrawl-delay:\n", "a", 0, false},
		{"user-agent: *\ndisallow: /\n", "a", 0, false},
		{"crawl-delay: 5\nuser-agent: *\n", "a", 0, false},
		{"user-agent: a\ncrawl-delay: 3\nuser-agent: *\ncrawl-delay: 1\n", "a", 3 * time.Second, true},
		{"user-agent: a\ncrawl-delay: 3\nuser-agent: *\ncrawl-delay: 1\n", "b", time.Second, true},
		{"user-agent: a\ncrawl-delay: 3\n\nuser-agent: a\ncrawl-delay: 7\n", "a", 7 * time.Second, true},
		{"user-agent: a\ncrawl-delay: 3\ncrawl-delay: 2\n", "a", 3 * time.Second, true},
	}
	for _, tc := range cases {
		d, ok := Parse([]byte(tc.robotstxt)).Group(tc.agent).CrawlDelay()
		if d != tc.want || ok != tc.ok {
			t.Errorf("%q agent %q: CrawlDelay() = %v, %v; want %v, %v", tc.robotstxt, tc.agent, d, ok, tc.want, tc.ok)
		}
	}
}

func TestSitemaps(t *testing.T) {
	r := Parse([]byte("Sitemap: http://a/1.xml\nuser-agent: *\nsite-map: http://a/2.xml\nSITEMAP:http://a/1.xml\nsitemap:\n"))
	got := r.Sitemaps()
	if strings.Join(got, " ") != "http://a/1.xml http://a/2.xml" {
		t.Fatalf("Sitemaps() = %q", got)
	}
	got[0] = "changed"
	if r.Sitemaps()[0] != "http://a/1.xml" {
		t.Fatal("Sitemaps returned shared storage")
	}
}

func TestFromResponse(t *testing.T) {
	body := []byte("user-agent: *\ndisallow: /private\n")
	cases := []struct {
		status  int
		kind    Kind
		private bool // /private allowed
		public  bool // /public allowed
	}{
		{200, KindParsed, false, true},
		{203, KindParsed, false, true},
		{299, KindParsed, false, true},
		{301, KindUnavailable, true, true},
		{308, KindUnavailable, true, true},
		{400, KindUnavailable, true, true},
		{401, KindUnavailable, true, true},
		{403, KindUnavailable, true, true},
		{404, KindUnavailable, true, true},
		{410, KindUnavailable, true, true},
		{429, KindUnreachable, false, false},
		{499, KindUnavailable, true, true},
		{500, KindUnreachable, false, false},
		{503, KindUnreachable, false, false},
		{599, KindUnreachable, false, false},
		{100, KindUnreachable, false, false},
		{0, KindUnreachable, false, false},
		{600, KindUnreachable, false, false},
	}
	for _, tc := range cases {
		r := FromResponse(tc.status, body)
		if r.Kind() != tc.kind {
			t.Errorf("FromResponse(%d).Kind() = %v; want %v", tc.status, r.Kind(), tc.kind)
		}
		g := r.Group("spider")
		if g.Allowed("/private") != tc.private || g.Allowed("/public") != tc.public {
			t.Errorf("FromResponse(%d): /private %v /public %v; want %v %v",
				tc.status, g.Allowed("/private"), g.Allowed("/public"), tc.private, tc.public)
		}
		if !g.Allowed("/robots.txt") {
			t.Errorf("FromResponse(%d): /robots.txt disallowed", tc.status)
		}
	}
	if Unreachable().Kind().String() != "unreachable" || AllowAll().Kind().String() != "unavailable" ||
		KindParsed.String() != "parsed" || Kind(9).String() != "kind(9)" {
		t.Error("Kind.String is wrong")
	}
}

func TestCheck(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /private # secret\nAllow: /private/open\n\nUser-agent: Spider\nDisallow: /nospider\n")
	cases := []struct {
		agent, url string
		allowed    bool
		matched    string
	}{
		{"other", "http://e.com/private/x", false, "Disallow: /private"},
		{"other", "http://e.com/private/open/1", true, "Allow: /private/open"},
		{"other", "http://e.com/public", true, ""},
		{"other", "/private", false, "Disallow: /private"},
		{"spider/1.0", "https://e.com/private/x", true, ""},
		{"spider/1.0", "https://e.com/nospider?q=1", false, "Disallow: /nospider"},
	}
	for _, tc := range cases {
		allowed, matched, err := Check(body, tc.agent, tc.url)
		if err != nil || allowed != tc.allowed || matched != tc.matched {
			t.Errorf("Check(%q, %q) = %v, %q, %v; want %v, %q", tc.agent, tc.url, allowed, matched, err, tc.allowed, tc.matched)
		}
	}
	for _, bad := range []string{"", "relative/path", "http://e.com/%zz", "mailto:a@b.c"} {
		if _, _, err := Check(body, "a", bad); err == nil || !strings.HasPrefix(err.Error(), "cannot check") {
			t.Errorf("Check(%q) error = %v; want a \"cannot check\" error", bad, err)
		}
	}
}

func TestPathQuery(t *testing.T) {
	cases := map[string]string{
		"http://e.com":         "/",
		"http://e.com/a?b=c#d": "/a?b=c",
		"http://e.com/a?":      "/a?",
		"http://e.com/a%2Fb":   "/a%2Fb",
		"http://e.com/ü":       "/%C3%BC",
	}
	for in, want := range cases {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := PathQuery(u); got != want {
			t.Errorf("PathQuery(%q) = %q; want %q", in, got, want)
		}
	}
}

// patternRegexp is an independent reference implementation of robots.txt
// pattern matching, through the regexp package.
func patternRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	for _, part := range strings.Split(pattern, "*") {
		b.WriteString(regexp.QuoteMeta(part))
		b.WriteString(".*")
	}
	s := strings.TrimSuffix(b.String(), ".*")
	if anchored {
		s += "$"
	}
	return regexp.MustCompile(s)
}

func TestMatchesAgainstRegexp(t *testing.T) {
	patterns := []string{"/", "/a", "/a$", "*", "*$", "/*.php$", "/fish*.php", "/a*b*c", "**", "/a**b$", "$", "/*/x*", "*a*$"}
	paths := []string{"/", "/a", "/ab", "/a.php", "/x/a.php5", "/fish/cat.php", "/aXbYc", "/abc/d", "/a/x/y", "/aa"}
	var buf []int
	for _, p := range patterns {
		re := patternRegexp(p)
		for _, path := range paths {
			if got, want := matches(path, p, &buf), re.MatchString(path); got != want {
				t.Errorf("matches(%q, %q) = %v; regexp says %v", path, p, got, want)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(rfcSimpleExample), "foobot", "/example/page.html")
	f.Add([]byte("\xEF\xBB\xBFuser-agent: a\r\ndisallow /x\rallow: /x/*.html$\n"), "a", "/x/y.html")
	f.Add([]byte("user-agent: *\ncrawl-delay: 0.5\nsitemap: http://a/s.xml\ndisallow: /%E3%83%84*$"), "b", "/ツ")
	f.Add([]byte("user agent: a b\ndissallow: *\n#\x00\xff"), "a/1.0", "?q")
	f.Add([]byte(""), "", "")
	f.Fuzz(func(t *testing.T, body []byte, agent, path string) {
		r := Parse(body)
		g := r.Group(agent)
		if g == nil {
			t.Fatal("Group returned nil")
		}
		allowed, rule := g.Match(path)
		if !allowed && rule == "" {
			t.Fatalf("disallowed %q without a rule", path)
		}
		if rule != "" && !strings.HasPrefix(rule, "Allow: ") && !strings.HasPrefix(rule, "Disallow: ") {
			t.Fatalf("bad rule text %q", rule)
		}
		if normalizePath(path) == "/robots.txt" && !allowed {
			t.Fatal("/robots.txt disallowed")
		}
		if d, ok := g.CrawlDelay(); d < 0 || !ok && d != 0 {
			t.Fatalf("CrawlDelay() = %v, %v", d, ok)
		}
		for _, s := range r.Sitemaps() {
			if s == "" {
				t.Fatal("empty sitemap")
			}
		}
		// Parsing is deterministic.
		if again, _ := Parse(body).Group(agent).Match(path); again != allowed {
			t.Fatal("Parse is not deterministic")
		}
	})
}

func FuzzMatch(f *testing.F) {
	f.Add("/fish*.php", "/fishheads/catfish.php?parameters")
	f.Add("/*.php$", "/filename.php")
	f.Add("/a%2A$", "/a*")
	f.Add("*", "")
	f.Add("/ツ*$", "/%E3%83%84")
	f.Add("/%zz*%", "/%25zz")
	f.Fuzz(func(t *testing.T, rawPattern, rawPath string) {
		pattern, path := normalizePattern(rawPattern), normalizePath(rawPath)
		if normalizePattern(pattern) != pattern || normalizePath(path) != path {
			t.Fatalf("normalisation not idempotent: %q → %q, %q → %q", rawPattern, pattern, rawPath, path)
		}
		var buf []int
		got := matches(path, pattern, &buf)
		if want := patternRegexp(pattern).MatchString(path); got != want {
			t.Fatalf("matches(%q, %q) = %v; reference says %v", path, pattern, got, want)
		}
	})
}
