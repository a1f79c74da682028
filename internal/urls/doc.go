// Package urls parses and canonicalises crawlable URLs, converts them to SURT
// form, derives politeness and scope keys from them, and provides the
// pluggable URL filter chain of SPEC §3.
//
// Every URL that enters the crawler goes through a [Normalizer] (or the
// package-level [Parse] and [Resolve], which use the zero Normalizer), so that
// two spellings of the same resource compare equal as strings:
//
//	u, err := urls.Parse("HTTP://WWW.Example.COM:80/a/./b/../c?x=1#top")
//	// u.String() == "http://www.example.com/a/c?x=1"
//
// The canonical form is documented on [Normalizer]. [SURT] turns a URL into
// the Sort-friendly URI Reordering Transform of SPEC §4, and [Chain] runs a
// sequence of [Filter]s (suffix, host, scope, depth, length, and any
// [FilterFunc], such as the engine's robots.txt filter) over a URL.
package urls
