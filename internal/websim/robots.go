package websim

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// RobotsKind is one entry of the robots.txt menu. Each host serves one kind, chosen
// deterministically from the seed when FeatureRobots is on (allow-all otherwise, or the
// kind forced by Config.Robots).
type RobotsKind int8

// The robots.txt menu. Every kind with a body also lists the host's sitemap.
const (
	// RobotsAllowAll ("allow-all"): "User-agent: *" with an empty Disallow.
	RobotsAllowAll RobotsKind = iota
	// RobotsDisallow ("disallow"): disallows /s/2/, /about.html and /x/.
	RobotsDisallow
	// RobotsAllowOverride ("allow-override"): Disallow /s/ with longer Allow rules
	// (/s/1/, /s/3/a/), a longer Disallow inside them, and an Allow/Disallow tie.
	RobotsAllowOverride
	// RobotsWildcards ("wildcards"): rules with "*" and "$".
	RobotsWildcards
	// RobotsAgents ("agents"): a group for "spider" (in two merged groups, written in mixed
	// case), another for "*" that disallows everything.
	RobotsAgents
	// RobotsCrawlDelay ("crawl-delay"): Crawl-delay: Config.CrawlDelay.
	RobotsCrawlDelay
	// RobotsNotFound ("not-found"): robots.txt answers 404 (everything allowed).
	RobotsNotFound
	// RobotsServerError ("server-error"): robots.txt answers 500 (everything disallowed).
	RobotsServerError
	// RobotsUnavailable ("unavailable"): robots.txt answers 503 (everything disallowed).
	RobotsUnavailable
	// RobotsRedirect ("redirect"): robots.txt redirects (301) to /robots-real.txt.
	RobotsRedirect
	// RobotsHuge ("huge"): over 600 KiB; a "Disallow: /" after the first 500 KiB must be
	// ignored (the ground truth parses the first RobotsMaxBytes bytes only).
	RobotsHuge
	numRobotsKinds
)

// RobotsMaxBytes is how much of a robots.txt the ground truth parses (RFC 9309 §2.5
// requires at least 500 KiB).
const RobotsMaxBytes = 500 << 10

var robotsNames = [numRobotsKinds]string{
	"allow-all", "disallow", "allow-override", "wildcards", "agents", "crawl-delay",
	"not-found", "server-error", "unavailable", "redirect", "huge",
}

// String returns the kind's name ("allow-all", "huge", …).
func (k RobotsKind) String() string {
	if k >= 0 && k < numRobotsKinds {
		return robotsNames[k]
	}
	return "robots(" + strconv.Itoa(int(k)) + ")"
}

// ParseRobotsKind returns the kind named s (case-insensitive), or an error wrapping
// ErrBadConfig.
func ParseRobotsKind(s string) (RobotsKind, error) {
	for i, n := range robotsNames {
		if strings.EqualFold(n, strings.TrimSpace(s)) {
			return RobotsKind(i), nil
		}
	}
	return 0, fmt.Errorf("cannot use robots kind %q: %w: want one of %s", s, ErrBadConfig, strings.Join(robotsNames[:], ", "))
}

// robotsMenu is the weighted menu of FeatureRobots: allow-all three times, every other
// kind once.
func robotsMenu() []RobotsKind {
	m := []RobotsKind{RobotsAllowAll, RobotsAllowAll}
	for k := RobotsAllowAll; k < numRobotsKinds; k++ {
		m = append(m, k)
	}
	return m
}

// robotsAnswer is what /robots.txt (or /robots-real.txt) answers on a host.
type robotsAnswer struct {
	status   int
	location string // redirect target (absolute URL)
	body     []byte // for 200
}

// robotsFor builds the robots.txt answer of host i; real selects /robots-real.txt.
func (w *Web) robotsFor(i int, real bool) robotsAnswer {
	h := &w.hosts[i]
	kind := h.robots
	if real {
		if kind != RobotsRedirect {
			return robotsAnswer{status: 404}
		}
		return robotsAnswer{status: 200, body: []byte("# the real rules\nUser-agent: *\nDisallow: /s/1/\n\nSitemap: " + h.origin + "/sitemap.xml\n")}
	}
	var b bytes.Buffer
	switch kind {
	case RobotsNotFound:
		return robotsAnswer{status: 404}
	case RobotsServerError:
		return robotsAnswer{status: 500}
	case RobotsUnavailable:
		return robotsAnswer{status: 503}
	case RobotsRedirect:
		return robotsAnswer{status: 301, location: h.origin + "/robots-real.txt"}
	case RobotsAllowAll:
		b.WriteString("User-agent: *\nDisallow:\n")
	case RobotsDisallow:
		b.WriteString("# keep crawlers out of section 2\nUser-agent: *\nDisallow: /s/2/\nDisallow: /about.html\nDisallow: /x/ # specials\n")
	case RobotsAllowOverride:
		b.WriteString("User-agent: *\nDisallow: /s/\nAllow: /s/1/\nAllow: /s/3/a/\nDisallow: /s/3/a/1.html\nDisallow: /contact.html\nAllow: /contact.html\n")
	case RobotsWildcards:
		b.WriteString("User-agent: *\nDisallow: /*?q=\nDisallow: /s/*/a/2.html$\nDisallow: /*.pdf$\nDisallow: /user/\nDisallow: /calendar/*/12/\nAllow: /*/a/3.html$\nDisallow: /s/*3.html\n")
	case RobotsAgents:
		fmt.Fprintf(&b, "User-agent: Spider\nDisallow: /s/3/\nCrawl-delay: %s\n\nUser-agent: otherbot\nAllow: /\n\n", delaySeconds(w.cfg.CrawlDelay))
		b.WriteString("User-agent: *\nDisallow: /\n\nUser-agent: examplebot\nUser-agent: SPIDER\nDisallow: /contact.html\n")
	case RobotsCrawlDelay:
		fmt.Fprintf(&b, "User-agent: *\nCrawl-delay: %s\nDisallow: /contact.html\n", delaySeconds(w.cfg.CrawlDelay))
	case RobotsHuge:
		b.WriteString("User-agent: *\nDisallow: /s/2/\n")
		b.Write(w.hugeFiller())
		b.WriteString("Disallow: /\n")
	}
	b.WriteString("\nSitemap: " + h.origin + "/sitemap.xml\n")
	if w.cfg.Sitemaps && i > 0 {
		b.WriteString("Sitemap: " + w.hosts[0].origin + "/sitemaps/host-" + strconv.Itoa(i) + ".xml\n")
	}
	return robotsAnswer{status: 200, body: b.Bytes()}
}

func delaySeconds(d interface{ Seconds() float64 }) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// hugeFiller returns about 620 KiB of rules matching nothing, so that the rule written
// after it starts beyond RobotsMaxBytes. Its lines are short enough that the 500 KiB cut
// falls inside a filler line.
func (w *Web) hugeFiller() []byte {
	w.hugeOnce.Do(func() {
		var b bytes.Buffer
		for i := 0; b.Len() < 620<<10; i++ {
			if i%50 == 0 {
				b.WriteString("# filler rules that match nothing on this site\n")
			}
			fmt.Fprintf(&b, "Disallow: /nothing/%06d/\n", i)
		}
		w.huge = b.Bytes()
	})
	return w.huge
}

// robotsRules is the parsed group of one agent.
type robotsRules struct {
	rules []robotsRule
	delay string // Crawl-delay value, as written
}

type robotsRule struct {
	allow   bool
	pattern string
}

// parseRobots parses a robots.txt body for the product token agent following RFC 9309:
// only the first RobotsMaxBytes bytes count; groups start with one or more user-agent
// lines; every group whose agent equals agent (case-insensitively) is merged, else every
// "*" group; empty Allow/Disallow values are ignored; unknown lines are ignored.
func parseRobots(body []byte, agent string) robotsRules {
	if len(body) > RobotsMaxBytes {
		body = body[:RobotsMaxBytes]
	}
	agent = strings.ToLower(agent)
	var mine, star robotsRules
	var foundMine bool
	var inAgents bool     // the previous meaningful line was a user-agent line
	var gMine, gStar bool // the current group applies to agent / to *
	for len(body) > 0 {
		var line []byte
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			line, body = body, nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		key := strings.ToLower(string(bytes.TrimSpace(line[:colon])))
		val := string(bytes.TrimSpace(line[colon+1:]))
		switch key {
		case "user-agent":
			if !inAgents {
				gMine, gStar = false, false
			}
			inAgents = true
			tok := strings.ToLower(val)
			if i := strings.IndexAny(tok, " \t/"); i >= 0 {
				tok = tok[:i]
			}
			switch tok {
			case agent:
				gMine, foundMine = true, true
			case "*":
				gStar = true
			}
		case "allow", "disallow":
			inAgents = false
			if val == "" {
				continue
			}
			r := robotsRule{allow: key == "allow", pattern: val}
			if gMine {
				mine.rules = append(mine.rules, r)
			}
			if gStar {
				star.rules = append(star.rules, r)
			}
		case "crawl-delay":
			inAgents = false
			if gMine {
				mine.delay = val
			}
			if gStar {
				star.delay = val
			}
		default:
			// sitemap and unknown keys neither start nor end a group.
		}
	}
	if foundMine {
		return mine
	}
	return star
}

// allowed reports whether pathQuery (a path starting with "/", optionally followed by
// "?query") may be fetched: the longest matching pattern decides, Allow wins ties, no
// match allows. /robots.txt is always allowed.
func (r robotsRules) allowed(pathQuery string) bool {
	if pathQuery == "/robots.txt" {
		return true
	}
	best, allow := -1, true
	for _, rule := range r.rules {
		if len(rule.pattern) < best || (len(rule.pattern) == best && allow) {
			continue
		}
		if robotsMatch(rule.pattern, pathQuery) {
			if len(rule.pattern) > best {
				best, allow = len(rule.pattern), rule.allow
			} else {
				allow = allow || rule.allow
			}
		}
	}
	return allow
}

// robotsMatch reports whether pattern ("*" = any run of characters, a final "$" = end of
// the path) matches a prefix of p (the whole of p with "$").
func robotsMatch(pattern, p string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	// Iterative wildcard matching with single-star backtracking.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(p) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pattern) && pattern[pi] == p[si]:
			pi++
			si++
		case pi == len(pattern) && !anchored:
			return true
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}
