package denoise

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// Kind says which part of a URL a noise sample is compared with.
type Kind uint8

// The kinds of noise samples.
const (
	// Whole compares the sample with a URL's whole skeleton (path and
	// query): it catches URLs shaped like an example noise URL.
	Whole Kind = iota
	// Segment compares the sample with each path segment ("calendar").
	Segment
	// Param compares the sample with each path parameter's key
	// (";jsessionid=…" has key "jsessionid").
	Param
	// Query compares the sample with each query key ("utm_source").
	Query
)

func (k Kind) String() string {
	switch k {
	case Segment:
		return "segment"
	case Param:
		return "param"
	case Query:
		return "query"
	}
	return "url"
}

// Sample is one known noise sample (SPEC §2 S313): a masked text and the
// part of a URL it is compared with.
type Sample struct {
	Kind Kind
	// Text is the skeleton (Whole) or the masked component.
	Text string
	// Source is the line the sample was read from, for reports.
	Source string
}

// BuiltinSamples returns the noise samples always used: session ids,
// tracking parameters, calendars and beacons. The caller owns the slice.
func BuiltinSamples() []Sample {
	lines := []string{
		// session ids
		";jsessionid=", ";phpsessid=", "?jsessionid=", "?phpsessid=", "?sessionid=", "?sessid=",
		"?sid=", "?aspsessionid=", "?cfid=", "?cftoken=",
		// tracking parameters
		"?utm_source=", "?utm_medium=", "?utm_campaign=", "?utm_term=", "?utm_content=",
		"?gclid=", "?fbclid=", "?mc_cid=", "?mc_eid=",
		// calendars and beacons
		"/calendar/", "/beacon/", "/pixel/",
	}
	out := make([]Sample, 0, len(lines))
	for _, l := range lines {
		s, err := ParseSample(l)
		if err != nil {
			panic("denoise: bad built-in sample " + l) // a programming error, caught by the tests
		}
		out = append(out, s)
	}
	return out
}

// ParseSample reads one noise sample written as
//
//	http://host/path?query   a whole example URL (compared with whole URLs)
//	/path/with/segments?q=1  the same, without scheme and host
//	/calendar/               one path segment (compared with each segment)
//	;jsessionid=             a path parameter key
//	?sid=  or  &sid          a query key
//
// Digits and long hex runs are masked as in Skeleton, so "/calendar/2024/"
// is the whole-URL sample "/calendar/#/". It returns an error saying which
// forms are accepted for anything else.
func ParseSample(line string) (Sample, error) {
	s := strings.TrimSpace(line)
	bad := func(why string) (Sample, error) {
		return Sample{}, fmt.Errorf("cannot read noise sample %q: %s: write a URL (http://host/path?k=v), a path segment (/calendar/), a path parameter (;jsessionid=) or a query key (?sid=)", line, why)
	}
	if s == "" {
		return bad("empty")
	}
	switch s[0] {
	case ';', '?', '&':
		key, _, _ := strings.Cut(s[1:], "=")
		key = mask(strings.ToLower(key))
		if key == "" || strings.ContainsAny(key, "/?&;") {
			return bad("no key after " + s[:1])
		}
		k := Query
		if s[0] == ';' {
			k = Param
		}
		return Sample{Kind: k, Text: key, Source: s}, nil
	case '/':
		trim := strings.Trim(s, "/")
		if trim != "" && !strings.ContainsAny(trim, "/?;&=") {
			return Sample{Kind: Segment, Text: mask(strings.ToLower(trim)), Source: s}, nil
		}
		u, err := url.Parse("http://sample.invalid" + s)
		if err != nil {
			return bad(err.Error())
		}
		return Sample{Kind: Whole, Text: Skeleton(u), Source: s}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad(err.Error())
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("not an http(s) URL")
	}
	return Sample{Kind: Whole, Text: Skeleton(u), Source: s}, nil
}

// ParseSamples reads one sample per line (ParseSample); blank lines and
// lines starting with "#" are skipped. Errors name the line number.
func ParseSamples(r io.Reader) ([]Sample, error) {
	var out []Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := ParseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read noise samples: %w", err)
	}
	return out, nil
}

// LoadSamples reads a noise-sample file (ParseSamples).
func LoadSamples(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open noise samples: %w", err)
	}
	defer f.Close()
	s, err := ParseSamples(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
