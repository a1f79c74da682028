package robots

import (
	"net/url"
	"strings"
	"testing"
)

// Conformance cases ported from google/robotstxt robots_test.cc (Apache 2.0,
// https://github.com/google/robotstxt/blob/master/robots_test.cc). Each
// block names the TEST it comes from. Where this package deliberately
// differs, the case says so and follows RFC 9309 instead.

// isAllowed is the port of robots_test.cc's IsUserAgentAllowed.
func isAllowed(t *testing.T, robotstxt, agent, rawURL string) bool {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", rawURL, err)
	}
	return Parse([]byte(robotstxt)).Allowed(agent, u)
}

type googleCase struct {
	agent, url string
	want       bool
}

func runCases(t *testing.T, name, robotstxt string, cases []googleCase) {
	t.Helper()
	for _, c := range cases {
		if got := isAllowed(t, robotstxt, c.agent, c.url); got != c.want {
			t.Errorf("%s: agent %q url %q: allowed = %v; want %v", name, c.agent, c.url, got, c.want)
		}
	}
}

// TEST(RobotsUnittest, GoogleOnly_SystemTest)
func TestGoogleSystem(t *testing.T) {
	const robotstxt = "user-agent: FooBot\ndisallow: /\n"
	// Empty robots.txt: everything allowed.
	if !Parse(nil).Group("FooBot").Allowed("") {
		t.Error("empty robots.txt disallowed")
	}
	// Empty user-agent to be matched: everything allowed.
	if !Parse([]byte(robotstxt)).Group("").Allowed("") {
		t.Error("empty agent disallowed")
	}
	// Empty URL: implicitly "/", disallowed.
	if Parse([]byte(robotstxt)).Group("FooBot").Allowed("") {
		t.Error("empty URL allowed for FooBot")
	}
	if !Parse(nil).Group("").Allowed("") {
		t.Error("all empty: disallowed")
	}
}

// TEST(RobotsUnittest, ID_LineSyntax_Line)
func TestGoogleLineSyntax(t *testing.T) {
	const url = "http://foo.bar/x/y"
	runCases(t, "correct", "user-agent: FooBot\ndisallow: /\n", []googleCase{{"FooBot", url, false}})
	runCases(t, "incorrect", "foo: FooBot\nbar: /\n", []googleCase{{"FooBot", url, true}})
	runCases(t, "incorrect accepted", "user-agent FooBot\ndisallow /\n", []googleCase{{"FooBot", url, false}})
}

// TEST(RobotsUnittest, ID_LineSyntax_Groups)
func TestGoogleGroups(t *testing.T) {
	const robotstxt = "allow: /foo/bar/\n" +
		"\n" +
		"user-agent: FooBot\n" +
		"disallow: /\n" +
		"allow: /x/\n" +
		"user-agent: BarBot\n" +
		"disallow: /\n" +
		"allow: /y/\n" +
		"\n" +
		"\n" +
		"allow: /w/\n" +
		"user-agent: BazBot\n" +
		"\n" +
		"user-agent: FooBot\n" +
		"allow: /z/\n" +
		"disallow: /\n"
	runCases(t, "groups", robotstxt, []googleCase{
		{"FooBot", "http://foo.bar/x/b", true},
		{"FooBot", "http://foo.bar/z/d", true},
		{"FooBot", "http://foo.bar/y/c", false},
		{"BarBot", "http://foo.bar/y/c", true},
		{"BarBot", "http://foo.bar/w/a", true},
		{"BarBot", "http://foo.bar/z/d", false},
		{"BazBot", "http://foo.bar/z/d", true},
		// Lines with rules outside groups are ignored.
		{"FooBot", "http://foo.bar/foo/bar/", false},
		{"BarBot", "http://foo.bar/foo/bar/", false},
		{"BazBot", "http://foo.bar/foo/bar/", false},
	})
}

// TEST(RobotsUnittest, ID_REPLineNamesCaseInsensitive)
func TestGoogleLineNamesCaseInsensitive(t *testing.T) {
	for _, robotstxt := range []string{
		"USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
		"user-agent: FooBot\nallow: /x/\ndisallow: /\n",
		"uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
	} {
		runCases(t, robotstxt, robotstxt, []googleCase{
			{"FooBot", "http://foo.bar/x/y", true},
			{"FooBot", "http://foo.bar/a/b", false},
		})
	}
}

// TEST(RobotsUnittest, ID_VerifyValidUserAgentsToObey): the product token is
// the leading [a-zA-Z_-] run.
func TestGoogleProductToken(t *testing.T) {
	cases := map[string]string{
		"Foobot":     "foobot",
		"Foobot-Bar": "foobot-bar",
		"Foo_Bar":    "foo_bar",
		"":           "",
		"ツ":          "",
		"Foobot*":    "foobot",
		" Foobot ":   "",
		"Foobot/2.1": "foobot",
		"Foobot Bar": "foobot",
	}
	for in, want := range cases {
		if got := productToken(in); got != want {
			t.Errorf("productToken(%q) = %q; want %q", in, got, want)
		}
	}
}

// TEST(RobotsUnittest, ID_UserAgentValueCaseInsensitive)
func TestGoogleUserAgentValueCaseInsensitive(t *testing.T) {
	for _, robotstxt := range []string{
		"User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n",
		"User-Agent: foo bar\nAllow: /x/\nDisallow: /\n",
		"User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n",
	} {
		runCases(t, robotstxt, robotstxt, []googleCase{
			{"Foo", "http://foo.bar/x/y", true},
			{"Foo", "http://foo.bar/a/b", false},
			{"foo", "http://foo.bar/x/y", true},
			{"foo", "http://foo.bar/a/b", false},
		})
	}
}

// TEST(RobotsUnittest, GoogleOnly_AcceptUserAgentUpToFirstSpace). Google's
// matcher takes the agent string as the token to compare ("Foo Bar" matches
// nothing); this package takes the crawler's product token from its full
// User-Agent string, so "Foo Bar" is the crawler "foo" and gets the "Foo Bar"
// group: the second case differs from Google on purpose.
func TestGoogleAcceptUserAgentUpToFirstSpace(t *testing.T) {
	const robotstxt = "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
	runCases(t, "first space", robotstxt, []googleCase{
		{"Foo", "http://foo.bar/x/y", true},
		{"Foo Bar", "http://foo.bar/x/y", true}, // Google: false
		{"Foo/1.0 (+http://foo.bar/bot)", "http://foo.bar/x/y", true},
	})
}

// TEST(RobotsUnittest, ID_GlobalGroups_Secondary)
func TestGoogleGlobalGroups(t *testing.T) {
	const url = "http://foo.bar/x/y"
	runCases(t, "empty", "", []googleCase{{"FooBot", url, true}})
	runCases(t, "global", "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n", []googleCase{
		{"FooBot", url, false},
		{"BarBot", url, true},
	})
	runCases(t, "only specific", "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n",
		[]googleCase{{"QuxBot", url, true}})
}

// TEST(RobotsUnittest, ID_AllowDisallow_Value_CaseSensitive)
func TestGoogleValueCaseSensitive(t *testing.T) {
	const url = "http://foo.bar/x/y"
	runCases(t, "lower", "user-agent: FooBot\ndisallow: /x/\n", []googleCase{{"FooBot", url, false}})
	runCases(t, "upper", "user-agent: FooBot\ndisallow: /X/\n", []googleCase{{"FooBot", url, true}})
}

// TEST(RobotsUnittest, ID_LongestMatch)
func TestGoogleLongestMatch(t *testing.T) {
	const url = "http://foo.bar/x/page.html"
	runCases(t, "1", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n", []googleCase{{"FooBot", url, false}})
	runCases(t, "2", "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n", []googleCase{
		{"FooBot", url, true},
		{"FooBot", "http://foo.bar/x/", false},
	})
	runCases(t, "3 empty equal", "user-agent: FooBot\ndisallow: \nallow: \n", []googleCase{{"FooBot", url, true}})
	runCases(t, "4 equal", "user-agent: FooBot\ndisallow: /\nallow: /\n", []googleCase{{"FooBot", url, true}})
	runCases(t, "5", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", []googleCase{
		{"FooBot", "http://foo.bar/x", false},
		{"FooBot", "http://foo.bar/x/", true},
	})
	runCases(t, "6 equal", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n", []googleCase{{"FooBot", url, true}})
	runCases(t, "7", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", []googleCase{
		{"FooBot", "http://foo.bar/page.html", false},
		{"FooBot", "http://foo.bar/page", true},
	})
	runCases(t, "8", "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n", []googleCase{
		{"FooBot", url, true},
		{"FooBot", "http://foo.bar/x/y.html", false},
	})
	runCases(t, "9", "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n", []googleCase{
		{"FooBot", "http://foo.bar/x/page", true},
		{"FooBot", "http://foo.bar/y/page", false},
	})
}

// TEST(RobotsUnittest, ID_Encoding). Two of Google's cases differ here, on
// purpose, to follow RFC 9309 §2.2.2 ("Octets in the URI and robots.txt paths
// outside the range of the ASCII coded character set … MUST be
// percent-encoded … prior to comparison"; "/foo/bar/%62%61%7A" matches
// "/foo/bar/baz" in the RFC's table): this package normalises the URL too.
func TestGoogleEncoding(t *testing.T) {
	runCases(t, "query stays", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n", []googleCase{
		{"FooBot", "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", true},
	})
	runCases(t, "3-byte character", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n", []googleCase{
		{"FooBot", "http://foo.bar/foo/bar/%E3%83%84", true},
		{"FooBot", "http://foo.bar/foo/bar/ツ", true}, // Google: false (URL not encoded by the matcher)
	})
	runCases(t, "encoded 3-byte character", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n", []googleCase{
		{"FooBot", "http://foo.bar/foo/bar/%E3%83%84", true},
		{"FooBot", "http://foo.bar/foo/bar/ツ", true}, // Google: false
	})
	runCases(t, "encoded unreserved", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n", []googleCase{
		{"FooBot", "http://foo.bar/foo/bar/baz", true}, // Google: false; RFC 9309: matches
		{"FooBot", "http://foo.bar/foo/bar/%62%61%7A", true},
	})
}

// TEST(RobotsUnittest, ID_SpecialCharacters)
func TestGoogleSpecialCharacters(t *testing.T) {
	runCases(t, "star", "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n", []googleCase{
		{"FooBot", "http://foo.bar/foo/bar/quz", false},
		{"FooBot", "http://foo.bar/foo/quz", true},
		{"FooBot", "http://foo.bar/foo//quz", true},
		{"FooBot", "http://foo.bar/foo/bax/quz", true},
	})
	runCases(t, "dollar", "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", []googleCase{
		{"FooBot", "http://foo.bar/foo/bar", false},
		{"FooBot", "http://foo.bar/foo/bar/qux", true},
		{"FooBot", "http://foo.bar/foo/bar/", true},
		{"FooBot", "http://foo.bar/foo/bar/baz", true},
	})
	runCases(t, "comment", "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", []googleCase{
		{"FooBot", "http://foo.bar/foo/bar", true},
		{"FooBot", "http://foo.bar/foo/quz", false},
	})
}

// TEST(RobotsUnittest, GoogleOnly_IndexHTMLisDirectory)
func TestGoogleIndexHTMLIsDirectory(t *testing.T) {
	runCases(t, "index.html", "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", []googleCase{
		{"foobot", "http://foo.com/allowed-slash/", true},
		{"foobot", "http://foo.com/allowed-slash/index.htm", false},
		{"foobot", "http://foo.com/allowed-slash/index.html", true},
		{"foobot", "http://foo.com/anyother-url", false},
	})
}

// TEST(RobotsUnittest, GoogleOnly_LineTooLong)
func TestGoogleLineTooLong(t *testing.T) {
	const kMaxLineLen = 2083 * 8
	const eolLen = 1
	{
		longline := "/x/"
		maxLength := kMaxLineLen - len(longline) - len("disallow: ") + eolLen
		longline += strings.Repeat("a", maxLength-len(longline))
		robotstxt := "user-agent: FooBot\n" + "disallow: " + longline + "/qux\n"
		runCases(t, "cut disallow", robotstxt, []googleCase{
			{"FooBot", "http://foo.bar/fux", true},
			{"FooBot", "http://foo.bar" + longline + "/fux", false},
		})
	}
	{
		longlineA, longlineB := "/x/", "/x/"
		maxLength := kMaxLineLen - len(longlineA) - len("allow: ") + eolLen
		longlineA += strings.Repeat("a", maxLength-len(longlineA))
		longlineB += strings.Repeat("b", maxLength-len(longlineB))
		robotstxt := "user-agent: FooBot\ndisallow: /\n" + "allow: " + longlineA + "/qux\n" + "allow: " + longlineB + "/qux\n"
		runCases(t, "cut allow", robotstxt, []googleCase{
			{"FooBot", "http://foo.bar/", false},
			{"FooBot", "http://foo.bar" + longlineA + "/qux", true},
			{"FooBot", "http://foo.bar" + longlineB + "/fux", true},
		})
	}
}

// TEST(RobotsUnittest, GoogleOnly_DocumentationChecks)
func TestGoogleDocumentationChecks(t *testing.T) {
	runCases(t, "/fish", "user-agent: FooBot\ndisallow: /\nallow: /fish\n", []googleCase{
		{"FooBot", "http://foo.bar/bar", false},
		{"FooBot", "http://foo.bar/fish", true},
		{"FooBot", "http://foo.bar/fish.html", true},
		{"FooBot", "http://foo.bar/fish/salmon.html", true},
		{"FooBot", "http://foo.bar/fishheads", true},
		{"FooBot", "http://foo.bar/fishheads/yummy.html", true},
		{"FooBot", "http://foo.bar/fish.html?id=anything", true},
		{"FooBot", "http://foo.bar/Fish.asp", false},
		{"FooBot", "http://foo.bar/catfish", false},
		{"FooBot", "http://foo.bar/?id=fish", false},
	})
	runCases(t, "/fish*", "user-agent: FooBot\ndisallow: /\nallow: /fish*\n", []googleCase{
		{"FooBot", "http://foo.bar/bar", false},
		{"FooBot", "http://foo.bar/fish", true},
		{"FooBot", "http://foo.bar/fish.html", true},
		{"FooBot", "http://foo.bar/fish/salmon.html", true},
		{"FooBot", "http://foo.bar/fishheads", true},
		{"FooBot", "http://foo.bar/fishheads/yummy.html", true},
		{"FooBot", "http://foo.bar/fish.html?id=anything", true},
		{"FooBot", "http://foo.bar/Fish.bar", false},
		{"FooBot", "http://foo.bar/catfish", false},
		{"FooBot", "http://foo.bar/?id=fish", false},
	})
	runCases(t, "/fish/", "user-agent: FooBot\ndisallow: /\nallow: /fish/\n", []googleCase{
		{"FooBot", "http://foo.bar/bar", false},
		{"FooBot", "http://foo.bar/fish/", true},
		{"FooBot", "http://foo.bar/fish/salmon", true},
		{"FooBot", "http://foo.bar/fish/?salmon", true},
		{"FooBot", "http://foo.bar/fish/salmon.html", true},
		{"FooBot", "http://foo.bar/fish/?id=anything", true},
		{"FooBot", "http://foo.bar/fish", false},
		{"FooBot", "http://foo.bar/fish.html", false},
		{"FooBot", "http://foo.bar/Fish/Salmon.html", false},
	})
	runCases(t, "/*.php", "user-agent: FooBot\ndisallow: /\nallow: /*.php\n", []googleCase{
		{"FooBot", "http://foo.bar/bar", false},
		{"FooBot", "http://foo.bar/filename.php", true},
		{"FooBot", "http://foo.bar/folder/filename.php", true},
		{"FooBot", "http://foo.bar/folder/filename.php?parameters", true},
		{"FooBot", "http://foo.bar//folder/any.php.file.html", true},
		{"FooBot", "http://foo.bar/filename.php/", true},
		{"FooBot", "http://foo.bar/index?f=filename.php/", true},
		{"FooBot", "http://foo.bar/php/", false},
		{"FooBot", "http://foo.bar/index?php", false},
		{"FooBot", "http://foo.bar/windows.PHP", false},
	})
	runCases(t, "/*.php$", "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n", []googleCase{
		{"FooBot", "http://foo.bar/bar", false},
		{"FooBot", "http://foo.bar/filename.php", true},
		{"FooBot", "http://foo.bar/folder/filename.php", true},
		{"FooBot", "http://foo.bar/filename.php?parameters", false},
		{"FooBot", "http://foo.bar/filename.php/", false},
		{"FooBot", "http://foo.bar/filename.php5", false},
		{"FooBot", "http://foo.bar/php/", false},
		{"FooBot", "http://foo.bar/filename?php", false},
		{"FooBot", "http://foo.bar/aaaphpaaa", false},
		{"FooBot", "http://foo.bar//windows.PHP", false},
	})
	runCases(t, "/fish*.php", "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n", []googleCase{
		{"FooBot", "http://foo.bar/bar", false},
		{"FooBot", "http://foo.bar/fish.php", true},
		{"FooBot", "http://foo.bar/fishheads/catfish.php?parameters", true},
		{"FooBot", "http://foo.bar/Fish.PHP", false},
	})
	// Section "Order of precedence for group-member records".
	runCases(t, "precedence 1", "user-agent: FooBot\nallow: /p\ndisallow: /\n", []googleCase{{"FooBot", "http://example.com/page", true}})
	runCases(t, "precedence 2", "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n", []googleCase{{"FooBot", "http://example.com/folder/page", true}})
	runCases(t, "precedence 3", "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n", []googleCase{{"FooBot", "http://example.com/page.htm", false}})
	runCases(t, "precedence 4", "user-agent: FooBot\nallow: /$\ndisallow: /\n", []googleCase{
		{"FooBot", "http://example.com/", true},
		{"FooBot", "http://example.com/page.html", false},
	})
}

// TEST(RobotsUnittest, ID_LinesNumbersAreCountedCorrectly): every line ending
// style gives the same groups.
func TestGoogleLineEndings(t *testing.T) {
	files := map[string]string{
		"unix":       "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n",
		"dos":        "User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n",
		"mac":        "User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
		"no final":   "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /",
		"mixed":      "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
		"lf then cr": "User-Agent: foo\n\rAllow: /some/path\n\rUser-Agent: bar\n\rDisallow: /",
	}
	for name, robotstxt := range files {
		r := Parse([]byte(robotstxt))
		if !r.Group("foo").Allowed("/x") || !r.Group("foo").Allowed("/some/path") {
			t.Errorf("%s: foo's group is wrong", name)
		}
		if r.Group("bar").Allowed("/x") {
			t.Errorf("%s: bar allowed /x; want disallowed", name)
		}
		if n := len(r.Group("bar").rules) + len(r.Group("foo").rules); n != 2 {
			t.Errorf("%s: %d rules; want 2", name, n)
		}
	}
}

// TEST(RobotsUnittest, ID_UTF8ByteOrderMarkIsSkipped)
func TestGoogleByteOrderMark(t *testing.T) {
	cases := []struct {
		name, robotstxt string
		rules           int
	}{
		{"full BOM", "\xEF\xBB\xBFUser-Agent: foo\nAllow: /AnyValue\n", 1},
		{"partial 2", "\xEF\xBBUser-Agent: foo\nAllow: /AnyValue\n", 1},
		{"partial 1", "\xEFUser-Agent: foo\nAllow: /AnyValue\n", 1},
		// A broken BOM makes the first line garbage: the rule is outside
		// any group.
		{"broken", "\xEF\x11\xBFUser-Agent: foo\nAllow: /AnyValue\n", 0},
		// A BOM is only skipped at the start of the file.
		{"middle", "User-Agent: foo\n\xEF\xBB\xBFAllow: /AnyValue\n", 0},
	}
	for _, tc := range cases {
		if got := len(Parse([]byte(tc.robotstxt)).Group("foo").rules); got != tc.rules {
			t.Errorf("%s: %d rules; want %d", tc.name, got, tc.rules)
		}
	}
}

// TEST(RobotsUnittest, ID_NonStandardLineExample_Sitemap)
func TestGoogleSitemap(t *testing.T) {
	const loc = "http://foo.bar/sitemap.xml"
	const body = "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n"
	for name, robotstxt := range map[string]string{
		"end":   body + "Sitemap: " + loc + "\n",
		"start": "Sitemap: " + loc + "\n" + body,
	} {
		got := Parse([]byte(robotstxt)).Sitemaps()
		if len(got) != 1 || got[0] != loc {
			t.Errorf("%s: Sitemaps() = %q; want [%q]", name, got, loc)
		}
	}
}

// TEST(RobotsUnittest, TestMaybeEscapePattern), with RFC 9309's decoding of
// unreserved characters added.
func TestNormalizePattern(t *testing.T) {
	cases := map[string]string{
		"http://www.example.com": "http://www.example.com",
		"/a/b/c":                 "/a/b/c",
		"á":                      "%C3%A1",
		"%aa":                    "%AA",
		"%62%61%7a":              "baz",
		"/a b":                   "/a%20b",
		"/100%":                  "/100%25",
		"/%zz":                   "/%25zz",
		"/a*b$":                  "/a*b$",
		"/a$b":                   "/a%24b",
		"/%2a":                   "/%2A",
		"/%2F":                   "/%2F",
		"/\"<>\\^`{|}":           "/%22%3C%3E%5C%5E%60%7B%7C%7D",
	}
	for in, want := range cases {
		if got := normalizePattern(in); got != want {
			t.Errorf("normalizePattern(%q) = %q; want %q", in, got, want)
		}
	}
	paths := map[string]string{
		"":            "/",
		"/a*b$":       "/a%2Ab%24",
		"/ツ":          "/%E3%83%84",
		"?q":          "/?q",
		"/%7Euser":    "/~user",
		"/a?b=%2f%41": "/a?b=%2FA",
	}
	for in, want := range paths {
		if got := normalizePath(in); got != want {
			t.Errorf("normalizePath(%q) = %q; want %q", in, got, want)
		}
	}
}
