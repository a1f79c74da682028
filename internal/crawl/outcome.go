package crawl

import (
	"sort"
	"strconv"
)

// Outcome classes recorded for every URL the crawl finished with. The
// HTTP-status classes are the status code itself ("200", "404", "503");
// the others are these constants.
const (
	OutcomeRobots            = "robots"             // disallowed by robots.txt, not fetched
	OutcomeRobotsUnavailable = "robots-unavailable" // robots.txt answered 5xx or was unreachable after all retries
	OutcomeTooManyRedirects  = "too-many-redirects" // a redirect beyond MaxRedirects hops
	OutcomeTimeout           = "timeout"
	OutcomeReset             = "reset"
	OutcomeDNS               = "dns"
	OutcomeRefused           = "refused"
	OutcomeTLS               = "tls"               // TLS handshake or certificate failure
	OutcomeUnreachable       = "unreachable"       // no route to the host or network
	OutcomeForbiddenAddress  = "forbidden-address" // private/loopback target without --allow-private
	OutcomeError             = "error"             // any other failure; the record says which
)

// NotModifiedStatus is the HTTP status of a revisit answered "not
// modified" (304): its record (outcome "304") stores no page, and readers
// of records.jsonl keep the URL's previous record, whose copy stands.
const NotModifiedStatus = 304

// Table rows of SPEC §3's per-node HTTP result table.
const (
	Row200      = "200"
	Row404      = "404"
	Row30x      = "30x"
	RowTooMany  = "too many redirects"
	RowTimeout  = "time-out"
	RowOther    = "other"
	RowRobots   = "robots.txt"
	RowNotFetch = "not fetched"
)

// TableRows lists the summary rows in display order.
var TableRows = []string{Row200, Row404, Row30x, RowTooMany, RowTimeout, RowOther, RowRobots}

// Row maps an outcome class to its SPEC §3 summary row.
func Row(outcome string) string {
	switch outcome {
	case OutcomeTooManyRedirects:
		return RowTooMany
	case OutcomeTimeout:
		return RowTimeout
	case OutcomeRobots, OutcomeRobotsUnavailable:
		return RowRobots
	case OutcomeSitemap: // a sitemap read (sitemaps.go): a 2xx answer
		return Row200
	case OutcomeNoSitemap:
		return Row404
	}
	code, err := strconv.Atoi(outcome)
	if err != nil {
		return RowOther
	}
	switch {
	case code >= 200 && code < 300:
		return Row200
	case code == 404:
		return Row404
	case code >= 300 && code < 400:
		return Row30x
	}
	return RowOther
}

// HostCount is a host and a number of pages.
type HostCount struct {
	Host  string
	Pages int64
}

// TopHosts returns the n hosts with the most pages, ties by name.
func TopHosts(m map[string]int64, n int) []HostCount {
	out := make([]HostCount, 0, len(m))
	for h, c := range m {
		out = append(out, HostCount{h, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pages != out[j].Pages {
			return out[i].Pages > out[j].Pages
		}
		return out[i].Host < out[j].Host
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
