package websim

import (
	"net/url"
	"strings"
	"testing"
)

func FuzzParseResolve(f *testing.F) {
	for _, s := range []string{"www.d0.test:8080:127.0.0.1", "a.test:1:[::1]", "x:0:1.2.3.4", "*.d0.test:80:127.0.0.9",
		"bad", "h:99999:127.0.0.1", "h:80:", "h:+80:127.0.0.1", "h:80:fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, addr, err := ParseResolve(s)
		if err != nil {
			return
		}
		if host == "" || port < 1 || port > 65535 || !addr.IsValid() {
			t.Fatalf("ParseResolve(%q) = %q, %d, %v", s, host, port, addr)
		}
		a := addr.String()
		if addr.Is6() {
			a = "[" + a + "]"
		}
		h2, p2, a2, err := ParseResolve(host + ":" + itoaPort(port) + ":" + a)
		if err != nil || h2 != host || p2 != port || a2 != addr {
			t.Fatalf("round trip of %q: %q %d %v %v", s, h2, p2, a2, err)
		}
	})
}

func FuzzParseFeatures(f *testing.F) {
	for _, s := range []string{"", "all", "none", "hang,reset", " Redirects ,noise", "x", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := ParseFeatures(s)
		if err != nil {
			return
		}
		if fs&^AllFeatures != 0 {
			t.Fatalf("ParseFeatures(%q) = %b outside AllFeatures", s, fs)
		}
		if back, err := ParseFeatures(fs.String()); err != nil || back != fs {
			t.Fatalf("round trip of %q: %v %v", s, back, err)
		}
	})
}

func FuzzParseRobots(f *testing.F) {
	w, _ := New(Config{Port: 8080})
	for k := RobotsAllowAll; k < numRobotsKinds; k++ {
		if k == RobotsHuge {
			continue
		}
		w.hosts[0].robots = k
		f.Add(w.robotsFor(0, false).body, "/s/1/a/2.html")
	}
	f.Add([]byte("User-agent: *\nDisallow: /*$\nAllow: /$\n"), "/")
	f.Add([]byte("user-agent:spider\r\ndisallow:/a*b*c$\r\n"), "/axbxc")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		path = "/" + strings.TrimPrefix(path, "/")
		r := parseRobots(body, "spider")
		allowed := r.allowed(path)
		if !r.allowed("/robots.txt") {
			t.Fatal("robots.txt disallowed")
		}
		// Without any rule everything is allowed.
		if len(r.rules) == 0 && !allowed {
			t.Fatal("no rules but disallowed")
		}
		// Appending an Allow for the exact path with "$" always allows it (longest match).
		if !strings.ContainsAny(path, "*$\r\n#") && len(body) < RobotsMaxBytes-len(path)-40 {
			extra := append(append([]byte{}, body...), []byte("\nUser-agent: spider\nAllow: "+path+"$\n")...)
			if r2 := parseRobots(extra, "spider"); !r2.allowed(path) && hasLongerRule(r2, path) {
				return
			} else if !r2.allowed(path) {
				t.Fatalf("an exact Allow for %q did not win", path)
			}
		}
	})
}

// hasLongerRule reports a disallow rule at least as long as the exact allow for path.
func hasLongerRule(r robotsRules, path string) bool {
	for _, rule := range r.rules {
		if !rule.allow && len(rule.pattern) > len(path)+1 && robotsMatch(rule.pattern, path) {
			return true
		}
	}
	return false
}

func FuzzParsePath(f *testing.F) {
	sh := newShape(50)
	for _, p := range samplePaths(&Web{shape: sh}) {
		f.Add(p)
	}
	f.Add("/trap/1/2/3/4/5/6/7/8/9/10/")
	f.Add("/calendar/9999/12/")
	f.Fuzz(func(t *testing.T, p string) {
		rt, ok := parsePath(p, sh)
		if !ok {
			return
		}
		if back := string(appendPath(nil, rt)); back != p {
			t.Fatalf("parsePath(%q) = %+v, printed back as %q", p, rt, back)
		}
		if id := sh.pageID(rt); id >= sh.pages {
			t.Fatalf("page id %d out of range", id)
		}
	})
}

func FuzzRelativeLinks(f *testing.F) {
	f.Add("/s/1/a/", "/s/2/a/3.html", false)
	f.Add("/", "/", true)
	f.Add("/trap/1/2/", "/trap/1/2/3/", true)
	f.Fuzz(func(t *testing.T, dir, target string, bare bool) {
		clean := func(s string) string {
			var b strings.Builder
			for _, r := range s {
				if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '/' || r == '.' && b.Len() > 0 && !strings.HasSuffix(b.String(), "/") {
					b.WriteRune(r)
				}
			}
			out := "/" + strings.Trim(b.String(), "/")
			for strings.Contains(out, "//") {
				out = strings.ReplaceAll(out, "//", "/")
			}
			return out
		}
		dir = strings.TrimSuffix(clean(dir), "/") + "/"
		target = clean(target)
		if strings.HasSuffix(target, ".") {
			return
		}
		rel := string(appendRel(nil, []byte(dir), target, bare))
		base, err := url.Parse("http://h.test" + dir + "page")
		ref, err2 := url.Parse(rel)
		if err != nil || err2 != nil {
			t.Fatalf("parse: %v %v", err, err2)
		}
		if got := base.ResolveReference(ref).Path; got != target {
			t.Fatalf("from %s to %s: %q resolves to %s", dir, target, rel, got)
		}
	})
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"http://A.test:80/./b/../c?x#y", "//x.test/", "?q", "../../..", "mailto:x", "http://[::1]:8080/"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://www.d0.test:8080/s/1/a/2.html")
	f.Fuzz(func(t *testing.T, ref string) {
		u, ok := Canonical(base, ref)
		if !ok {
			return
		}
		s := u.String()
		if u.Fragment != "" || (u.Scheme != "http" && u.Scheme != "https") || !strings.HasPrefix(u.Path, "/") {
			t.Fatalf("Canonical(%q) = %s", ref, s)
		}
		// Canonical is idempotent.
		again, ok := Canonical(nil, s)
		if !ok || again.String() != s {
			t.Fatalf("Canonical(%q) = %s, again %v", ref, s, again)
		}
	})
}
