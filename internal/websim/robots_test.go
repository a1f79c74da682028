package websim

import (
	"strings"
	"testing"
)

func TestRobotsMatch(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"/", "/anything", true},
		{"/fish", "/fish", true},
		{"/fish", "/fish.html", true},
		{"/fish", "/Fish.asp", false},
		{"/fish/", "/fish", false},
		{"/*.php", "/index.php", true},
		{"/*.php", "/folder/any.php.file.html", true},
		{"/*.php$", "/filename.php", true},
		{"/*.php$", "/filename.php?parameters", false},
		{"/*.php$", "/filename.php/", false},
		{"/fish*.php", "/fish.php", true},
		{"/fish*.php", "/fishheads/catfish.php?parameters", true},
		{"/fish*.php", "/Fish.PHP", false},
		{"/s/*/a/2.html$", "/s/10/a/2.html", true},
		{"/s/*/a/2.html$", "/s/1/a/2.html?x", false},
		{"*", "/", true},
		{"/$", "/", true},
		{"/$", "/a", false},
		{"/a**b", "/axxb", true},
	}
	for _, tc := range cases {
		if got := robotsMatch(tc.pattern, tc.path); got != tc.want {
			t.Errorf("robotsMatch(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

func TestParseRobotsGroups(t *testing.T) {
	body := `# comment
User-agent: Spider/2.0
User-agent: otherbot
Disallow: /private/
Allow: /private/open/

User-agent: *
Disallow: /

User-agent: SPIDER
Disallow: /merged/
Crawl-delay: 2
Sitemap: http://x.test/sitemap.xml
`
	cases := []struct {
		agent, path string
		want        bool
	}{
		{"spider", "/", true},
		{"spider", "/private/x", false},
		{"spider", "/private/open/x", true},
		{"spider", "/merged/x", false},
		{"SpIdEr", "/merged/x", false},
		{"otherbot", "/merged/x", true},
		{"unknown", "/", false},
		{"unknown", "/robots.txt", true},
	}
	for _, tc := range cases {
		r := parseRobots([]byte(body), tc.agent)
		if got := r.allowed(tc.path); got != tc.want {
			t.Errorf("agent %s path %s: %v, want %v", tc.agent, tc.path, got, tc.want)
		}
	}
	if r := parseRobots([]byte(body), "spider"); r.delay != "2" {
		t.Errorf("crawl-delay %q", r.delay)
	}
	// Longest match wins; Allow wins ties; empty Disallow means nothing.
	tie := parseRobots([]byte("User-agent: *\nDisallow: /a\nAllow: /a\nDisallow: /b/c\nAllow: /b\nDisallow:\n"), "x")
	for path, want := range map[string]bool{"/a": true, "/b/c/d": false, "/b/x": true, "/z": true} {
		if got := tie.allowed(path); got != want {
			t.Errorf("tie rules, %s: %v", path, got)
		}
	}
	// Rules past RobotsMaxBytes are ignored.
	long := "User-agent: *\n" + strings.Repeat("# padding padding padding\n", RobotsMaxBytes/26+1) + "Disallow: /\n"
	if !parseRobots([]byte(long), "spider").allowed("/x") {
		t.Error("a rule beyond 500 KiB was applied")
	}
}

func TestRobotsKindsInTruth(t *testing.T) {
	// For each kind: paths that must be allowed / disallowed for agent "spider".
	cases := map[RobotsKind]struct{ allowed, disallowed []string }{
		RobotsAllowAll:      {[]string{"/", "/s/2/", "/x/gone/1"}, nil},
		RobotsDisallow:      {[]string{"/", "/s/1/", "/contact.html"}, []string{"/s/2/", "/s/2/a/1.html", "/about.html", "/x/gone/1"}},
		RobotsAllowOverride: {[]string{"/s/1/", "/s/3/a/2.html", "/contact.html"}, []string{"/s/2/", "/s/3/", "/s/3/a/1.html"}},
		RobotsWildcards:     {[]string{"/s/1/a/2.html?sid=1", "/s/1/a/3.html", "/", "/calendar/2026/11/"}, []string{"/?q=1", "/s/4/a/2.html", "/user/1/", "/s/1/a/13.html", "/calendar/2026/12/"}},
		RobotsAgents:        {[]string{"/", "/s/1/", "/about.html"}, []string{"/s/3/", "/contact.html"}},
		RobotsCrawlDelay:    {[]string{"/", "/s/1/"}, []string{"/contact.html"}},
		RobotsNotFound:      {[]string{"/", "/s/1/", "/contact.html"}, nil},
		RobotsServerError:   {nil, []string{"/", "/s/1/"}},
		RobotsUnavailable:   {nil, []string{"/", "/s/1/"}},
		RobotsRedirect:      {[]string{"/", "/s/2/"}, []string{"/s/1/", "/s/1/a/1.html"}},
		RobotsHuge:          {[]string{"/", "/s/1/", "/about.html"}, []string{"/s/2/"}},
	}
	if len(cases) != int(numRobotsKinds) {
		t.Fatalf("%d kinds covered of %d", len(cases), numRobotsKinds)
	}
	for kind, tc := range cases {
		w := mustNew(t, Config{Robots: kind.String(), Port: 8080, PagesPerHost: 100})
		c := &truthCrawl{w: w, rules: TruthRules{Agent: "spider"}, robots: map[int]*robotsState{}, t: &Truth{Robots: map[string]string{}}}
		c.rules.Scope = ScopeAny
		for _, p := range tc.allowed {
			u, _ := Canonical(nil, w.URL("www.d0.test", p))
			if r := c.urlReason(u); r != "" {
				t.Errorf("%v: %s excluded (%s)", kind, p, r)
			}
		}
		for _, p := range tc.disallowed {
			u, _ := Canonical(nil, w.URL("www.d0.test", p))
			if r := c.urlReason(u); r != ReasonRobots {
				t.Errorf("%v: %s not disallowed (%q)", kind, p, r)
			}
		}
	}
}
