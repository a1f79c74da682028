// Package websim is a deterministic synthetic web served on loopback: many hosts behind
// one listener (selected by the Host header), pages generated on request from
// (Config.Seed, host, path), hostile behaviours switchable one by one, an access log for
// politeness and duplicate checks, and the ground truth of a correct crawl computed from
// the model.
//
// # Quick use
//
//	srv, err := websim.Start(ctx, websim.Config{Seed: 1, Profile: websim.ProfileHostile})
//	defer srv.Close()
//	// dial every host at 127.0.0.1 (srv.Resolve() gives curl-style HOST:PORT:ADDR)
//	truth, err := srv.Truth(websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 3})
//	// crawl, then compare with truth.MustFetch and srv.Log().Duplicates()
//
// New builds a Web without listening; its Handler can be served by any server (set
// Config.Port to the port generated URLs must carry).
//
// # Hosts
//
// Host i belongs to the registrable domain dD.test with D = i mod Config.Domains and is
// named www.dD.test, dD.test, blog.dD.test, news.dD.test, then siteI.dD.test. Host 0 is
// www.d0.test. ".test" is not a public suffix, so publicsuffix.EffectiveTLDPlusOne gives
// dD.test: "domain" scope differs from "host" scope. A share of hosts
// (Config.ChineseShare) is written in Chinese; some English pages mix in Chinese
// paragraphs.
//
// # URL space of a host
//
//	/                          index: every section, frames, a meta-refresh page, other hosts
//	/s/N/                      section N: all its articles; <link rel=next>, <area>, <iframe>
//	/s/N/a/M.html              article: Zipf-chosen pages of this and other hosts
//	/about.html /contact.html  small pages
//	/frames.html               a <frameset> with two <frame src>
//	/old/N.html                <meta http-equiv=refresh content="0; url=/s/N/">
//	/user/K/                   linked only with rel=nofollow
//	/hidden/K.html             linked only from pages a crawler must not parse (error
//	                           pages, text/plain pages)
//	/sitemap.xml               listed in robots.txt (not followed by the ground truth)
//	/robots.txt /robots-real.txt
//	/static/site.css /static/app.js /img/K.png|.jpg|.gif /doc/K.pdf   resources
//
// Behaviour URLs (served only when the Feature is on; linked from troubled hosts):
//
//	/x/r/CODE/HOPS/ID      redirect (CODE 301, 302, 307, 308) to /x/r/CODE/HOPS-1/ID …
//	                       and finally to page ID; Location alternates absolute URL and
//	                       absolute path (FeatureRedirects: 1–3 hops; FeatureLongRedirects:
//	                       11–13)
//	/x/loop/K/a /x/loop/K/b   302 to each other (the second with Location "a")
//	/missing/K.html        404 (every unknown path is 404)
//	/x/gone/K /x/error/K   410, 500
//	/x/busy/K              503 + Retry-After: 1 for the first Config.BusyCount requests
//	/x/hang/K /x/reset/K   no answer for Config.HangTime; connection reset (RST)
//	/x/plain/K /x/bin/K    HTML as text/plain; bytes as text/html
//	/x/cs/gbk|big5|sjis/header|meta/K   legacy charsets
//	/x/malformed/K         3000 nested divs (beyond html.Parse's 512 open elements: a
//	                       tolerant parser needs a tokenizer), unclosed tags, bad UTF-8
//	/x/large/K /x/bomb/K   Config.LargeSize bytes; a multi-member gzip of BombSize zeros
//	/x/len-huge/K          (Config.LyingLength, never linked) Content-Length: 10^15, a
//	                       short body, then the connection closes
//	/x/len-stall/K         (Config.LyingLength, never linked) Content-Length: 4×10^9, no
//	                       body for Config.HangTime, then the connection closes
//	/x/len-cap/K           the same with Content-Length: 2^30 (1 GiB)
//	/print/s/N/a/M.html    the article's text without links
//	/trap/1/2/…/n/         links to n+1/ forever
//	/calendar/YYYY/MM/     links to the next and previous months (FeatureNoise)
//	PATH;jsessionid=HEX, PATH?sid=HEX, PATH?utm_source=…   (FeatureNoise) the page at PATH
//	/beacon?p=K            a tracking pixel (FeatureNoise)
//
// Config.ExtraLinks (default 0) adds that many links to every article, in its link-farm
// table, each to a page of a host both drawn uniformly: on a large web most are new to a
// crawler, which is how the large-frontier benchmark reaches 10 million discovered URLs.
//
// Queries never change a page: /s/1/?q=1 is /s/1/. Every HTML page links to its
// stylesheet, script and images; nav bars (<div class="nav">), footers (<div
// class="footer"><p>) and link farms (<table class="links"><td>) contain almost only link
// text (ratio above 1/2), content paragraphs (<div class="content"><p>) well under 1/4.
//
// Config.PageModel (pagemodel.go) makes pages the way real sites are made: on every page
// of a host the same menu (<nav><ul><li>), sidebar (<aside>), footer (<footer>) and five
// noise kinds the crawler's built-in noise samples do not describe — a share widget
// (/share/S?u=PATH), a language switcher (/de/PATH …), print/export links
// (/export/print/PATH), a tag cloud (/tag/WORD/) and a "sponsored" box (/ads/click?id=K,
// one of three variants per host); on half the hosts these are <div>s only. Content that
// is link-dense but unique to its page: the index's table of contents (each section and
// its first articles) and each section's (its articles) replace their link paragraphs;
// articles get an editorial paragraph with a link every word or two. Truth.LinkBlocks
// labels every <a> link with its block, noise or not, and held out or not.
//
// # Pages that change, sitemaps
//
// Config.ChangeDay makes the pages of every host's hierarchy change as Poisson processes
// at rates drawn from Cho and Garcia-Molina's measurements (ChangeClasses; `websim
// changes` prints them), with ETag, Last-Modified, 304 answers, pages that disappear and
// bad servers' validators (Config.ValidatorFaults); ChangeHistory, VersionAt and
// ChangesBetween give the exact history (change.go). Config.Sitemaps serves sitemaps with
// lastmod and changefreq, indexes, gzip variants, cross-submitted, out-of-place and huge
// sitemaps (sitemap.go). Both are off by default: the static web is unchanged.
//
// # Ground-truth conventions
//
// Web.Truth computes a crawl from the model (no HTTP), a layered breadth-first search
// whose rules a crawler must follow to match it:
//
//   - Seeds have depth 0; links found on a page of depth d have depth d+1; a URL keeps the
//     smallest depth it is found at (a crawl that finishes depth d, redirects included,
//     before depth d+1 gets exactly this). URLs with depth ≤ MaxDepth are fetched
//     (MaxDepth < 0: no limit; Truth fails with ErrUnbounded past MaxURLs).
//   - A redirect's target is a new URL, queued with the source's depth and the source's
//     hop count + 1; a target beyond MaxRedirects (5) hops is not fetched and the last
//     fetched URL of the chain ends "too-many-redirects". Targets already queued are not
//     queued again (so a loop ends with every URL fetched once).
//   - Links followed: <a href>, <area href>, <link href> (any rel), <iframe src>,
//     <frame src>, <img src>, <script src>, <meta http-equiv=refresh> URL, resolved against
//     <base href> when present, else against the page URL. javascript:, mailto: and data:
//     are ignored; rel=nofollow links are not followed unless FollowNofollow.
//   - Only answers with status 200 and a text/html Content-Type are parsed (a page served
//     as text/plain is not, even if its body is HTML; error pages are not). Charset pages
//     are parsed (their links are ASCII).
//   - Paths ending in DefaultSuffixes (.png .jpg .jpeg .gif .css .js .pdf .zip .ico .svg
//     .woff .mp4, case-insensitive, query excluded) are not fetched.
//   - Canonical URLs (Canonical): lower-case scheme and host, no default port (websim's
//     port stays), dot segments removed, empty path "/", query kept as is, no fragment.
//   - Scope: host = a seed's host:port; domain = a seed's eTLD+1; seeds = a seed's host
//     name; any = everything.
//   - robots.txt: the groups whose user-agent equals the agent token (case-insensitive)
//     are merged, else the "*" groups; the longest matching rule wins, Allow wins ties;
//     "*" and "$" wildcards; only the first 500 KiB (RobotsMaxBytes) are parsed; 4xx
//     allows everything; 5xx disallows everything; redirects are followed up to five hops.
//     robots.txt requests are not part of MustFetch.
//   - Outcomes (Truth.Final): the status code, "too-many-redirects", "timeout" for hang
//     pages (assuming the crawler's time-out is below Config.HangTime), "reset"; busy pages
//     end "200" after their 503s.
//
// # Access log
//
// Every request is recorded (Web.Log): arrival and end times, host, path and query,
// method, user agent, status, body bytes and the number of requests to the same host in
// flight at arrival, with helpers for politeness (MaxOpen, MinGap) and duplicates
// (Duplicates, Retries).
package websim
